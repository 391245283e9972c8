#!/usr/bin/env python3
"""Megatron-LM's MMapIndexedDataset files, written and read the way megatron/core/datasets/indexed_dataset.py does
(IndexedDatasetBuilder + _IndexWriter, _IndexReader), with numpy only: an implementation of the format independent of
Trident's, for tests/core/data/test_indexed.cpp.

  megatron_layout.py write PREFIX DTYPE sentences   one sequence per sentence (preprocess_data.py --split-sentences)
  megatron_layout.py write PREFIX DTYPE documents   one sequence per document
  megatron_layout.py check PREFIX DTYPE             reads PREFIX and checks it holds DOCUMENTS
"""
import struct
import sys

import numpy

_INDEX_HEADER = b"MMIDIDX\x00\x00"
CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6, "float32": 7, "uint16": 8}

# Each document is a list of sequences (sentences). test_data_indexed.cpp expects their concatenations.
DOCUMENTS = [[[1, 2, 3], [4, 5]], [[6]], [], [[], [7, 8]], [[9, 10, 11, 12]], [[0, 127, 13]]]


def write(prefix, name, split_sentences):
    dtype = getattr(numpy, name)
    sequence_lengths, document_indices = [], [0]
    with open(prefix + ".bin", "wb") as data_file:
        for document in DOCUMENTS:
            sequences = document if split_sentences else [sum(document, [])]
            for sequence in sequences:  # IndexedDatasetBuilder.add_item
                data_file.write(numpy.array(sequence, dtype=dtype).tobytes(order="C"))
                sequence_lengths.append(len(sequence))
            document_indices.append(len(sequence_lengths))  # IndexedDatasetBuilder.end_document

    itemsize = numpy.dtype(dtype).itemsize
    sequence_pointers, pointer = [], 0
    for length in sequence_lengths:  # _IndexWriter._sequence_pointers
        sequence_pointers.append(pointer)
        pointer += length * itemsize

    with open(prefix + ".idx", "wb") as idx:  # _IndexWriter.__enter__ and write
        idx.write(_INDEX_HEADER)
        idx.write(struct.pack("<Q", 1))
        idx.write(struct.pack("<B", CODES[name]))
        idx.write(struct.pack("<Q", len(sequence_lengths)))
        idx.write(struct.pack("<Q", len(document_indices)))
        idx.write(numpy.array(sequence_lengths, dtype=numpy.int32).tobytes(order="C"))
        idx.write(numpy.array(sequence_pointers, dtype=numpy.int64).tobytes(order="C"))
        idx.write(numpy.array(document_indices, dtype=numpy.int64).tobytes(order="C"))


def check(prefix, name):
    with open(prefix + ".idx", "rb") as stream:  # _IndexReader.__init__
        assert stream.read(9) == _INDEX_HEADER, "bad header"
        assert struct.unpack("<Q", stream.read(8))[0] == 1, "bad version"
        code = struct.unpack("<B", stream.read(1))[0]
        assert code == CODES[name], f"dtype code {code}, expected {CODES[name]}"
        sequence_count = struct.unpack("<Q", stream.read(8))[0]
        document_count = struct.unpack("<Q", stream.read(8))[0]
        offset = stream.tell()
    buffer = numpy.memmap(prefix + ".idx", mode="r", order="C")
    lengths = numpy.frombuffer(buffer, dtype=numpy.int32, count=sequence_count, offset=offset)
    offset += lengths.nbytes
    pointers = numpy.frombuffer(buffer, dtype=numpy.int64, count=sequence_count, offset=offset)
    offset += pointers.nbytes
    document_indices = numpy.frombuffer(buffer, dtype=numpy.int64, count=document_count, offset=offset)
    assert offset + document_indices.nbytes == buffer.size, "trailing bytes in the .idx"

    data = numpy.memmap(prefix + ".bin", mode="r", order="C")
    documents = []
    for d in range(document_count - 1):
        tokens = []
        for s in range(document_indices[d], document_indices[d + 1]):
            tokens += numpy.frombuffer(data, dtype=getattr(numpy, name), count=lengths[s], offset=pointers[s]).tolist()
        documents.append(tokens)
    expected = [sum(document, []) for document in DOCUMENTS]
    assert documents == expected, f"read {documents}, expected {expected}"


if __name__ == "__main__":
    command, prefix, name = sys.argv[1:4]
    if command == "write":
        write(prefix, name, sys.argv[4] == "sentences")
    else:
        check(prefix, name)
