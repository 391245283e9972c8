#include "kernels/cpu/strided_rows.h"

#include <algorithm>

#include "kernels/shared/bf16.h"

namespace trident::cpu {

template <class T>
void copy_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(guided)
  for (int64_t i = 0; i < rows; ++i) std::copy(src + i * ld_src, src + i * ld_src + cols, dst + i * ld_dst);
}

template <class T>
void add_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(guided)
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; ++c) {
      T& d = dst[i * ld_dst + c];
      d = from_float<T>(to_float(d) + to_float(src[i * ld_src + c]));
    }
}

template void copy_rows<float>(float*, int64_t, const float*, int64_t, int64_t, int64_t);
template void copy_rows<bf16>(bf16*, int64_t, const bf16*, int64_t, int64_t, int64_t);
template void add_rows<float>(float*, int64_t, const float*, int64_t, int64_t, int64_t);
template void add_rows<bf16>(bf16*, int64_t, const bf16*, int64_t, int64_t, int64_t);

}  // namespace trident::cpu
