// CUDA causal softmax attention against the CPU kernel (itself verified against the double reference), forward and
// backward, on packings with a one-token sequence and lengths that are not multiples of the 64-row forward tile or
// the 32-row backward tiles, H = 3, D in {32, 64} plus D = 48 (head columns not a multiple of a warp) and the
// largest supported D = 128.
// Tolerances (max error normalised by the reference's max magnitude):
//   fp32  2e-5: both sides run fp32 with different summation orders and exp implementations (device expf vs the
//         host polynomial, each within 2 ulp); the CPU kernel itself is within 1e-5 of the double reference.
//   bf16  2e-2: inputs are rounded to bf16 before both runs, so the comparison sees bf16's output rounding (2^-9
//         relative), backward's use of the bf16-rounded forward output in rowsum(dO * O), and the rounding of
//         dqkv when it accumulates into a bf16 buffer; lse stays fp32 and keeps the fp32 tolerance.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention_softmax.h"
#include "kernels/cuda/attention_softmax.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"
#include "support/vector_ops.h"

using namespace trident;
using namespace trident::test;

namespace {

struct SoftmaxResult {
  std::vector<float> out, lse, dqkv;  // dqkv as accumulated onto the prefill
};

SoftmaxResult run_cpu(const std::vector<float>& qkv, const std::vector<float>& dout, const std::vector<float>& prefill,
               const std::vector<int32_t>& cu, int H, int D) {
  const int n_seq = int(cu.size()) - 1;
  const int64_t N = cu.back();
  SoftmaxResult r{std::vector<float>(N * H * D), std::vector<float>(H * N), prefill};
  cpu::attention_softmax_forward(r.out.data(), r.lse.data(), qkv.data(), cu.data(), n_seq, N, H, D);
  cpu::attention_softmax_backward(r.dqkv.data(), dout.data(), qkv.data(), r.out.data(), r.lse.data(), cu.data(),
                                  n_seq, N, H, D);
  return r;
}

// T = float or bf16 storage; inputs are converted from the fp32 vectors (exactly, when already bf16-rounded).
template <class T>
SoftmaxResult run_cuda(const std::vector<float>& qkv, const std::vector<float>& dout, const std::vector<float>& prefill,
                const std::vector<int32_t>& cu, int H, int D) {
  const int n_seq = int(cu.size()) - 1;
  const int64_t N = cu.back();
  DeviceVector<int32_t> cu_d(cu);
  DeviceVector<T> qkv_d(to_storage<T>(qkv)), dout_d(to_storage<T>(dout)), out_d(N * H * D), dqkv_d(to_storage<T>(prefill));
  DeviceVector<float> lse_d(H * N);
  cuda::attention_softmax_forward(out_d.data(), lse_d.data(), qkv_d.data(), cu_d.data(), n_seq, N, H, D, nullptr);
  cuda::attention_softmax_backward(dqkv_d.data(), dout_d.data(), qkv_d.data(), out_d.data(), lse_d.data(),
                                   cu_d.data(), n_seq, N, H, D, nullptr);
  return {from_storage(out_d.to_host()), lse_d.to_host(), from_storage(dqkv_d.to_host())};
}

void compare(const std::string& name, const SoftmaxResult& got, const SoftmaxResult& want,
             const std::vector<float>& prefill, int64_t C, double tol, double lse_tol) {
  check_close(name + " out", got.out, want.out, tol);
  check_close(name + " lse", got.lse, want.lse, lse_tol);
  const auto dg = minus(got.dqkv, prefill), dw = minus(want.dqkv, prefill);
  const char* part[] = {" dq", " dk", " dv"};
  for (int p = 0; p < 3; ++p)
    check_close(name + part[p], columns(dg, 3 * C, p * C, C), columns(dw, 3 * C, p * C, C), tol);
}

}  // namespace

TEST_CASE("cuda attention_softmax forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][attention]") {
  std::vector<int32_t> many{0};  // 20 documents of lengths 1..9
  for (int i = 0; i < 20; ++i) many.push_back(many.back() + 1 + (7 * i) % 9);
  const struct {
    std::string name;
    std::vector<int32_t> cu_seqlens;
  } packings[] = {{"{100,1,37,130,65}", {0, 100, 101, 138, 268, 333}}, {"20 docs of 1..9", many}};
  const struct {
    int H, D;
  } heads[] = {{3, 64}, {3, 32}, {3, 48}, {2, 128}};

  for (const auto& pk : packings) {
    for (const auto& hd : heads) {
      const int H = hd.H, D = hd.D;
      const int64_t N = pk.cu_seqlens.back(), C = int64_t(H) * D;
      const std::string name = pk.name + " H=" + std::to_string(H) + " D=" + std::to_string(D);
      auto qkv = random_normal<float>(N * 3 * C, 1);
      auto dout = random_normal<float>(N * C, 2);
      auto prefill = round_bf16(random_normal<float>(N * 3 * C, 3));  // non-zero: backward accumulates

      compare(name + " fp32", run_cuda<float>(qkv, dout, prefill, pk.cu_seqlens, H, D),
              run_cpu(qkv, dout, prefill, pk.cu_seqlens, H, D), prefill, C, 2e-5, 2e-5);

      auto qkv_b = round_bf16(qkv), dout_b = round_bf16(dout);
      compare(name + " bf16", run_cuda<bf16>(qkv_b, dout_b, prefill, pk.cu_seqlens, H, D),
              run_cpu(qkv_b, dout_b, prefill, pk.cu_seqlens, H, D), prefill, C, 2e-2, 2e-5);
    }
  }
}
