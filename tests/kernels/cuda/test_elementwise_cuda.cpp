// CUDA element-wise kernels against the CPU backend: fp32 to rounding, bf16 to bf16's precision.
#include <catch2/catch.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/decay_rows.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/strided_rows.h"
#include "kernels/cuda/decay_rows.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/strided_rows.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("cuda bias + gelu forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][gelu]") {
  const int64_t N = 1031;  // with OC, several grid-stride rounds and a partial row block and column tile
  const int OC = 97;
  const int64_t n = N * OC;
  auto pre = random_normal<float>(n, 1, 2.0), bias = random_normal<float>(OC, 3), dout = random_normal<float>(n, 2);
  std::vector<float> h(pre), y(n), dpre(n), dbias(OC, 0.25f);
  cpu::bias_gelu_forward(h.data(), y.data(), bias.data(), N, OC);
  cpu::bias_gelu_backward(dpre.data(), dbias.data(), h.data(), dout.data(), N, OC);

  DeviceVector<float> h_d(pre), bias_d(bias), dout_d(dout), y_d(n), dpre_d(n, 7.0f), dbias_d(OC, 0.25f);
  cuda::bias_gelu_forward(h_d.data(), y_d.data(), bias_d.data(), N, OC, nullptr);
  cuda::bias_gelu_backward(dpre_d.data(), dbias_d.data(), h_d.data(), dout_d.data(), N, OC, nullptr);
  check_close("pre-activation fp32", h_d.to_host(), h, 1e-6);
  check_close("gelu forward fp32", y_d.to_host(), y, 1e-6);  // device expf vs the host polynomial: a few ulp
  check_close("gelu backward fp32", dpre_d.to_host(), dpre, 1e-6);
  check_close("bias gradient fp32", dbias_d.to_host(), dbias, 1e-5);  // another summation order than the CPU's
  DeviceVector<float> dpre_alone_d(n, 7.0f);
  cuda::bias_gelu_backward(dpre_alone_d.data(), static_cast<float*>(nullptr), h_d.data(), dout_d.data(), N, OC,
                           nullptr);
  check_close("gelu backward fp32 without a bias", dpre_alone_d.to_host(), dpre, 1e-6);

  // bf16 storage: the CPU backend's emulation is the contract (pre rounded, then the activation of what is stored)
  std::vector<bf16> hb = to_bf16(pre), yb(n), dpreb(n);
  const std::vector<bf16> biasb = to_bf16(bias), doutb = to_bf16(dout);
  std::vector<float> dbiasb(OC, 0.0f);
  cpu_backend().bias_gelu_forward(hb.data(), yb.data(), biasb.data(), N, OC);
  cpu_backend().bias_gelu_backward(dpreb.data(), dbiasb.data(), hb.data(), doutb.data(), N, OC);
  DeviceVector<bf16> hb_d(to_bf16(pre)), biasb_d(biasb), doutb_d(doutb), yb_d(n), dpreb_d(n);
  DeviceVector<float> dbiasb_d(OC, 0.0f);
  cuda::bias_gelu_forward(hb_d.data(), yb_d.data(), biasb_d.data(), N, OC, nullptr);
  cuda::bias_gelu_backward(dpreb_d.data(), dbiasb_d.data(), hb_d.data(), doutb_d.data(), N, OC, nullptr);
  check_close("pre-activation bf16", to_f32(hb_d.to_host()), to_f32(hb), 0.0);  // one rounding of the same sum
  check_close("gelu forward bf16", to_f32(yb_d.to_host()), to_f32(yb), 4e-3);
  check_close("gelu backward bf16", to_f32(dpreb_d.to_host()), to_f32(dpreb), 4e-3);
  check_close("bias gradient bf16", dbiasb_d.to_host(), dbiasb, 1e-4);
}

TEST_CASE("cuda decay_rows and fill/convert equal the CPU", "[cuda][decay_rows]") {
  const int64_t n = 1001, ld = 37;
  const int D = 29;  // a block of columns of a wider matrix, as LASP reads q, k or v of one head
  const auto src = random_normal<float>(n * ld, 3);
  for (const auto& [offset, sign] : {std::pair<int64_t, int>{0, +1}, {n, -1}}) {
    std::vector<float> want(n * D);
    cpu::decay_rows(want.data(), src.data() + 5, ld, n, D, 0.0625f, offset, sign);
    DeviceVector<float> src_d(src), got_d(n * D);
    cuda::decay_rows(got_d.data(), src_d.data() + 5, ld, n, D, 0.0625f, offset, sign, nullptr);
    check_close("decay_rows sign " + std::to_string(sign), got_d.to_host(), want, 1e-6);  // device expf: a few ulp
  }
  DeviceVector<bf16> weights_d(n);
  DeviceVector<float> master_d(src);
  cuda::convert(weights_d.data(), master_d.data(), n, nullptr);
  const std::vector<bf16> got = weights_d.to_host(), want = to_bf16(std::vector<float>(src.begin(), src.begin() + n));
  for (int64_t i = 0; i < n; ++i) REQUIRE(got[i].bits == want[i].bits);  // round to nearest even, exactly
  cuda::fill(weights_d.data(), n, 1.5f, nullptr);
  for (const bf16 x : weights_d.to_host()) REQUIRE(bf16_to_float(x) == 1.5f);
}

namespace {

// copy_rows and add_rows on storage type T against the CPU: copies are exact, and so is each sum (one fp32 addition,
// rounded once in bf16 on both sides).
template <class T>
void check_strided_rows(const std::vector<float>& src32, const std::vector<float>& base32, int64_t rows, int64_t ld_src,
                        int64_t ld_dst, int64_t cols) {
  const std::vector<T> src = to_storage<T>(src32), base = to_storage<T>(base32);
  std::vector<T> copied = base, added = base;
  cpu::copy_rows(copied.data() + 1, ld_dst, src.data() + 7, ld_src, rows, cols);
  cpu::add_rows(added.data() + 1, ld_dst, src.data() + 7, ld_src, rows, cols);
  DeviceVector<T> src_d(src), copied_d(base), added_d(base);
  cuda::copy_rows(copied_d.data() + 1, ld_dst, src_d.data() + 7, ld_src, rows, cols, nullptr);
  cuda::add_rows(added_d.data() + 1, ld_dst, src_d.data() + 7, ld_src, rows, cols, nullptr);
  CHECK(from_storage(copied_d.to_host()) == from_storage(copied));
  CHECK(from_storage(added_d.to_host()) == from_storage(added));
}

}  // namespace

TEST_CASE("cuda copy_rows, add_rows and bf16 widening equal the CPU", "[cuda][rows]") {
  const int64_t rows = 517, ld_src = 45, ld_dst = 31, cols = 29;
  const auto src = random_normal<float>(rows * ld_src, 4);
  const auto base = random_normal<float>(rows * ld_dst, 5);
  check_strided_rows<float>(src, base, rows, ld_src, ld_dst, cols);
  check_strided_rows<bf16>(src, base, rows, ld_src, ld_dst, cols);

  const std::vector<bf16> narrow = to_bf16(src);
  DeviceVector<bf16> narrow_d(narrow);
  DeviceVector<float> wide_d(static_cast<int64_t>(narrow.size()));
  cuda::convert(wide_d.data(), narrow_d.data(), static_cast<int64_t>(narrow.size()), nullptr);
  CHECK(wide_d.to_host() == to_f32(narrow));
}
