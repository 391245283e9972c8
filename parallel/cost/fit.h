#pragma once
// Fitting the compute coefficients of the cost model to measured step times: least squares of the relative error of
//   seconds = alpha1 * s^2 / d + alpha2 * s / d + beta1
// over timings of sequences of s tokens on d devices (each row divided by its measured time; LAPACK dgels, on columns
// scaled to unit norm so s^2 and 1 do not ruin the conditioning).
#include <cstdint>
#include <span>
#include <vector>

#include "parallel/cost/profile.h"

namespace trident::cost {

struct Timing {
  int64_t tokens = 0;
  int64_t devices = 1;
  double seconds = 0;
};

// The sequence lengths a profile times: `longest`, then halved while at least `shortest`, at most `most` of them, in
// ascending order. Short sequences pin the linear term and the overhead (what short documents cost), which three
// lengths near the longest leave to noise.
std::vector<int64_t> halving_lengths(int64_t longest, int64_t shortest, int most);

// Needs at least three distinct values of s/d; throws ConfigError otherwise. Negative coefficients (noise on a
// term that is really ~0) are clipped to 0 and the rest refitted, so the result is always a valid profile section.
ComputeSection fit_compute(std::span<const Timing> timings);

}  // namespace trident::cost
