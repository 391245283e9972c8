#pragma once
// A flat file of little-endian token ids with no header (nanoGPT's train.bin style), uint16 or uint32. Documents are
// the non-empty runs between occurrences of `eot_token`, which belongs to no document; eot_token = -1 makes the whole
// file one document. The file is memory-mapped and scanned once at open, which also validates every id.
#include <cstdint>
#include <filesystem>
#include <memory>

#include "core/data/document_source.h"
#include "core/data/token_types.h"

namespace trident {

// `type` is TokenType::uint16 or TokenType::uint32. Throws ConfigError when an id is >= vocab_size or eot_token
// cannot occur (>= vocab_size or beyond the type), and RuntimeError when the size is not a whole number of ids.
std::unique_ptr<DocumentSource> open_token_file(const std::filesystem::path& path, TokenType type, int64_t eot_token,
                                                int64_t vocab_size);

}  // namespace trident
