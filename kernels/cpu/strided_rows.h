#pragma once
// Blocks of rows of row-major matrices with strides, what sequence parallelism packs into messages and unpacks from
// them (Ulysses' head columns, Ring Attention's [k | v] blocks):
//   copy_rows  dst (rows, cols), row stride ld_dst  =  src (rows, cols), row stride ld_src
//   add_rows   dst += src, same shapes (bf16: the sum in fp32, rounded once)
// Strides are in elements and at least cols; dst and src must not overlap. T is float or bf16.
#include <cstdint>

namespace trident::cpu {

template <class T>
void copy_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols);
template <class T>
void add_rows(T* dst, int64_t ld_dst, const T* src, int64_t ld_src, int64_t rows, int64_t cols);

}  // namespace trident::cpu
