#include "core/data/token_file_source.h"

#include <limits>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "kernels/common/error.h"
#include "core/data/mapped_file.h"

namespace trident {

namespace {

// llm.c's token files start with a 256 x int32 header: this magic, then version 1 or 2. Read as a flat file, the
// header would silently become 512 or 1024 tokens of garbage.
constexpr int32_t kLlmcMagic = 20240520;

bool has_llmc_header(std::span<const std::byte> bytes) {
  if (bytes.size() < 8 || load_le<int32_t>(bytes.data()) != kLlmcMagic) return false;
  const auto version = load_le<int32_t>(bytes.data() + 4);
  return version == 1 || version == 2;
}

class TokenFileSource final : public DocumentSource {
 public:
  TokenFileSource(const std::filesystem::path& path, TokenType type, int64_t eot_token, int64_t vocab_size)
      : file_(path), type_(type), eot_token_(eot_token) {
    const std::string name = path.string();
    const int64_t width = token_type_size(type);
    if (file_.size() % width != 0)
      throw_runtime_error("'{}' is {} bytes, not a whole number of {}-byte {} token ids (data.token_dtype)", name,
                          file_.size(), width, token_type_name(type));
    if (has_llmc_header(file_.bytes()))
      throw_runtime_error("'{}' starts with llm.c's header (magic {}); Trident reads headerless token files: drop "
                          "its first 1024 bytes",
                          name, kLlmcMagic);
    split_and_validate(name, file_.size() / width, vocab_size);
  }

  int64_t num_documents() const override { return static_cast<int64_t>(documents_.size()); }
  int64_t document_length(int64_t doc) const override { return documents_.at(doc).length; }

  std::string describe() const override {
    std::string split = eot_token_ < 0 ? "one document" : fmt::format("split at id {}", eot_token_);
    return fmt::format("{} token file '{}' ({} documents, {})", token_type_name(type_), file_.path().string(),
                       documents_.size(), split);
  }

 private:
  struct Document {
    int64_t first;  // index of its first token in the file
    int64_t length;
  };

  // One pass over the ids: cut documents at eot_token and reject any id the model cannot embed.
  void split_and_validate(const std::string& name, int64_t count, int64_t vocab_size) {
    const std::byte* ids = file_.bytes().data();
    const int64_t width = token_type_size(type_);
    int64_t begin = 0;
    auto close_document = [&](int64_t end) {
      if (end > begin) documents_.push_back({begin, end - begin});
    };
    visit_token_type(type_, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < count; ++i) {
        auto id = static_cast<int64_t>(load_le<T>(ids + i * width));
        if (id == eot_token_) {
          close_document(i);
          begin = i + 1;
        } else if (id >= vocab_size) {
          throw_config_error("token id {} at token {} (byte {}) of '{}' is >= model.vocab_size = {}", id, i,
                             i * width, name, vocab_size);
        }
      }
    });
    close_document(count);
  }

  void read_tokens(int64_t doc, int64_t start, std::span<int32_t> out) const override {
    const int64_t width = token_type_size(type_);
    std::vector<std::byte> bytes(out.size() * static_cast<std::size_t>(width));
    file_.read((documents_[doc].first + start) * width, bytes);
    decode_tokens(type_, bytes.data(), static_cast<int64_t>(out.size()), out.data());
  }

  std::optional<std::string> changed() const override { return file_.changed(); }

  MappedFile file_;
  TokenType type_;
  int64_t eot_token_;
  std::vector<Document> documents_;
};

}  // namespace

std::unique_ptr<DocumentSource> open_token_file(const std::filesystem::path& path, TokenType type, int64_t eot_token,
                                                int64_t vocab_size) {
  TRIDENT_CHECK(type == TokenType::uint16 || type == TokenType::uint32, "flat token files are unsigned");
  const int64_t type_max = type == TokenType::uint16 ? std::numeric_limits<uint16_t>::max()
                                                     : std::numeric_limits<uint32_t>::max();
  if (eot_token >= vocab_size)
    throw_config_error("data.eot_token = {} must be < model.vocab_size = {}", eot_token, vocab_size);
  if (eot_token > type_max)
    throw_config_error("data.eot_token = {} cannot occur in a {} token file (ids 0 to {}; data.token_dtype)",
                       eot_token, token_type_name(type), type_max);
  return std::make_unique<TokenFileSource>(path, type, eot_token, vocab_size);
}

}  // namespace trident
