#pragma once
// bfloat16 storage type: the upper 16 bits of an IEEE fp32. Conversion rounds to nearest even; NaN stays NaN.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/shared/hd.h"

namespace trident {

struct bf16 {
  uint16_t bits;
};

TRIDENT_HD float bf16_to_float(bf16 x) {
  uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TRIDENT_HD bf16 float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return bf16{static_cast<uint16_t>((u >> 16) | 0x40)};
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return bf16{static_cast<uint16_t>((u + rounding) >> 16)};
}

// Loads and stores of a kernel's storage type T (float or bf16); the arithmetic is always fp32.
TRIDENT_HD float to_float(float x) { return x; }
TRIDENT_HD float to_float(bf16 x) { return bf16_to_float(x); }
template <class T>
TRIDENT_HD T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return float_to_bf16(x);
  }
}

}  // namespace trident
