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

// ---- linear attention's q/k feature maps (kernels/shared/feature_map.h) and their derivatives ----
template <class T>
T silu(T x) {
  return x / (T(1) + std::exp(-x));
}
template <class T>
T silu_grad(T x) {
  const T s = T(1) / (T(1) + std::exp(-x));
  return s + x * s * (T(1) - s);
}
// 1 + elu(x)
template <class T>
T elu1(T x) {
  return x > T(0) ? x + T(1) : std::exp(x);
}
template <class T>
T elu1_grad(T x) {
  return x > T(0) ? T(1) : std::exp(x);
}

// The feature map applied to the q and k columns (the first 2C) of each 3C-wide row of qkv; v passes through.
// `map` is one of the above (any callable T -> T).
template <class T, class Map>
std::vector<T> map_qk(const std::vector<T>& qkv, int C, Map map) {
  std::vector<T> y(qkv);
  const std::size_t width = 3 * static_cast<std::size_t>(C);
  for (std::size_t i = 0; i < y.size(); ++i)
    if (i % width < 2 * static_cast<std::size_t>(C)) y[i] = map(y[i]);
  return y;
}

// Its backward: the gradient w.r.t. qkv before the map, from dqkv (after it): dq, dk times map'(q), map'(k); dv as is.
template <class T, class Grad>
std::vector<T> map_qk_backward(const std::vector<T>& dqkv, const std::vector<T>& qkv, int C, Grad grad) {
  std::vector<T> d(dqkv);
  const std::size_t width = 3 * static_cast<std::size_t>(C);
  for (std::size_t i = 0; i < d.size(); ++i)
    if (i % width < 2 * static_cast<std::size_t>(C)) d[i] *= grad(qkv[i]);
  return d;
}

}  // namespace trident::reference
