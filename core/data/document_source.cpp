#include "core/data/document_source.h"

#include <filesystem>

#include "kernels/common/error.h"
#include "core/data/indexed_dataset.h"
#include "core/data/synthetic_source.h"
#include "core/data/text_source.h"
#include "core/data/token_file_source.h"

namespace trident {

namespace fs = std::filesystem;

void DocumentSource::read(int64_t doc, int64_t start, std::span<int32_t> out) const {
  TRIDENT_CHECK(doc >= 0 && doc < num_documents() && start >= 0 &&
                    start + static_cast<int64_t>(out.size()) <= document_length(doc),
                "tokens [{}, {}) of document {} in {}", start, start + static_cast<int64_t>(out.size()), doc,
                describe());
  read_tokens(doc, start, out);
}

namespace {

// A path that does not exist, or is no regular file, is a mistake in the config, not a failure while running: said
// before anything opens it (opening a FIFO would wait for a writer for ever).
void require_file(const fs::path& path, const DataConfig& data) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found)
    throw_config_error("data.path: '{}' not found (data.kind = {}{})", path.string(), data.kind,
                       data.kind == "indexed" ? " reads PREFIX.bin and PREFIX.idx" : "");
  if (error) throw_config_error("data.path: cannot read '{}': {}", path.string(), error.message());
  if (!fs::is_regular_file(status))
    throw_config_error("data.path: '{}' is {}, not a regular file (data.kind = {} reads a file's bytes)", path.string(),
                       fs::is_directory(status) ? "a directory" : "a FIFO, socket or device", data.kind);
}

}  // namespace

std::unique_ptr<DocumentSource> open_documents(const Config& config) {
  const DataConfig& data = config.data;
  const int64_t vocab_size = config.model.vocab_size;
  if (data.kind == "synthetic") {
    return make_synthetic_documents(length_preset(data.preset), data.synthetic_documents, data.synthetic_max_length,
                                    vocab_size, static_cast<uint64_t>(config.run.seed),
                                    data.synthetic_length_scale);
  }
  std::unique_ptr<DocumentSource> documents;
  if (data.kind == "text") {
    if (vocab_size < 256)
      throw_config_error("data.kind = text reads bytes (token ids 0 to 255), so model.vocab_size must be >= 256, got "
                         "model.vocab_size = {}",
                         vocab_size);
    require_file(data.path, data);
    documents = open_text_documents(data.path, data.separator);
  } else if (data.kind == "tokens") {
    require_file(data.path, data);
    documents = open_token_file(data.path, data.token_dtype == "uint32" ? TokenType::uint32 : TokenType::uint16,
                                data.eot_token, vocab_size);
  } else {
    TRIDENT_CHECK(data.kind == "indexed", "data.kind '{}' has no reader", data.kind);
    require_file(data.path + ".idx", data);
    require_file(data.path + ".bin", data);
    documents = open_indexed_dataset(data.path, vocab_size);
  }
  // Everything downstream draws documents by index: a corpus without one is the file's fault, said here.
  if (documents->num_documents() == 0)
    throw_config_error("data.path = '{}' (data.kind = {}): the file holds no document (it is empty, or holds only "
                       "separators)", data.path, data.kind);
  return documents;
}

}  // namespace trident
