#include "kernels/cpu/strided_rows.h"

#include <algorithm>

namespace trident::cpu {

void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) std::copy(src + i * ld_src, src + i * ld_src + cols, dst + i * ld_dst);
}

void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; ++c) dst[i * ld_dst + c] += src[i * ld_src + c];
}

}  // namespace trident::cpu
