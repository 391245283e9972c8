#pragma once
// A whole file mapped read-only: token files and indexed datasets are read in place, so opening a corpus of any
// size costs address space, not a copy, and ranks on one node share the page cache.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace trident {

class MappedFile {
 public:
  // Throws RuntimeError naming the path and the cause when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  int64_t size() const { return static_cast<int64_t>(size_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace trident
