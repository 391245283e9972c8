#pragma once
// Blocks of rows of row-major matrices with strides, what sequence parallelism packs into messages and unpacks from
// them (Ulysses' head columns, Ring Attention's [k | v] blocks):
//   copy_rows  dst (rows, cols), row stride ld_dst  =  src (rows, cols), row stride ld_src
//   add_rows   dst += src, same shapes
// Strides are in elements and at least cols; dst and src must not overlap.
#include <cstdint>

namespace trident::cpu {

void copy_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);
void add_rows(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);

}  // namespace trident::cpu
