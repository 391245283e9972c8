#include "core/common/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident {

std::optional<RunLock> RunLock::try_acquire(const std::filesystem::path& run_dir, std::string* holder) {
  const std::filesystem::path path = run_dir / ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_runtime_error("cannot open the run lock '{}': {}", path.string(), std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char text[256] = {};
    const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
    ::close(fd);
    if (error != EWOULDBLOCK)
      throw_runtime_error("cannot lock the run lock '{}': {}", path.string(), std::strerror(error));
    if (holder) *holder = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "another process";
    return std::nullopt;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::string me = fmt::format("pid {} on {} since {:%Y-%m-%dT%H:%M:%SZ}", ::getpid(), host,
                                     fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    ::close(fd);
    throw_runtime_error("cannot write the run lock '{}': {}", path.string(), std::strerror(errno));
  }
  return RunLock(fd);
}

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace trident
