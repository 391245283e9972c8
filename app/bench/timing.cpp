#include <algorithm>
#include <chrono>
#include <vector>

#include "app/bench/bench.h"

namespace trident::bench {

double time_call(const std::function<void()>& fn, double min_seconds) {
  using clock = std::chrono::steady_clock;
  auto seconds_of = [&](int calls) {
    auto start = clock::now();
    for (int i = 0; i < calls; ++i) fn();
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  double first = seconds_of(1);  // warm-up: page faults, thread pool start, caches
  // five timed runs of enough calls each to fill min_seconds in total; the median resists a noisy neighbour
  int calls = std::max(1, static_cast<int>(min_seconds / 5 / std::max(first, 1e-9)));
  std::vector<double> per_call;
  for (int run = 0; run < 5; ++run) per_call.push_back(seconds_of(calls) / calls);
  std::nth_element(per_call.begin(), per_call.begin() + 2, per_call.end());
  return per_call[2];
}

}  // namespace trident::bench
