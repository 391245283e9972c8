// CUDA layernorm and rmsnorm (with and without its gate) against the CPU kernels, forward and backward, fp32 and bf16
// activations.
// Tolerances (max error over the largest reference magnitude):
//   fp32: 1e-5 for every output and gradient. The GPU sums a row across a warp and dweight/dbias over blocks of
//     rows, in another order than the CPU; an emulation of both orders on these shapes gives at most ~3e-6.
//   bf16 activations: the inputs are rounded to bf16 and the CPU runs on those values. The fp32 statistics (mean,
//     rstd, rrms) and the fp32 parameter gradients keep 1e-5; the bf16 outputs, dinp and dgate are rounded once more
//     on store, which is half an ulp (2^-8 of the value) plus the fp32 difference: 8e-3, one bf16 ulp.
// The parameter gradients must also be bit-identical run to run.
#include <cstring>

#include <catch2/catch.hpp>

#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/rmsnorm.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

std::vector<float> host_f32(const DeviceVector<float>& d) { return d.to_host(); }
std::vector<float> host_f32(const DeviceVector<bf16>& d) { return to_f32(d.to_host()); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <class T>
std::vector<T> storage(const std::vector<float>& x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return to_bf16(x);
  }
}

// Runs the CPU kernels on `x` as stored in T (so bf16 inputs are rounded for both) and the CUDA kernels on the same
// data, and compares.
template <class T>
void check_layernorm(int64_t N, int C, double act_tol) {
  const double tol = 1e-5;
  // an offset mean larger than the spread exercises the two-pass statistics
  auto x = random_normal<float>(N * C, 10, 1.5, 3.0), dout = random_normal<float>(N * C, 13);
  auto w = random_normal<float>(C, 11, 0.5, 1.0), b = random_normal<float>(C, 12);
  auto dx0 = random_normal<float>(N * C, 14), dw0 = random_normal<float>(C, 15), db0 = random_normal<float>(C, 16);
  if constexpr (!std::is_same_v<T, float>) {
    x = round_bf16(x);
    dout = round_bf16(dout);
    dx0 = round_bf16(dx0);
  }

  std::vector<float> y(N * C), mean(N), rstd(N), dx = dx0, dw = dw0, db = db0;
  cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(),
                          N, C);

  DeviceVector<T> x_d(storage<T>(x)), dout_d(storage<T>(dout)), y_d(N * C), dx_d(storage<T>(dx0));
  DeviceVector<float> w_d(w), b_d(b), mean_d(N), rstd_d(N), dw_d(dw0), db_d(db0);
  cuda::layernorm_forward(y_d.data(), mean_d.data(), rstd_d.data(), x_d.data(), w_d.data(), b_d.data(), N, C,
                          nullptr);
  cuda::layernorm_backward(dx_d.data(), dw_d.data(), db_d.data(), dout_d.data(), x_d.data(), w_d.data(),
                           mean_d.data(), rstd_d.data(), N, C, nullptr);
  check_close("layernorm forward", host_f32(y_d), y, act_tol);
  check_close("layernorm mean", mean_d.to_host(), mean, tol);
  check_close("layernorm rstd", rstd_d.to_host(), rstd, tol);
  check_close("layernorm dinp", host_f32(dx_d), dx, act_tol);
  check_close("layernorm dweight", dw_d.to_host(), dw, tol);
  check_close("layernorm dbias", db_d.to_host(), db, tol);

  // the same backward again from the same starting gradients: bit-identical results
  DeviceVector<T> dx2_d(storage<T>(dx0));
  DeviceVector<float> dw2_d(dw0), db2_d(db0);
  cuda::layernorm_backward(dx2_d.data(), dw2_d.data(), db2_d.data(), dout_d.data(), x_d.data(), w_d.data(),
                           mean_d.data(), rstd_d.data(), N, C, nullptr);
  CHECK(same_bits(dw2_d.to_host(), dw_d.to_host()));
  CHECK(same_bits(db2_d.to_host(), db_d.to_host()));
  CHECK(same_bits(host_f32(dx2_d), host_f32(dx_d)));
}

// With a gate (linear attention's output norm and gate) or without; dinp and dgate start non-zero (they accumulate).
template <class T>
void check_rmsnorm(int64_t rows, int D, bool gated, double act_tol) {
  auto x = random_normal<float>(rows * D, 20, 2.0, 0.5), dout = random_normal<float>(rows * D, 21);
  auto dx0 = random_normal<float>(rows * D, 22), gate = random_normal<float>(rows * D, 23, 1.5, 0.3);
  auto dgate0 = random_normal<float>(rows * D, 24);
  if constexpr (!std::is_same_v<T, float>) {
    x = round_bf16(x);
    dout = round_bf16(dout);
    dx0 = round_bf16(dx0);
    gate = round_bf16(gate);
    dgate0 = round_bf16(dgate0);
  }
  const float* g = gated ? gate.data() : nullptr;

  std::vector<float> y(rows * D), rrms(rows), dx = dx0, dgate = dgate0;
  cpu::rmsnorm_forward(y.data(), rrms.data(), x.data(), g, rows, D);
  cpu::rmsnorm_backward(dx.data(), dgate.data(), dout.data(), x.data(), g, rrms.data(), rows, D);

  DeviceVector<T> x_d(storage<T>(x)), dout_d(storage<T>(dout)), y_d(rows * D), dx_d(storage<T>(dx0));
  DeviceVector<T> gate_d(storage<T>(gate)), dgate_d(storage<T>(dgate0));
  DeviceVector<float> rrms_d(rows);
  T* g_d = gated ? gate_d.data() : nullptr;
  cuda::rmsnorm_forward(y_d.data(), rrms_d.data(), x_d.data(), g_d, rows, D, nullptr);
  cuda::rmsnorm_backward(dx_d.data(), dgate_d.data(), dout_d.data(), x_d.data(), g_d, rrms_d.data(), rows, D, nullptr);
  check_close("rmsnorm forward", host_f32(y_d), y, act_tol);
  check_close("rmsnorm rrms", rrms_d.to_host(), rrms, 1e-5);
  check_close("rmsnorm dinp", host_f32(dx_d), dx, act_tol);
  if (gated) {
    check_close("rmsnorm dgate", host_f32(dgate_d), dgate, act_tol);
  } else {
    CHECK(host_f32(dgate_d) == dgate0);  // no gate: dgate is not touched
  }
}

// Shapes with more rows than the row grid has warps: on a device, not under the SIMT emulation.
#if defined(TRIDENT_SIMT_EMULATION)
constexpr bool kLargeRows = false;
#else
constexpr bool kLargeRows = true;
#endif

}  // namespace

TEST_CASE("cuda layernorm forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][layernorm]") {
  // C below, at and above a warp, not multiples of 32; N = 530001 runs more rows than the row grid has warps and
  // more row blocks of parameter partials than the 1024 cap at the minimum of 128 rows (left out under the SIMT
  // emulation, tests/kernels/simt/, where its 65535 blocks of fibers would take minutes)
  auto [N, C] = GENERATE(std::pair<int64_t, int>{1, 1}, std::pair<int64_t, int>{7, 33},
                         std::pair<int64_t, int>{130, 256}, std::pair<int64_t, int>{3001, 37},
                         std::pair<int64_t, int>{64, 1600}, std::pair<int64_t, int>{kLargeRows ? 530001 : 1, 8});
  CAPTURE(N, C);
  SECTION("fp32") { check_layernorm<float>(N, C, 1e-5); }
  SECTION("bf16") { check_layernorm<bf16>(N, C, 8e-3); }
}

TEST_CASE("cuda rmsnorm forward and backward equal the CPU kernel (fp32 and bf16, with and without a gate)",
          "[cuda][rmsnorm]") {
  // per-head rows (D = 64), whole rows of GPT-2 small (768) and of a wide model (4096, 128 values per lane), widths
  // below a warp and not multiples of 32
  auto [rows, D] = GENERATE(std::pair<int64_t, int>{1, 1}, std::pair<int64_t, int>{5, 33},
                            std::pair<int64_t, int>{300, 64}, std::pair<int64_t, int>{77, 100},
                            std::pair<int64_t, int>{19, 768}, std::pair<int64_t, int>{3, 4096},
                            std::pair<int64_t, int>{kLargeRows ? 600001 : 2, 4});
  const bool gated = GENERATE(false, true);
  CAPTURE(rows, D, gated);
  SECTION("fp32") { check_rmsnorm<float>(rows, D, gated, 1e-5); }
  SECTION("bf16") { check_rmsnorm<bf16>(rows, D, gated, 8e-3); }
}
