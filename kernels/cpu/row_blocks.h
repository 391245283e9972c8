#pragma once
// Deterministic column reductions over rows (parameter gradients of token-wise layers): rows are cut into fixed
// blocks, each block's partial sum is computed in parallel, and partials are added in block order. The result does
// not depend on the number of threads, which keeps resumed runs and different rank layouts bit-comparable.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace trident::cpu {

constexpr int64_t kRowBlock = 64;

// out[c] += sum over rows r of row_value(r, c) for c < C; row_value writes one row's contribution into a buffer.
template <class RowFn>
void reduce_rows_deterministic(float* out, int64_t N, int C, RowFn&& add_row) {
  const int64_t blocks = (N + kRowBlock - 1) / kRowBlock;
  std::vector<float> partial(static_cast<std::size_t>(blocks) * C, 0.0f);
#pragma omp parallel for schedule(guided)
  for (int64_t b = 0; b < blocks; ++b) {
    float* acc = partial.data() + b * C;
    const int64_t end = std::min(N, (b + 1) * kRowBlock);
    for (int64_t r = b * kRowBlock; r < end; ++r) add_row(r, acc);
  }
#pragma omp parallel for schedule(guided)
  for (int c = 0; c < C; ++c) {
    float sum = 0.0f;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[b * C + c];
    out[c] += sum;
  }
}

}  // namespace trident::cpu
