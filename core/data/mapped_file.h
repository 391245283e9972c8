#pragma once
// A whole file mapped read-only: token files and indexed datasets are validated in place when opened, so opening a
// corpus of any size costs address space, not a copy, and ranks on one node share the page cache. Training reads
// go through read() (pread on the file kept open), not the mapping: a file that shrinks under a running job makes a
// mapped read past its new end a SIGBUS, and a pread a short read, which is an error naming the file.
#include <optional>
#include <string>
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
  // Copies out.size() bytes from `offset`. A RuntimeError naming the file when it no longer holds them.
  void read(int64_t offset, std::span<std::byte> out) const;
  // What changed since the file was opened (its size or modification time, or the path now names another file or
  // none), or nothing. One stat per call: cheap enough for every step.
  std::optional<std::string> changed() const;
  int64_t size() const { return static_cast<int64_t>(size_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  int64_t mtime_ns_ = 0;
  uint64_t device_ = 0, inode_ = 0;
};

}  // namespace trident
