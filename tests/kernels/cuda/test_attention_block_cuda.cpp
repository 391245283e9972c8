// CUDA Ring Attention block ops against the CPU ones (themselves checked against the packed kernel in
// tests/kernels/test_attention_block.cpp), op by op on the same inputs. The queries are rows [70, 200) of a packed
// batch of 260 tokens whose documents cross the query and key boundaries; the key blocks lie before them, on them
// (the causal diagonal) and after them (fully masked: the state must not change). Several tiles each way (64-row
// forward tiles, 32-row backward tiles), the q part read with the qkv stride, heads D = 29 (not a multiple of a
// warp), 64 and the largest D = 128.
// Tolerance 2e-5, as the packed CUDA attention kernel (tests/kernels/cuda/test_attention_softmax_cuda.cpp): different
// summation orders and exp implementations. Backward must be bit-identical run to run (no atomics).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/attention_block.h"
#include "kernels/cuda/attention_block.h"
#include "support/assert_close.h"
#include "support/attention_blocks.h"
#include "support/device_vector.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

constexpr double kTol = 2e-5;

struct State {
  std::vector<float> m, l, acc;
};

struct BlockProblem {
  int H, D;
  int64_t C, q_begin = 70, n = 130;  // the query rows
  std::vector<int32_t> cu{0, 40, 41, 150, 225, 260};
  std::vector<int64_t> docs;  // of the query rows
  std::vector<float> qkv, dout;

  BlockProblem(int H_, int D_) : H(H_), D(D_), C(int64_t(H_) * D_) {
    const std::vector<int64_t> all = document_begins(cu);
    docs.assign(all.begin() + q_begin, all.begin() + q_begin + n);
    qkv = random_normal<float>(cu.back() * 3 * C, 1, 0.5);
    dout = random_normal<float>(n * C, 2);
  }
  const float* q() const { return qkv.data() + q_begin * 3 * C; }
  int64_t ld_q() const { return 3 * C; }
};

// The state after the first key block [0, 70) on the CPU: a start where every row has seen keys (or, for the rows of
// documents that begin inside the queries, none yet).
State start_state(const BlockProblem& p) {
  State s{std::vector<float>(p.H * p.n, -INFINITY), std::vector<float>(p.H * p.n, 0.0f),
          std::vector<float>(p.n * p.C, 0.0f)};
  const auto kv = key_block(p.qkv, 0, p.q_begin, p.C);
  cpu::attention_block_forward(s.m.data(), s.l.data(), s.acc.data(), p.q(), p.ld_q(), p.n, p.q_begin, p.docs.data(),
                               kv.data(), p.q_begin, 0, p.H, p.D);
  return s;
}

// m is -inf for rows that have seen no key yet: those must match exactly, the finite rest within the tolerance (a
// normalisation by an infinite reference would hide every error).
void check_state(const std::string& name, const State& got, const State& want) {
  std::vector<float> got_m = got.m, want_m = want.m;
  for (std::size_t i = 0; i < want_m.size(); ++i)
    if (std::isinf(want_m[i])) {
      CHECK(got_m[i] == want_m[i]);
      got_m[i] = want_m[i] = 0.0f;
    }
  check_close(name + " m", got_m, want_m, kTol);
  check_close(name + " l", got.l, want.l, kTol);
  check_close(name + " acc", got.acc, want.acc, kTol);
}

// Folds key rows [b, e) into `s` on the device and on the host; compares, and returns the device's state.
State fold_both(const std::string& name, const BlockProblem& p, const State& s, int64_t b, int64_t e) {
  const auto kv = key_block(p.qkv, b, e, p.C);
  State want = s;
  cpu::attention_block_forward(want.m.data(), want.l.data(), want.acc.data(), p.q(), p.ld_q(), p.n, p.q_begin,
                               p.docs.data(), kv.data(), e - b, b, p.H, p.D);
  DeviceVector<float> m(s.m), l(s.l), acc(s.acc), q(p.qkv), kv_d(kv);
  DeviceVector<int64_t> docs(p.docs);
  cuda::attention_block_forward(m.data(), l.data(), acc.data(), q.data() + p.q_begin * 3 * p.C, p.ld_q(), p.n,
                                p.q_begin, docs.data(), kv_d.data(), e - b, b, p.H, p.D, nullptr);
  const State got{m.to_host(), l.to_host(), acc.to_host()};
  check_state(name, got, want);
  return got;
}

struct Gradients {
  std::vector<float> dqkv, dkv;
};

// Backward of key rows [b, e) on the device, accumulating onto non-zero gradients.
Gradients backward_cuda(const BlockProblem& p, const std::vector<float>& lse, const std::vector<float>& delta,
                        const Gradients& start, int64_t b, int64_t e) {
  const auto kv = key_block(p.qkv, b, e, p.C);
  DeviceVector<float> q(p.qkv), dout(p.dout), lse_d(lse), delta_d(delta), kv_d(kv), dqkv(start.dqkv), dkv(start.dkv);
  DeviceVector<int64_t> docs(p.docs);
  const int64_t q0 = p.q_begin * 3 * p.C;  // the queries' first row of qkv and dqkv
  cuda::attention_block_backward(dqkv.data() + q0, 3 * p.C, dkv.data(), q.data() + q0, p.ld_q(), p.n, p.q_begin,
                                 docs.data(), dout.data(), lse_d.data(), delta_d.data(), kv_d.data(), e - b, b, p.H,
                                 p.D, nullptr);
  return {dqkv.to_host(), dkv.to_host()};
}

}  // namespace

TEST_CASE("cuda attention_block ops equal the CPU ops", "[cuda][attention]") {
  const struct {
    int H, D;
  } heads[] = {{3, 29}, {2, 64}, {2, 128}};
  for (const auto& hd : heads) {
    const BlockProblem p(hd.H, hd.D);
    const std::string name = "H=" + std::to_string(p.H) + " D=" + std::to_string(p.D);
    const int64_t q_end = p.q_begin + p.n, N = p.cu.back();

    // forward: from the empty state, then folding the diagonal block into a state that has seen earlier keys, then
    // a block entirely in the queries' future
    const State empty{std::vector<float>(p.H * p.n, -INFINITY), std::vector<float>(p.H * p.n, 0.0f),
                      std::vector<float>(p.n * p.C, 0.0f)};
    fold_both(name + " first block", p, empty, 0, p.q_begin);
    fold_both(name + " diagonal block", p, start_state(p), p.q_begin, q_end);
    // The CPU's state after the diagonal block, which finish, delta and backward below start from too.
    State folded = start_state(p);
    {
      const auto kv = key_block(p.qkv, p.q_begin, q_end, p.C);
      cpu::attention_block_forward(folded.m.data(), folded.l.data(), folded.acc.data(), p.q(), p.ld_q(), p.n,
                                   p.q_begin, p.docs.data(), kv.data(), p.n, p.q_begin, p.H, p.D);
    }
    const State after = fold_both(name + " future block", p, folded, q_end, N);  // the device leaves it unchanged
    CHECK(after.m == folded.m);
    CHECK(after.l == folded.l);
    CHECK(after.acc == folded.acc);

    // finish and delta
    std::vector<float> out(p.n * p.C), lse(p.H * p.n), delta(p.H * p.n);
    cpu::attention_block_finish(out.data(), lse.data(), folded.m.data(), folded.l.data(), folded.acc.data(), p.n, p.H,
                                p.D);
    cpu::attention_block_delta(delta.data(), out.data(), p.dout.data(), p.n, p.H, p.D);
    {
      DeviceVector<float> m(folded.m), l(folded.l), acc(folded.acc), out_d(out.size()), lse_d(lse.size()),
          delta_d(delta.size()), dout(p.dout);
      cuda::attention_block_finish(out_d.data(), lse_d.data(), m.data(), l.data(), acc.data(), p.n, p.H, p.D,
                                   nullptr);
      check_close(name + " out", out_d.to_host(), out, kTol);
      check_close(name + " lse", lse_d.to_host(), lse, kTol);
      cuda::attention_block_delta(delta_d.data(), out_d.data(), dout.data(), p.n, p.H, p.D, nullptr);
      check_close(name + " delta", delta_d.to_host(), delta, kTol);
    }

    // backward of each key block onto non-zero gradients: dq through the qkv stride, dk/dv of the block
    for (const auto& [b, e] : {std::pair<int64_t, int64_t>{0, p.q_begin}, {p.q_begin, q_end}, {q_end, N}}) {
      const std::string block = name + " keys [" + std::to_string(b) + ", " + std::to_string(e) + ")";
      const Gradients start{random_normal<float>(N * 3 * p.C, 3, 0.1), random_normal<float>((e - b) * 2 * p.C, 4, 0.1)};
      Gradients want = start;
      const auto kv = key_block(p.qkv, b, e, p.C);
      cpu::attention_block_backward(want.dqkv.data() + p.q_begin * 3 * p.C, 3 * p.C, want.dkv.data(), p.q(), p.ld_q(),
                                    p.n, p.q_begin, p.docs.data(), p.dout.data(), lse.data(), delta.data(), kv.data(),
                                    e - b, b, p.H, p.D);
      const Gradients got = backward_cuda(p, lse, delta, start, b, e);
      check_close(block + " dqkv", got.dqkv, want.dqkv, kTol);
      check_close(block + " dkv", got.dkv, want.dkv, kTol);
      const Gradients again = backward_cuda(p, lse, delta, start, b, e);
      CHECK(again.dqkv == got.dqkv);
      CHECK(again.dkv == got.dkv);
      if (b >= q_end) {  // the future block contributes nothing
        CHECK(got.dqkv == start.dqkv);
        CHECK(got.dkv == start.dkv);
      }
    }
  }
}
