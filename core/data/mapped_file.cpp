#include "core/data/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident {

namespace {
int64_t mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec; }
}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: a FIFO put in the file's place opens at once (and is refused below) instead of waiting for a writer
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw_runtime_error("cannot open '{}': {}", path.string(), std::strerror(errno));
  struct stat st {};
  int error = ::fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (error) {
    ::close(fd);
    throw_runtime_error("cannot read '{}': {}", path.string(), std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_runtime_error("cannot read '{}': not a regular file (a FIFO, socket or device)", path.string());
  }
  size_ = static_cast<std::size_t>(st.st_size);
  mtime_ns_ = mtime_ns(st);
  device_ = st.st_dev;
  inode_ = st.st_ino;
  if (size_ > 0) {  // mmap rejects a length of 0; an empty file maps to an empty span
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      error = errno;
      ::close(fd);
      throw_runtime_error("cannot map '{}': {}", path.string(), std::strerror(error));
    }
    data_ = static_cast<const std::byte*>(p);
  }
  fd_ = fd;  // kept for read() and changed()
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void MappedFile::read(int64_t offset, std::span<std::byte> out) const {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset) +
                                                                          static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_runtime_error("cannot read '{}': {}", path_.string(), std::strerror(errno));
    if (n == 0)
      throw_runtime_error("'{}' changed while in use: it ends before byte {} (it had {} bytes when opened)",
                          path_.string(), offset + static_cast<int64_t>(out.size()), size_);
    done += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> MappedFile::changed() const {
  struct stat now {};
  if (::fstat(fd_, &now) != 0) return fmt::format("'{}' cannot be checked: {}", path_.string(), std::strerror(errno));
  if (static_cast<std::size_t>(now.st_size) != size_)
    return fmt::format("'{}' changed while in use: {} bytes, {} when opened", path_.string(), now.st_size, size_);
  if (mtime_ns(now) != mtime_ns_)
    return fmt::format("'{}' changed while in use: modified since it was opened", path_.string());
  struct stat named {};
  if (::stat(path_.c_str(), &named) != 0)
    return fmt::format("'{}' changed while in use: {}", path_.string(), std::strerror(errno));
  if (named.st_dev != device_ || named.st_ino != inode_)
    return fmt::format("'{}' changed while in use: the path names another file now", path_.string());
  return std::nullopt;
}

}  // namespace trident
