#include "core/common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/common/error.h"

namespace trident {

namespace {

[[noreturn]] void io_error(const char* what, const std::filesystem::path& path, int error) {
  throw_runtime_error("cannot {} '{}': {}", what, path.string(), std::strerror(error));
}

bool write_all(int fd, std::span<const char> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void fsync_directory(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0 || ::fsync(fd) != 0) {
    int error = errno;
    if (fd >= 0) ::close(fd);
    io_error("fsync directory", dir, error);
  }
  ::close(fd);
}

void write_file_atomically(const std::filesystem::path& path, const std::vector<std::span<const char>>& pieces) {
  std::filesystem::path parent = path.parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw_runtime_error("cannot create directory '{}': {}", parent.string(), ec.message());
  }
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_error("create", tmp, errno);
  bool ok = true;
  for (const auto& piece : pieces) ok = ok && write_all(fd, piece);
  ok = ok && ::fsync(fd) == 0;
  int error = errno;
  if (::close(fd) != 0 && ok) {  // NFS and friends report deferred write errors at close
    ok = false;
    error = errno;
  }
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) error = errno;
    ::unlink(tmp.c_str());
    io_error(ok ? "rename into place" : "write", ok ? path : tmp, error);
  }
  fsync_directory(parent);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, {std::span<const char>(content.data(), content.size())});
}

}  // namespace trident
