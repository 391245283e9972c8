// CUDA token + position embedding against the CPU kernel, on a packed batch of uneven sequences (one-token
// sequences included) with a very frequent token, with and without position embeddings.
// Tolerances: exact (0) for fp32 and for the fp32 parameter gradients: the forward is one IEEE add per element, and
// the backward adds each run of equal ids onto the gradient row in token order, the CPU kernel's order. bf16 output:
// rounded once from the exact fp32 sum, at most half a bf16 ulp (2^-8 of the value): 4e-3. bf16 dout is rounded
// before the CPU runs, so the gradients stay exact.
// The gradients must also be bit-identical run to run.
#include <cstring>

#include <catch2/catch.hpp>

#include "kernels/cpu/embedding.h"
#include "kernels/cuda/embedding.h"
#include "kernels/shared/bf16.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("cuda embedding forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][embedding]") {
  // C: below one 64-channel strip, and two strips plus a partial one. The second batch has more entries than the
  // scatter grid has warps.
  const int C = GENERATE(50, 130);
  const std::vector<int32_t> cu_seqlens = GENERATE(std::vector<int32_t>{0, 1, 700, 701, 1900, 3001},
                                                   std::vector<int32_t>{0, 5000, 5001, 12000, 20011});
  const bool with_positions = GENERATE(true, false);
  CAPTURE(C, cu_seqlens, with_positions);

  const int V = 97;
  const int64_t N = cu_seqlens.back();
  std::vector<int32_t> tokens(N), positions(N);
  auto u = random_uniform<double>(N, 40, 0.0, 1.0);
  for (int64_t t = 0; t < N; ++t) {
    // a third of the tokens are id 7 (one long run after sorting), the rest spread over [0, V)
    tokens[t] = u[t] < 0.33 ? 7 : static_cast<int32_t>(u[t] * V) % V;
  }
  int P = 0;
  for (std::size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    for (int32_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t) positions[t] = t - cu_seqlens[s];
    P = std::max(P, cu_seqlens[s + 1] - cu_seqlens[s]);
  }
  auto wte = random_normal<float>(static_cast<std::size_t>(V) * C, 41);
  auto wpe = random_normal<float>(static_cast<std::size_t>(P) * C, 42);
  auto dout = random_normal<float>(N * C, 43);
  // non-zero starting gradients: the backward accumulates
  auto dwte0 = random_normal<float>(static_cast<std::size_t>(V) * C, 44);
  auto dwpe0 = random_normal<float>(static_cast<std::size_t>(P) * C, 45);

  DeviceVector<int32_t> tokens_d(tokens), positions_d(positions);
  DeviceVector<float> wte_d(wte), wpe_d(wpe);
  const float* wpe_arg = with_positions ? wpe_d.data() : nullptr;

  std::vector<float> y(N * C);
  cpu::embedding_forward(y.data(), tokens.data(), positions.data(), wte.data(), with_positions ? wpe.data() : nullptr,
                         N, C);
  DeviceVector<float> y_d(N * C);
  cuda::embedding_forward(y_d.data(), tokens_d.data(), positions_d.data(), wte_d.data(), wpe_arg, N, C, nullptr);
  check_close("embedding forward fp32", y_d.to_host(), y, 0.0);
  DeviceVector<bf16> yb_d(N * C);
  cuda::embedding_forward(yb_d.data(), tokens_d.data(), positions_d.data(), wte_d.data(), wpe_arg, N, C, nullptr);
  check_close("embedding forward bf16", to_f32(yb_d.to_host()), y, 4e-3);

  // backward with dout as stored in T; the CPU runs on the same (rounded) values
  auto check_backward = [&](const std::vector<float>& dout_f32, auto& dout_d, const char* name) {
    std::vector<float> dwte = dwte0, dwpe = dwpe0;
    cpu::embedding_backward(dwte.data(), with_positions ? dwpe.data() : nullptr, dout_f32.data(), tokens.data(),
                            positions.data(), N, C);
    std::vector<float> run[2][2];
    for (int r = 0; r < 2; ++r) {  // twice: the gradients must be bit-identical
      DeviceVector<float> dwte_d(dwte0), dwpe_d(dwpe0);
      cuda::embedding_backward(dwte_d.data(), with_positions ? dwpe_d.data() : nullptr, dout_d.data(),
                               tokens_d.data(), positions_d.data(), N, C, nullptr);
      run[r][0] = dwte_d.to_host();
      run[r][1] = dwpe_d.to_host();
    }
    INFO(name);
    check_close("embedding dwte", run[0][0], dwte, 0.0);
    check_close("embedding dwpe", run[0][1], dwpe, 0.0);  // untouched (== dwpe0) without positions
    CHECK(same_bits(run[0][0], run[1][0]));
    CHECK(same_bits(run[0][1], run[1][1]));
  };
  DeviceVector<float> dout_d(dout);
  check_backward(dout, dout_d, "fp32 dout");
  DeviceVector<bf16> doutb_d(to_bf16(dout));
  check_backward(to_f32(to_bf16(dout)), doutb_d, "bf16 dout");
}
