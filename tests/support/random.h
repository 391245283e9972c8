#pragma once
// Deterministic test data.
#include <cstdint>
#include <random>
#include <vector>

namespace trident::test {

template <class T = float>
std::vector<T> random_normal(std::size_t n, uint64_t seed, double stddev = 1.0, double mean = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(mean, stddev);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

template <class T = float>
std::vector<T> random_uniform(std::size_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

template <class To, class From>
std::vector<To> cast(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

}  // namespace trident::test
