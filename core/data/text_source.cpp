#include "core/data/text_source.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/data/mapped_file.h"

namespace trident {

namespace {

class TextSource final : public DocumentSource {
 public:
  TextSource(const std::filesystem::path& path, const std::string& separator) : file_(path), separator_(separator) {
    std::string_view text(reinterpret_cast<const char*>(file_.bytes().data()), file_.bytes().size());
    if (separator.empty()) {
      if (!text.empty()) documents_.push_back({0, static_cast<int64_t>(text.size())});
      return;
    }
    std::size_t begin = 0;
    while (begin <= text.size()) {
      std::size_t end = std::min(text.find(separator, begin), text.size());
      if (end > begin) documents_.push_back({static_cast<int64_t>(begin), static_cast<int64_t>(end - begin)});
      begin = end + separator.size();
    }
  }

  int64_t num_documents() const override { return static_cast<int64_t>(documents_.size()); }
  int64_t document_length(int64_t doc) const override { return documents_.at(doc).length; }

  std::string describe() const override {
    return fmt::format("text file '{}' ({} documents separated by {:?})", file_.path().string(), documents_.size(),
                       separator_);
  }

 private:
  struct Document {
    int64_t offset;
    int64_t length;
  };

  void read_tokens(int64_t doc, int64_t start, std::span<int32_t> out) const override {
    std::vector<std::byte> bytes(out.size());
    file_.read(documents_[doc].offset + start, bytes);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(bytes[i]);
  }

  std::optional<std::string> changed() const override { return file_.changed(); }

  MappedFile file_;
  std::string separator_;
  std::vector<Document> documents_;
};

}  // namespace

std::unique_ptr<DocumentSource> open_text_documents(const std::filesystem::path& path, const std::string& separator) {
  return std::make_unique<TextSource>(path, separator);
}

std::string decode_bytes(std::span<const int32_t> tokens) {
  std::string text;
  text.reserve(tokens.size());
  for (int32_t id : tokens) {
    if (id >= 0 && id < 256)
      text += static_cast<char>(id);
    else
      text += "\xEF\xBF\xBD";
  }
  return text;
}

}  // namespace trident
