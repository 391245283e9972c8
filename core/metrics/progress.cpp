#include "core/metrics/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/core.h>

namespace trident {

ProgressLine::ProgressLine(int64_t total_steps, bool enabled)
    : total_(total_steps), enabled_(enabled), tty_(::isatty(STDERR_FILENO) != 0),
      every_(std::max<int64_t>(1, total_steps / 50)) {}

void ProgressLine::update(int64_t step, double loss, double tokens_per_s, double seconds_per_step) {
  if (!enabled_) return;
  const int64_t done = step + 1;
  const bool last = done == total_;
  if (!tty_ && done % every_ != 0 && !last) return;
  std::string line = fmt::format("step {}/{} | loss {:.4f} | {:.0f} tok/s | ETA {}", done, total_, loss, tokens_per_s,
                                 format_duration(seconds_per_step * static_cast<double>(total_ - done)));
  if (tty_) fmt::print(stderr, "\r{:<72}", line);
  else fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (enabled_ && tty_) fmt::print(stderr, "\n");
}

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

}  // namespace trident
