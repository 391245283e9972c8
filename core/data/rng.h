#pragma once
// Randomness for the data pipeline, derived from coordinates alone (seed, purpose, index, ...): a synthetic token or
// a batch is then a pure function of where it is, with no generator state carried between calls. Standard-library
// distributions and std::shuffle are avoided on purpose: their algorithms differ between implementations, and the
// data order must be the same on every machine that resumes a run.
#include <cstdint>
#include <span>
#include <utility>

namespace trident {

// SplitMix64's finaliser: a bijection on 64-bit words with full avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A random word for a tuple of coordinates, e.g. hash_of(seed, kTokens, doc, position).
template <class... Ts>
constexpr uint64_t hash_of(uint64_t first, Ts... rest) {
  uint64_t h = mix64(first);
  ((h = mix64(h ^ static_cast<uint64_t>(rest))), ...);
  return h;
}

// Uniform in [0, 1), from the top 53 bits.
constexpr double unit_interval(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// Fisher-Yates driven by hash_of(seed, i). The modulo bias is below n / 2^64: irrelevant for any real corpus.
template <class T>
void shuffle(std::span<T> items, uint64_t seed) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::size_t j = hash_of(seed, i) % i;
    std::swap(items[i - 1], items[j]);
  }
}

}  // namespace trident
