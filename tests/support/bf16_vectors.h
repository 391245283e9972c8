#pragma once
// Host-side bf16 conversions for tests: round test data to bf16 before both backends see it, and read bf16 results
// back as floats.
#include <type_traits>
#include <vector>

#include "kernels/shared/bf16.h"

namespace trident::test {

inline std::vector<bf16> to_bf16(const std::vector<float>& x) {
  std::vector<bf16> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = float_to_bf16(x[i]);
  return y;
}

inline std::vector<float> to_f32(const std::vector<bf16>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = bf16_to_float(x[i]);
  return y;
}

// x with every element rounded to the nearest bf16.
inline std::vector<float> round_bf16(const std::vector<float>& x) { return to_f32(to_bf16(x)); }

// Test data in a kernel's storage type T (float: as is; bf16: rounded), and results read back as floats.
template <class T>
std::vector<T> to_storage(const std::vector<float>& x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else
    return to_bf16(x);
}

template <class T>
std::vector<float> from_storage(const std::vector<T>& x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else
    return to_f32(x);
}

}  // namespace trident::test
