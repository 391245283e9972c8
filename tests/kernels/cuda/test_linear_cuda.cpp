// CUDA linear layer against the CPU kernel on the same data: forward with and without bias, backward with and without
// dinp/dbias, every gradient starting non-zero (backward accumulates). N spans several 256-row blocks of the dbias
// reduction with a partial last one, OC several 32-column tiles with a partial last one; N = 1 is the edge case.
// Tolerances (max error normalised by max |reference|):
//   fp32            1e-5  fp32 on both sides (cuBLAS without TF32); only summation orders differ.
//   bf16 dweight,   1e-5  fp32 outputs from bf16 inputs: the CPU runs on the same values rounded to bf16, the
//   bf16 dbias            products are exact in fp32, and only summation orders differ.
//   bf16 out, dinp  4e-3  the same plus one rounding of the result to bf16 (2^-9 relative).
// The parameter gradients must also be bit-identical between two runs (deterministic reductions).
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "kernels/cpu/linear.h"
#include "kernels/cuda/linear.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

bool bit_identical(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), sizeof(float) * x.size()) == 0;
}

struct Data {
  std::vector<float> inp, weight, bias, dout, dinp0, dweight0, dbias0;
};

// Every tensor already rounded to bf16, so the fp32 and bf16 runs can share one CPU reference where the output is fp32.
Data make_data(int64_t N, int C, int OC, uint64_t seed) {
  Data d;
  d.inp = round_bf16(random_normal<float>(N * C, seed + 1));
  d.weight = round_bf16(random_normal<float>(static_cast<std::size_t>(C) * OC, seed + 2, 0.2));
  d.bias = round_bf16(random_normal<float>(OC, seed + 3));
  d.dout = round_bf16(random_normal<float>(N * OC, seed + 4));
  d.dinp0 = round_bf16(random_normal<float>(N * C, seed + 5, 0.5));
  d.dweight0 = random_normal<float>(static_cast<std::size_t>(C) * OC, seed + 6, 0.5);
  d.dbias0 = random_normal<float>(OC, seed + 7, 0.5);
  return d;
}

void check_linear(int64_t N, int C, int OC, bool with_bias, bool with_dinp, uint64_t seed) {
  const std::string name = "linear N=" + std::to_string(N) + " C=" + std::to_string(C) + " OC=" +
                           std::to_string(OC) + (with_bias ? " bias" : "") + (with_dinp ? " dinp" : "");
  const Data d = make_data(N, C, OC, seed);
  const float* bias = with_bias ? d.bias.data() : nullptr;

  std::vector<float> out(N * OC, 9.0f), dinp = d.dinp0, dweight = d.dweight0, dbias = d.dbias0;
  cpu::linear_forward(out.data(), d.inp.data(), d.weight.data(), bias, N, C, OC);
  cpu::linear_backward(with_dinp ? dinp.data() : nullptr, dweight.data(), with_bias ? dbias.data() : nullptr,
                       d.dout.data(), d.inp.data(), d.weight.data(), N, C, OC);

  {  // fp32
    DeviceVector<float> inp_d(d.inp), weight_d(d.weight), bias_d(d.bias), dout_d(d.dout), out_d(N * OC, 9.0f);
    cuda::linear_forward(out_d.data(), inp_d.data(), weight_d.data(), with_bias ? bias_d.data() : nullptr, N, C, OC,
                         nullptr);
    check_close(name + " forward fp32", out_d.to_host(), out, 1e-5);

    std::vector<float> runs[2][2];  // [run][dweight, dbias]: the second run must reproduce the first bit for bit
    for (auto& run : runs) {
      DeviceVector<float> dinp_d(d.dinp0), dweight_d(d.dweight0), dbias_d(d.dbias0);
      cuda::linear_backward(with_dinp ? dinp_d.data() : nullptr, dweight_d.data(),
                            with_bias ? dbias_d.data() : nullptr, dout_d.data(), inp_d.data(), weight_d.data(), N, C,
                            OC, nullptr);
      check_close(name + " dinp fp32", dinp_d.to_host(), dinp, 1e-5);
      run[0] = dweight_d.to_host();
      run[1] = dbias_d.to_host();
      check_close(name + " dweight fp32", run[0], dweight, 1e-5);
      check_close(name + " dbias fp32", run[1], dbias, 1e-5);
    }
    CHECK(bit_identical(runs[0][0], runs[1][0]));
    CHECK(bit_identical(runs[0][1], runs[1][1]));
  }

  {  // bf16 activations and weights, fp32 parameter gradients
    DeviceVector<bf16> inp_d(to_bf16(d.inp)), weight_d(to_bf16(d.weight)), bias_d(to_bf16(d.bias)),
        dout_d(to_bf16(d.dout)), out_d(N * OC, float_to_bf16(9.0f)), dinp_d(to_bf16(d.dinp0));
    cuda::linear_forward(out_d.data(), inp_d.data(), weight_d.data(), with_bias ? bias_d.data() : nullptr, N, C, OC,
                         nullptr);
    check_close(name + " forward bf16", to_f32(out_d.to_host()), out, 4e-3);

    DeviceVector<float> dweight_d(d.dweight0), dbias_d(d.dbias0);
    cuda::linear_backward(with_dinp ? dinp_d.data() : nullptr, dweight_d.data(), with_bias ? dbias_d.data() : nullptr,
                          dout_d.data(), inp_d.data(), weight_d.data(), N, C, OC, nullptr);
    check_close(name + " dinp bf16", to_f32(dinp_d.to_host()), dinp, 4e-3);
    check_close(name + " dweight bf16", dweight_d.to_host(), dweight, 1e-5);
    check_close(name + " dbias bf16", dbias_d.to_host(), dbias, 1e-5);
  }
}

}  // namespace

TEST_CASE("cuda linear forward and backward equal the CPU kernel (fp32, bf16)", "[cuda][linear]") {
  check_linear(613, 45, 77, true, true, 10);     // 3 row blocks (last partial), 3 column tiles (last partial)
  check_linear(613, 45, 77, false, false, 20);   // no bias, no dinp: those buffers stay as they were
  check_linear(1, 33, 65, true, true, 30);       // one token
  check_linear(300, 64, 2049, true, true, 40);   // a wide output: many column tiles per row block
}
