// CUDA element-wise kernels against the CPU backend: fp32 to rounding, bf16 to bf16's precision.
#include <catch2/catch.hpp>

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

TEST_CASE("cuda gelu forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][gelu]") {
  const int64_t n = 100003;  // odd, several grid-stride rounds
  auto x = random_normal<float>(n, 1, 2.0);
  auto dout = random_normal<float>(n, 2);
  std::vector<float> y(n), dx(n, 0.25f);
  cpu::gelu_forward(y.data(), x.data(), n);
  cpu::gelu_backward(dx.data(), x.data(), dout.data(), n);

  DeviceVector<float> x_d(x), dout_d(dout), y_d(n), dx_d(n, 0.25f);
  cuda::gelu_forward(y_d.data(), x_d.data(), n, nullptr);
  cuda::gelu_backward(dx_d.data(), x_d.data(), dout_d.data(), n, nullptr);
  check_close("gelu forward fp32", y_d.to_host(), y, 1e-6);  // device expf vs the host polynomial: a few ulp
  check_close("gelu backward fp32", dx_d.to_host(), dx, 1e-6);

  // bf16 storage: inputs rounded to bf16 first, so the comparison measures only the output rounding (2^-8)
  auto xb = to_f32(to_bf16(x));
  std::vector<float> yb(n);
  cpu::gelu_forward(yb.data(), xb.data(), n);
  DeviceVector<bf16> xb_d(to_bf16(x)), yb_d(n);
  cuda::gelu_forward(yb_d.data(), xb_d.data(), n, nullptr);
  check_close("gelu forward bf16", to_f32(yb_d.to_host()), yb, 4e-3);
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
