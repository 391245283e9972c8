#pragma once
// Small host-side vector helpers for kernel tests.
#include <cstdint>
#include <vector>

namespace trident::test {

// x - y, element-wise: the part a backward added to a buffer that did not start at zero.
inline std::vector<float> minus(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) d[i] = x[i] - y[i];
  return d;
}

// Columns [offset, offset + width) of every row of a (rows, stride) matrix: splits dqkv into dq, dk, dv.
inline std::vector<float> columns(const std::vector<float>& x, int64_t stride, int64_t offset, int64_t width) {
  std::vector<float> y;
  for (std::size_t r = 0; r < x.size() / stride; ++r)
    y.insert(y.end(), x.begin() + r * stride + offset, x.begin() + r * stride + offset + width);
  return y;
}

}  // namespace trident::test
