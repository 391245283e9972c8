// CUDA residual connection against the CPU kernel.
// Tolerances: fp32 is exact (one IEEE add per element on both sides). bf16: the inputs are rounded to bf16 first and
// the CPU runs on those values, so only the output's rounding differs: at most half a bf16 ulp, 2^-8 of the value,
// hence 4e-3 of the largest magnitude.
#include <catch2/catch.hpp>

#include "kernels/cpu/residual.h"
#include "kernels/cuda/residual.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("cuda residual forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][residual]") {
  const int64_t n = GENERATE(int64_t{1}, int64_t{1000}, int64_t{100003});  // odd, and several grid-stride rounds
  CAPTURE(n);
  auto a = random_normal<float>(n, 1), b = random_normal<float>(n, 2, 3.0), dout = random_normal<float>(n, 3);
  auto da0 = random_normal<float>(n, 4), db0 = random_normal<float>(n, 5);  // non-zero: backward accumulates

  SECTION("fp32") {
    std::vector<float> y(n), da = da0, db = db0;
    cpu::residual_forward(y.data(), a.data(), b.data(), n);
    cpu::residual_backward(da.data(), db.data(), dout.data(), n);

    DeviceVector<float> a_d(a), b_d(b), dout_d(dout), y_d(n), da_d(da0), db_d(db0);
    cuda::residual_forward(y_d.data(), a_d.data(), b_d.data(), n, nullptr);
    cuda::residual_backward(da_d.data(), db_d.data(), dout_d.data(), n, nullptr);
    check_close("residual forward fp32", y_d.to_host(), y, 0.0);
    check_close("residual da fp32", da_d.to_host(), da, 0.0);
    check_close("residual db fp32", db_d.to_host(), db, 0.0);
  }

  SECTION("bf16") {
    auto ar = round_bf16(a), br = round_bf16(b), doutr = round_bf16(dout);
    std::vector<float> y(n), da = round_bf16(da0), db = round_bf16(db0);
    cpu::residual_forward(y.data(), ar.data(), br.data(), n);
    cpu::residual_backward(da.data(), db.data(), doutr.data(), n);

    DeviceVector<bf16> a_d(to_bf16(a)), b_d(to_bf16(b)), dout_d(to_bf16(dout)), y_d(n), da_d(to_bf16(da0)),
        db_d(to_bf16(db0));
    cuda::residual_forward(y_d.data(), a_d.data(), b_d.data(), n, nullptr);
    cuda::residual_backward(da_d.data(), db_d.data(), dout_d.data(), n, nullptr);
    check_close("residual forward bf16", to_f32(y_d.to_host()), y, 4e-3);
    check_close("residual da bf16", to_f32(da_d.to_host()), da, 4e-3);
    check_close("residual db bf16", to_f32(db_d.to_host()), db, 4e-3);
  }
}
