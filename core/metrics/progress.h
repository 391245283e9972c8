#pragma once
// The one-line progress display of rank 0: step/total, loss, tokens/s and ETA. On a terminal the line rewrites
// itself in place; otherwise (a batch job's log) it prints a plain line every `every` steps and at the end.
#include <cstdint>
#include <string>

namespace trident {

class ProgressLine {
 public:
  ProgressLine(int64_t total_steps, bool enabled);
  void update(int64_t step, double loss, double tokens_per_s, double seconds_per_step);
  void finish();  // ends the in-place line

 private:
  int64_t total_;
  bool enabled_, tty_;
  int64_t every_;
};

std::string format_duration(double seconds);  // "1h02m", "3m05s", "12s"

}  // namespace trident
