#pragma once
// Naive references for the element-wise kernels, in any scalar type (tests run them in double).
#include <cmath>
#include <cstddef>
#include <vector>

namespace trident::reference {

template <class T>
std::vector<T> gelu(const std::vector<T>& x) {
  std::vector<T> y(x.size());
  const T pi = T(3.14159265358979323846);
  for (std::size_t i = 0; i < x.size(); ++i)
    y[i] = T(0.5) * x[i] * (T(1) + std::tanh(std::sqrt(T(2) / pi) * (x[i] + T(0.044715) * std::pow(x[i], 3))));
  return y;
}

}  // namespace trident::reference
