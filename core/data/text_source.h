#pragma once
// Byte-level text: each byte is one token (ids 0..255, so model.vocab_size must be at least 256), and the documents
// are the non-empty pieces of the file between occurrences of a separator string ("\n\n" for paragraphs,
// "\n%\n" for fortune files; "" keeps the whole file as one document).
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "core/data/document_source.h"

namespace trident {

std::unique_ptr<DocumentSource> open_text_documents(const std::filesystem::path& path, const std::string& separator);

// The text of byte-level tokens, for printing samples; an id outside 0..255 (possible when the vocabulary is
// larger) prints as U+FFFD.
std::string decode_bytes(std::span<const int32_t> tokens);

}  // namespace trident
