#pragma once
// exp for kernels: the hot loops of GELU, softmax attention and cross-entropy are bound by exp, and a call to the C
// library's exp does not vectorise. This is the classic Cephes expf (range reduction by ln 2, degree-6 polynomial,
// exponent built from bits): branch-free apart from selects, so loops over it vectorise, with a relative error
// within 2 ulp of expf on the whole range (tests/kernels/test_exp.cpp sweeps it against double).
// exp(-inf) and arguments below the normal range give exactly 0 (masked scores contribute nothing), NaN propagates,
// arguments above log(FLT_MAX) give +inf.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/shared/hd.h"

namespace trident {

TRIDENT_HD float kernel_exp(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  constexpr float kMax = 88.3762626647949f;   // ln(2^127.5): keeps 2^k a normal float
  constexpr float kMin = -87.3365447505531f;  // ln(2^-126): below this the result would be subnormal
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // ln 2 split so k * kLn2Hi is exact
  float xc = x < kMax ? (x > kMin ? x : kMin) : kMax;  // NaN takes kMax, so the int conversion below is defined
  float k = std::floor(xc * kLog2e + 0.5f);
  float r = xc - k * kLn2Hi - k * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  float y = p * std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);  // 2^k
  y = x < kMin ? 0.0f : y;
  y = x > kMax ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;  // NaN in, NaN out
#endif
}

}  // namespace trident
