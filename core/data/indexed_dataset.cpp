#include "core/data/indexed_dataset.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/common/atomic_file.h"
#include "kernels/common/error.h"
#include "core/data/mapped_file.h"

namespace trident {

namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr uint64_t kVersion = 1;
constexpr int64_t kHeaderBytes = 34;

// Megatron's DType codes for integer types (6 float64 and 7 float32 are not token ids; there is no uint32).
constexpr std::pair<uint8_t, TokenType> kCodes[] = {
    {1, TokenType::uint8}, {2, TokenType::int8},  {3, TokenType::int16},
    {4, TokenType::int32}, {5, TokenType::int64}, {8, TokenType::uint16},
};

std::optional<TokenType> type_of_code(uint8_t code) {
  for (auto [c, type] : kCodes)
    if (c == code) return type;
  return std::nullopt;
}

template <class... Args>
[[noreturn]] void malformed(const std::string& what, fmt::format_string<Args...> f, Args&&... args) {
  throw RuntimeError(fmt::format("{}: {}", what, fmt::format(f, std::forward<Args>(args)...)));
}

class IndexedDataset final : public DocumentSource {
 public:
  IndexedDataset(const std::filesystem::path& prefix, int64_t vocab_size)
      : prefix_(prefix.string()), idx_(prefix_ + ".idx"), bin_(prefix_ + ".bin") {
    read_header();
    check_document_indices();
    check_sequences(vocab_size);
  }

  int64_t num_documents() const override { return static_cast<int64_t>(document_lengths_.size()); }
  int64_t document_length(int64_t doc) const override { return document_lengths_.at(doc); }

  // Both files are checked; tokens are read from the .bin with pread, while the .idx (small beside it) stays
  // mapped, so only a .idx truncated between two checks can still fault.
  std::optional<std::string> changed() const override {
    if (std::optional<std::string> idx = idx_.changed()) return idx;
    return bin_.changed();
  }

  std::string describe() const override {
    return fmt::format("Megatron indexed dataset '{}' ({} documents, {} sequences, {})", prefix_,
                       document_lengths_.size(), num_sequences_, token_type_name(type_));
  }

 private:
  // The .idx arrays start at byte 34, so they are unaligned: every element is loaded with memcpy.
  int64_t sequence_length(int64_t s) const { return load_le<int32_t>(lengths_ + 4 * s); }
  int64_t sequence_pointer(int64_t s) const { return load_le<int64_t>(pointers_ + 8 * s); }
  int64_t document_index(int64_t d) const { return load_le<int64_t>(document_indices_ + 8 * d); }

  void read_header() {
    const std::string idx_name = prefix_ + ".idx";
    const std::byte* p = idx_.bytes().data();
    if (idx_.size() < kHeaderBytes)
      malformed(idx_name, "{} bytes, shorter than the {}-byte header of a Megatron index", idx_.size(), kHeaderBytes);
    if (std::memcmp(p, kMagic, sizeof kMagic) != 0)
      malformed(idx_name, "not a Megatron-LM indexed dataset index (it does not start with \"MMIDIDX\\0\\0\")");
    if (uint64_t version = load_le<uint64_t>(p + 9); version != kVersion)
      malformed(idx_name, "version {}; Megatron indexes have version {}", version, kVersion);
    auto code = static_cast<uint8_t>(p[17]);
    std::optional<TokenType> type = type_of_code(code);
    if (!type) {
      malformed(idx_name, "dtype code {} is not a token type ({})", code,
                code == 6 || code == 7 ? "a float dtype" : "Megatron's codes are 1 to 8");
    }
    type_ = *type;

    const auto sequences = load_le<uint64_t>(p + 18);
    const auto indices = load_le<uint64_t>(p + 26);
    const auto size = static_cast<uint64_t>(idx_.size());
    // Compare before multiplying: a corrupt count must not overflow the expected size.
    const bool fits = sequences <= size / 12 && indices <= size / 8;
    const uint64_t expected = kHeaderBytes + 12 * sequences + 8 * indices;
    if (!fits || expected != size) {
      malformed(idx_name, "{} bytes, but its header ({} sequences, {} document indices) needs {}{}", size, sequences,
                indices, fits ? fmt::format("{} bytes", expected) : std::string("more"),
                fits && size == expected + sequences ? " (sequence modes of multimodal datasets are not supported)"
                                                     : "");
    }
    num_sequences_ = static_cast<int64_t>(sequences);
    num_indices_ = static_cast<int64_t>(indices);
    lengths_ = p + kHeaderBytes;
    pointers_ = lengths_ + 4 * num_sequences_;
    document_indices_ = pointers_ + 8 * num_sequences_;

    const int64_t width = token_type_size(type_);
    if (bin_.size() % width != 0)
      malformed(prefix_ + ".bin", "{} bytes, not a whole number of {}-byte {} ids (the dtype in its .idx)",
                bin_.size(), width, token_type_name(type_));
  }

  void check_document_indices() {
    const std::string idx_name = prefix_ + ".idx";
    if (num_indices_ == 0) malformed(idx_name, "no document indices (there is always a leading 0)");
    if (document_index(0) != 0) malformed(idx_name, "document index 0 is {}, not 0", document_index(0));
    for (int64_t d = 1; d < num_indices_; ++d) {
      if (document_index(d) < document_index(d - 1))
        malformed(idx_name, "document indices decrease: index {} is {} after {}", d, document_index(d),
                  document_index(d - 1));
    }
    if (document_index(num_indices_ - 1) != num_sequences_)
      malformed(idx_name, "the last document index is {}, not the sequence count {}", document_index(num_indices_ - 1),
                num_sequences_);
  }

  // Bounds of every sequence against the .bin, every id against the vocabulary, and the document lengths. Megatron
  // writes the sequences one after another from byte 0 to the end of the .bin, so a sequence that starts anywhere
  // else, or a .bin of another size, is a .bin of another dtype or of other documents than the .idx describes.
  void check_sequences(int64_t vocab_size) {
    const std::string mismatch = fmt::format("{0}.idx does not match {0}.bin", prefix_);
    const int64_t width = token_type_size(type_);
    const int64_t bin_size = bin_.size();
    const std::string which = fmt::format("its .idx says {} ids", token_type_name(type_));
    int64_t next = 0;  // where the next sequence starts
    document_lengths_.reserve(num_indices_ - 1);
    for (int64_t d = 0; d + 1 < num_indices_; ++d) {
      int64_t document_length = 0;
      for (int64_t s = document_index(d); s < document_index(d + 1); ++s) {
        const int64_t length = sequence_length(s);
        const int64_t pointer = sequence_pointer(s);
        if (length < 0) malformed(mismatch, "sequence {} has negative length {}", s, length);
        if (pointer < 0 || pointer > bin_size)
          malformed(mismatch, "sequence {} starts at byte {}, outside the {}-byte .bin", s, pointer, bin_size);
        if (length > (bin_size - pointer) / width)
          malformed(mismatch, "sequence {} ends at byte {}, past the end of the {}-byte .bin ({})", s,
                    pointer + length * width, bin_size, which);
        if (pointer != next)
          malformed(mismatch, "sequence {} starts at byte {}, not at byte {} where the sequence before it ends ({})", s,
                    pointer, next, which);
        next = pointer + length * width;
        check_ids(s, d, bin_.bytes().data() + pointer, length, vocab_size);
        document_length += length;
      }
      document_lengths_.push_back(document_length);
    }
    if (next != bin_size)
      malformed(mismatch, "its sequences hold {} tokens ({} bytes as {} ids), but the .bin has {} bytes", next / width,
                next, token_type_name(type_), bin_size);
  }

  void check_ids(int64_t s, int64_t d, const std::byte* ids, int64_t length, int64_t vocab_size) const {
    int64_t i = find_invalid_token(type_, ids, length, vocab_size);
    if (i < 0) return;
    int64_t id = token_at(type_, ids, i);
    std::string where = fmt::format("at token {} of sequence {} (document {}) of {}.bin", i, s, d, prefix_);
    if (id < 0) throw_runtime_error("token id {} {} is negative", id, where);
    throw_config_error("token id {} {} is >= model.vocab_size = {}", id, where, vocab_size);
  }

  void read_tokens(int64_t doc, int64_t start, std::span<int32_t> out) const override {
    const int64_t width = token_type_size(type_);
    std::vector<std::byte> bytes;
    std::size_t written = 0;
    for (int64_t s = document_index(doc); written < out.size(); ++s) {
      const int64_t length = sequence_length(s);
      if (start >= length) {  // the range starts in a later sequence of this document
        start -= length;
        continue;
      }
      const int64_t n = std::min(length - start, static_cast<int64_t>(out.size() - written));
      bytes.resize(static_cast<std::size_t>(n * width));
      bin_.read(sequence_pointer(s) + start * width, bytes);
      decode_tokens(type_, bytes.data(), n, out.data() + written);
      written += static_cast<std::size_t>(n);
      start = 0;
    }
  }

  std::string prefix_;
  MappedFile idx_;
  MappedFile bin_;
  TokenType type_ = TokenType::int32;
  int64_t num_sequences_ = 0;
  int64_t num_indices_ = 0;
  const std::byte* lengths_ = nullptr;
  const std::byte* pointers_ = nullptr;
  const std::byte* document_indices_ = nullptr;
  std::vector<int64_t> document_lengths_;
};

template <class T>
void append(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

std::unique_ptr<DocumentSource> open_indexed_dataset(const std::filesystem::path& prefix, int64_t vocab_size) {
  return std::make_unique<IndexedDataset>(prefix, vocab_size);
}

void write_indexed_dataset(const std::filesystem::path& prefix, const std::vector<std::vector<int32_t>>& documents,
                           TokenType type) {
  auto code = std::find_if(std::begin(kCodes), std::end(kCodes), [&](auto entry) { return entry.second == type; });
  if (code == std::end(kCodes))
    throw_runtime_error("Megatron indexed datasets have no {} dtype", token_type_name(type));

  std::string bin;
  std::vector<int64_t> pointers;
  visit_token_type(type, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t d = 0; d < documents.size(); ++d) {
      if (documents[d].size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
        throw_runtime_error("document {} has {} tokens; Megatron lengths are int32", d, documents[d].size());
      pointers.push_back(static_cast<int64_t>(bin.size()));
      for (int32_t id : documents[d]) {
        if (id < 0 || static_cast<int64_t>(id) > static_cast<int64_t>(std::numeric_limits<T>::max()))
          throw_runtime_error("token id {} of document {} does not fit {}", id, d, token_type_name(type));
        append(bin, static_cast<T>(id));
      }
    }
  });

  std::string idx(kMagic, sizeof kMagic);
  append(idx, kVersion);
  append(idx, code->first);
  append(idx, static_cast<uint64_t>(documents.size()));
  append(idx, static_cast<uint64_t>(documents.size() + 1));
  for (const auto& document : documents) append(idx, static_cast<int32_t>(document.size()));
  for (int64_t pointer : pointers) append(idx, pointer);
  for (std::size_t d = 0; d <= documents.size(); ++d) append(idx, static_cast<int64_t>(d));

  std::string name = prefix.string();
  write_file_atomically(name + ".bin", bin);
  write_file_atomically(name + ".idx", idx);
}

}  // namespace trident
