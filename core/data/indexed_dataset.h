#pragma once
// Megatron-LM's MMapIndexedDataset (megatron/core/datasets/indexed_dataset.py): PREFIX.bin holds the token ids,
// PREFIX.idx says where each sequence is and which sequences form a document. Both are little-endian and packed:
//
//   .idx  offset  type       field
//         0       char[9]    magic "MMIDIDX\0\0"
//         9       u64        version, 1
//         17      u8         dtype code: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16
//         18      u64        S, the number of sequences
//         26      u64        D, the number of document indices (documents + 1)
//         34      i32[S]     sequence lengths, in tokens
//                 i64[S]     sequence pointers, byte offsets into .bin
//                 i64[D]     document indices: document d is sequences [idx[d], idx[d+1]); idx[0] = 0, idx[D-1] = S
//   .bin  the ids of each sequence, at its pointer
//
// A Megatron "sequence" is what its preprocessing added as one item (a whole document, or one sentence with
// --split-sentences); Trident's document is the concatenation of a Megatron document's sequences. Multimodal
// datasets (an extra i8[S] of sequence modes) and float dtypes are rejected.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/data/document_source.h"
#include "core/data/token_types.h"

namespace trident {

// Maps both files and validates everything before trusting a byte: header, sizes, pointers and lengths against the
// .bin, document indices, and every id against vocab_size. A malformed file is a RuntimeError naming the file and
// what is wrong; an id >= vocab_size is a ConfigError naming model.vocab_size.
std::unique_ptr<DocumentSource> open_indexed_dataset(const std::filesystem::path& prefix, int64_t vocab_size);

// Writes PREFIX.bin and PREFIX.idx atomically, one sequence per document, byte for byte as Megatron's
// IndexedDatasetBuilder.add_document would. `type` must be one of Megatron's integer dtypes (not uint32), and every
// id must fit it.
void write_indexed_dataset(const std::filesystem::path& prefix, const std::vector<std::vector<int32_t>>& documents,
                           TokenType type);

}  // namespace trident
