#!/usr/bin/env python3
"""Writes the binary seeds of tests/fuzz/ (safetensors, indexed_dataset, trainer_state) with the standard library
only, independently of Trident's writers. Seeds named ok_* are well-formed and must be accepted, bad_* must be
refused (tests/fuzz/test_fuzz_corpus.cpp checks both). The ok_trident_* seeds are files `trident train` wrote.

  tests/fuzz/make_seeds.py    (rewrites the generated seeds in place)
"""
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def put(folder, name, data):
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: [(name, dtype, shape, bytes)] laid out back to back in this order."""
    header, offset, data = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def safetensors_seeds():
    put("safetensors", "ok_f32_bf16_i64.safetensors", safetensors([
        ("a.weight", "F32", [2, 2], f32(1, 2, 3, 4)),
        ("b", "BF16", [3], b"\x80\x3f\x00\x40\x40\x40"),
        ("step", "I64", [], struct.pack("<q", 7)),
    ], metadata={"format": "pt", "trident_step": "7"}))
    put("safetensors", "ok_empty_tensor.safetensors", safetensors([("e", "F32", [0, 3], b"")]))
    put("safetensors", "ok_no_tensors.safetensors", safetensors([]))
    put("safetensors", "ok_unpadded_header.safetensors", safetensors([("x", "U8", [5], b"hello")], pad=False))
    good = safetensors([("x", "F32", [2], f32(1, 2))])
    put("safetensors", "bad_truncated.safetensors", good[:-3])
    put("safetensors", "bad_shape_vs_bytes.safetensors", safetensors([("x", "F32", [3], f32(1, 2))]))
    overlap = b'{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}'
    put("safetensors", "bad_overlap.safetensors", struct.pack("<Q", len(overlap)) + overlap + b"abc")
    put("safetensors", "bad_header_too_long.safetensors", struct.pack("<Q", 1 << 62) + b"{}")


# Megatron's MMIDIDX index: magic, version 1, dtype code, S, D, i32 lengths, i64 byte pointers, i64 document indices.
CODES = {"uint8": (1, "B"), "int8": (2, "b"), "int16": (3, "h"), "int32": (4, "i"), "int64": (5, "q"), "uint16": (8, "H")}


def indexed(documents, dtype, split_sentences=False):
    """documents: lists of sequences (lists of ids). Returns the fuzz input: u32 .idx length, .idx, .bin."""
    code, fmt = CODES[dtype]
    size = struct.calcsize(fmt)
    lengths, pointers, doc_index, data = [], [], [0], b""
    for document in documents:
        for sequence in (document if split_sentences else [sum(document, [])]):
            pointers.append(len(data))
            lengths.append(len(sequence))
            data += struct.pack(f"<{len(sequence)}{fmt}", *sequence)
        doc_index.append(len(lengths))
    idx = b"MMIDIDX\x00\x00" + struct.pack("<QB", 1, code) + struct.pack("<QQ", len(lengths), len(doc_index))
    idx += struct.pack(f"<{len(lengths)}i", *lengths) + struct.pack(f"<{len(pointers)}q", *pointers)
    idx += struct.pack(f"<{len(doc_index)}q", *doc_index)
    assert len(data) == sum(lengths) * size
    return struct.pack("<I", len(idx)) + idx + data


def indexed_seeds():
    docs = [[[1, 2, 3], [4, 5]], [[6]], [], [[], [7, 8]], [[9, 10, 11, 12]], [[0, 127, 13]]]
    put("indexed_dataset", "ok_uint16_documents.bin", indexed(docs, "uint16"))
    put("indexed_dataset", "ok_int32_sentences.bin", indexed(docs, "int32", split_sentences=True))
    put("indexed_dataset", "ok_uint8_one_document.bin", indexed([[[5, 4, 3, 2, 1]]], "uint8"))
    put("indexed_dataset", "ok_int64_empty.bin", indexed([], "int64"))
    # uint16 ids under a uint8 index: the .bin is twice the size the index describes.
    wide = indexed(docs, "uint16")
    put("indexed_dataset", "bad_uint16_bin_under_uint8_idx.bin", wide[:4 + 17] + b"\x01" + wide[4 + 18:])
    put("indexed_dataset", "bad_bin_truncated.bin", wide[:-1])
    put("indexed_dataset", "bad_id_beyond_vocab.bin", indexed([[[1 << 21]]], "int32"))


def trainer_state(step, with_crc=True, **changes):
    state = {"format": 1, "step": step, "next_step": step, "seed": 7, "world_size": 1,
             "config": "run:\n  name: seed\n",
             "files": {"model.safetensors": {"bytes": 6032, "crc32": "806ce739"},
                       "optimizer.safetensors": {"bytes": 9400, "crc32": "27f0c953"}},
             "created": "2026-11-25T07:57:09Z"}
    state.update(changes)
    if with_crc:  # crc32 of the compact JSON of every other key, in order (nlohmann's dump())
        text = json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode()
        state["crc32"] = "%08x" % zlib.crc32(text)
    return json.dumps(state, indent=2).encode()


def trainer_state_seeds():
    put("trainer_state", "ok_with_crc.json", trainer_state(10))
    put("trainer_state", "ok_without_crc.json", trainer_state(10, with_crc=False))
    put("trainer_state", "ok_with_selector.json", trainer_state(10, selector={"mode": "measured", "corrections": {}}))
    edited = trainer_state(10).replace(b'"step": 10', b'"step": 11')
    put("trainer_state", "bad_edited_step.json", edited)
    put("trainer_state", "bad_step_not_the_directory.json", trainer_state(12))
    put("trainer_state", "bad_format_2.json", trainer_state(10, format=2))
    put("trainer_state", "bad_not_an_object.json", b"[1, 2, 3]")
    # a sharded optimizer's checkpoint: a file a range, listed in optimizer_shards (parallel.zero.stage: 1)
    shards = [{"file": f"optimizer-{i:05d}-of-00002.safetensors", "offset": 96 * i, "numel": 96} for i in range(2)]
    files = {"model.safetensors": {"bytes": 6032, "crc32": "806ce739"}}
    files.update({s["file"]: {"bytes": 1000, "crc32": "0000000%d" % i} for i, s in enumerate(shards)})
    put("trainer_state", "ok_with_optimizer_shards.json", trainer_state(10, files=files, optimizer_shards=shards))
    put("trainer_state", "bad_shard_outside_the_directory.json",
        trainer_state(10, files=files, optimizer_shards=[dict(shards[0], file="../optimizer-x.safetensors")]))


if __name__ == "__main__":
    safetensors_seeds()
    indexed_seeds()
    trainer_state_seeds()
