#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/attention_softmax.h"
#include "support/assert_close.h"
#include "support/attention_blocks.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

// All queries of the batch against its key blocks, split at boundaries that cut documents and tiles, folded in a
// shuffled order: the same as the packed kernel on the whole batch.
TEST_CASE("attention_block over shuffled key blocks equals attention_softmax", "[kernels][attention]") {
  const std::vector<int32_t> cu{0, 1, 2, 67, 200, 213};
  const std::vector<int64_t> bounds{0, 37, 101, 102, 170, 213};
  const std::vector<int> order{3, 0, 4, 2, 1};
  const int64_t N = cu.back();
  const std::vector<int64_t> docs = document_begins(cu);
  for (int D : {8, 29}) {
    const int H = 3;
    const int64_t C = int64_t(H) * D;
    const std::string name = "D=" + std::to_string(D);
    const auto qkv = random_normal<float>(N * 3 * C, 1);
    const auto dout = random_normal<float>(N * C, 2);

    std::vector<float> out_ref(N * C), lse_ref(H * N), dqkv_ref(N * 3 * C, 0.0f);
    cpu::attention_softmax_forward(out_ref.data(), lse_ref.data(), qkv.data(), cu.data(), int(cu.size()) - 1, N, H,
                                   D);
    cpu::attention_softmax_backward(dqkv_ref.data(), dout.data(), qkv.data(), out_ref.data(), lse_ref.data(),
                                    cu.data(), int(cu.size()) - 1, N, H, D);

    std::vector<float> m(H * N, -INFINITY), l(H * N, 0.0f), acc(N * C, 0.0f);
    for (int o : order) {
      const auto kv = key_block(qkv, bounds[o], bounds[o + 1], C);
      cpu::attention_block_forward(m.data(), l.data(), acc.data(), qkv.data(), 3 * C, N, 0, docs.data(), kv.data(),
                                   bounds[o + 1] - bounds[o], bounds[o], H, D);
    }
    std::vector<float> out(N * C), lse(H * N), delta(H * N), dqkv(N * 3 * C, 0.0f);
    cpu::attention_block_finish(out.data(), lse.data(), m.data(), l.data(), acc.data(), N, H, D);
    check_close(name + " out", out, out_ref, 1e-5);
    check_close(name + " lse", lse, lse_ref, 1e-5);

    cpu::attention_block_delta(delta.data(), out.data(), dout.data(), N, H, D);
    for (int o : order) {
      const int64_t b = bounds[o], n_k = bounds[o + 1] - b;
      const auto kv = key_block(qkv, b, bounds[o + 1], C);
      std::vector<float> dkv(n_k * 2 * C, 0.0f);
      cpu::attention_block_backward(dqkv.data(), 3 * C, dkv.data(), qkv.data(), 3 * C, N, 0, docs.data(),
                                    dout.data(), lse.data(), delta.data(), kv.data(), n_k, b, H, D);
      for (int64_t i = 0; i < n_k; ++i)
        for (int64_t c = 0; c < 2 * C; ++c) dqkv[(b + i) * 3 * C + C + c] += dkv[i * 2 * C + c];
    }
    check_close(name + " dqkv", dqkv, dqkv_ref, 1e-5);
  }
}

// Queries at positions [0, 50) against keys at [100, 137): all in their future, so nothing changes.
TEST_CASE("attention_block leaves the state alone for a fully masked block", "[kernels][attention]") {
  const int H = 2, D = 16;
  const int64_t C = H * D, n = 50, n_k = 37;
  const auto q = random_normal<float>(n * C, 3);
  const auto kv = random_normal<float>(n_k * 2 * C, 4);
  const std::vector<int64_t> docs(n, 0);
  auto m = random_normal<float>(H * n, 5), acc = random_normal<float>(n * C, 6);
  std::vector<float> l(H * n, 2.0f);
  const auto m0 = m, l0 = l, acc0 = acc;
  cpu::attention_block_forward(m.data(), l.data(), acc.data(), q.data(), C, n, 0, docs.data(), kv.data(), n_k, 100,
                               H, D);
  CHECK(m == m0);
  CHECK(l == l0);
  CHECK(acc == acc0);
}
