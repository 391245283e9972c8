#pragma once
// One run at a time in a run directory: an exclusive flock(2) on RUN_DIR/.lock, held for the process's lifetime and
// released by the kernel when the process ends, however it ends (kill -9 included), so a stale lock cannot exist.
// The file records the holder (pid, host, start time) for the error a second run gets.
#include <filesystem>
#include <optional>
#include <string>

namespace trident {

class RunLock {
 public:
  // The lock, or nothing when another process holds it; then `holder` says who ("pid 123 on node0 since
  // 2026-11-25T03:00:00Z"). Throws RuntimeError naming the file when it cannot be opened.
  static std::optional<RunLock> try_acquire(const std::filesystem::path& run_dir, std::string* holder);

  RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace trident
