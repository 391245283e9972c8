#include "parallel/lasp/auto_variant.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace trident {

namespace {

constexpr int kTagProbe = 0x1A50;

// Seconds of one round of `pattern` on this rank, started together by a barrier; the median of `repeats` rounds.
template <class Pattern>
double median_round(Communicator& sp, int repeats, Pattern pattern) {
  pattern();  // warm-up: connections, buffers
  std::vector<double> rounds;
  for (int i = 0; i < repeats; ++i) {
    sp.barrier();
    const auto start = std::chrono::steady_clock::now();
    pattern();
    rounds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(rounds.begin(), rounds.begin() + repeats / 2, rounds.end());
  return rounds[repeats / 2];
}

}  // namespace

LaspVariantTimes measure_lasp_variants(Communicator& sp, int64_t state_floats, int repeats) {
  const int T = sp.size(), me = sp.rank();
  if (T == 1) return {};
  std::vector<float> state(static_cast<std::size_t>(state_floats), 1.0f), received(state.size());
  std::vector<float> gathered(state.size() * static_cast<std::size_t>(T));
  // LASP-1: rank t waits for rank t-1's state, then passes its own on, as ring_forward does.
  const double ring = median_round(sp, repeats, [&] {
    if (me > 0) sp.recv(received.data(), state_floats, CommType::f32, me - 1, kTagProbe);
    if (me + 1 < T) sp.send(state.data(), state_floats, CommType::f32, me + 1, kTagProbe);
  });
  const double allgather = median_round(
      sp, repeats, [&] { sp.allgather(state.data(), gathered.data(), state_floats, CommType::f32); });
  // The step waits for the slowest rank (for the chain: the last), so the group's time is the maximum.
  const double mine[2] = {ring, allgather};
  std::vector<double> all(2 * static_cast<std::size_t>(T));
  sp.allgather(mine, all.data(), 2, CommType::f64);
  LaspVariantTimes times;
  for (int r = 0; r < T; ++r) {
    times.lasp1_s = std::max(times.lasp1_s, all[2 * r]);
    times.lasp2_s = std::max(times.lasp2_s, all[2 * r + 1]);
  }
  return times;
}

}  // namespace trident
