#include "kernels/cpu/decay_rows.h"

#include "kernels/shared/decay.h"

namespace trident::cpu {

void decay_rows(float* dst, const float* src, int64_t ld, int64_t n, int D, float s, int64_t offset, int sign) {
#pragma omp parallel for schedule(guided)
  for (int64_t i = 0; i < n; ++i) {
    const float w = row_decay(s, offset, sign, i);
    for (int d = 0; d < D; ++d) dst[i * D + d] = w * src[i * ld + d];
  }
}

}  // namespace trident::cpu
