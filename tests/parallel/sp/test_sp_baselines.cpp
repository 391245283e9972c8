// The sequence-parallel baselines (DeepSpeed-Ulysses, Ring Attention) against the single-rank kernels on the whole
// batch. Every rank builds the same global batch, runs the kernel on all of it, and compares its own token shard.
// Each [mpi] case runs as a 1-rank world (ctest) and under mpirun with 2 and 4 ranks. Checks use CHECK, never
// REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "kernels/cpu/attention_linear.h"
#include "kernels/cpu/attention_softmax.h"
#include "parallel/comm/communicator.h"
#include "parallel/sp/ring_attention.h"
#include "kernels/cpu/attention_block.h"
#include "parallel/sp/ulysses.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;
using Catch::Matchers::Contains;

namespace {

constexpr double kTol = 1e-5;
constexpr int kChunk = 16;  // linear attention chunk: several chunks per document

// One global batch, identical on every rank, with the single-rank kernels' results on all of it.
struct Problem {
  std::string name;
  std::vector<int32_t> cu;
  int H, D;
  std::vector<float> qkv, dout, slopes;
  // references over the whole batch
  std::vector<float> out, lse, dqkv;

  int64_t N() const { return cu.back(); }
  int64_t C() const { return int64_t(H) * D; }
  SpBatch batch() const { return {cu.data(), int(cu.size()) - 1, N(), H, D}; }
};

enum class Attention { softmax, linear };

Problem make_problem(const std::vector<int>& lengths, int H, int D, Attention kind) {
  Problem p;
  p.name = (kind == Attention::softmax ? "softmax docs {" : "linear docs {");
  p.cu = {0};
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    p.cu.push_back(p.cu.back() + lengths[i]);
    p.name += std::to_string(lengths[i]) + (i + 1 == lengths.size() ? "}" : ",");
  }
  p.name += " H=" + std::to_string(H) + " D=" + std::to_string(D);
  p.H = H;
  p.D = D;
  const int64_t N = p.N(), C = p.C();
  p.qkv = random_normal<float>(N * 3 * C, 11);
  p.dout = random_normal<float>(N * C, 12);
  p.slopes = random_uniform<float>(H, 13, 0.05, 1.0);
  p.out.assign(N * C, 0.0f);
  p.dqkv.assign(N * 3 * C, 0.0f);
  const int n_seq = int(lengths.size());
  if (kind == Attention::softmax) {
    p.lse.assign(H * N, 0.0f);
    cpu::attention_softmax_forward(p.out.data(), p.lse.data(), p.qkv.data(), p.cu.data(), n_seq, N, H, D);
    cpu::attention_softmax_backward(p.dqkv.data(), p.dout.data(), p.qkv.data(), p.out.data(), p.lse.data(),
                                    p.cu.data(), n_seq, N, H, D);
  } else {
    cpu::attention_linear_forward(p.out.data(), nullptr, p.qkv.data(), p.slopes.data(), nullptr, p.cu.data(), n_seq,
                                  N, H, D, kChunk);
    cpu::attention_linear_backward(p.dqkv.data(), nullptr, p.dout.data(), nullptr, p.qkv.data(), p.slopes.data(),
                                   nullptr, p.cu.data(), n_seq, N, H, D, kChunk);
  }
  return p;
}

// Rows [begin, end) of a (rows, width) matrix.
std::vector<float> rows(const std::vector<float>& x, int64_t width, int64_t begin, int64_t end) {
  return {x.begin() + begin * width, x.begin() + end * width};
}

// Columns [begin, end) of an (H, N) matrix such as lse.
std::vector<float> columns(const std::vector<float>& x, int H, int64_t N, int64_t begin, int64_t end) {
  std::vector<float> y;
  for (int h = 0; h < H; ++h) y.insert(y.end(), x.begin() + h * N + begin, x.begin() + h * N + end);
  return y;
}

// check_close on this rank's shard, and the worst normalised error over the group printed by its rank 0 (every
// rank calls this in the same order, so the allgather lines up).
void check_shard(Communicator& comm, const std::string& name, const std::vector<float>& got,
                 const std::vector<float>& ref, double tol = kTol) {
  check_close(name, got, ref, tol);
  const double mine = got.size() == ref.size() ? compare(got.data(), ref.data(), got.size()).normalised : 1.0;
  std::vector<double> all(comm.size());
  comm.allgather(&mine, all.data(), 1, CommType::f64);
  if (comm.rank() == 0)
    std::printf("T=%d %-48s max normalised error %.2e\n", comm.size(), name.c_str(),
                *std::max_element(all.begin(), all.end()));
}

// The shard of this rank: [begin, end).
struct Shard {
  int64_t begin, end;
  int64_t n() const { return end - begin; }
};
Shard my_shard(Communicator& comm, int64_t N) {
  return {shard_begin(N, comm.size(), comm.rank()), shard_begin(N, comm.size(), comm.rank() + 1)};
}

// {37, 1, 100, 5, 64}: documents span ranks at 2 and 4 ranks; one document over all ranks; and N = 3, which leaves
// a rank with no tokens at 4 ranks.
const std::vector<std::vector<int>> kPackings = {{37, 1, 100, 5, 64}, {203}, {2, 1}};

void run_ulysses(Communicator& comm, const Problem& p, Attention kind) {
  const Shard sh = my_shard(comm, p.N());
  const int64_t C = p.C();
  const std::vector<float> qkv = rows(p.qkv, 3 * C, sh.begin, sh.end), dout = rows(p.dout, C, sh.begin, sh.end);
  std::vector<float> out(sh.n() * C), dqkv(sh.n() * 3 * C, 0.0f);
  UlyssesCache cache(cpu_backend());
  if (kind == Attention::softmax) {
    ulysses_softmax_forward(comm, out.data(), cache, qkv.data(), p.batch());
    ulysses_softmax_backward(comm, dqkv.data(), dout.data(), cache, p.batch());
  } else {
    ulysses_linear_forward(comm, out.data(), cache, qkv.data(), p.slopes.data(), p.batch(), kChunk);
    ulysses_linear_backward(comm, dqkv.data(), dout.data(), cache, p.slopes.data(), p.batch(), kChunk);
  }
  check_shard(comm, "ulysses " + p.name + " out", out, rows(p.out, C, sh.begin, sh.end));
  check_shard(comm, "ulysses " + p.name + " dqkv", dqkv, rows(p.dqkv, 3 * C, sh.begin, sh.end));
}

void run_ring(Communicator& comm, const Problem& p) {
  const Shard sh = my_shard(comm, p.N());
  const int64_t C = p.C();
  const std::vector<float> qkv = rows(p.qkv, 3 * C, sh.begin, sh.end), dout = rows(p.dout, C, sh.begin, sh.end);
  std::vector<float> out(sh.n() * C), lse(p.H * sh.n()), dqkv(sh.n() * 3 * C, 0.0f);
  RingCache cache(cpu_backend());
  ring_attention_forward(comm, cache, out.data(), lse.data(), qkv.data(), p.batch());
  ring_attention_backward(comm, cache, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), p.batch());
  check_shard(comm, "ring " + p.name + " out", out, rows(p.out, C, sh.begin, sh.end));
  check_shard(comm, "ring " + p.name + " lse", lse, columns(p.lse, p.H, p.N(), sh.begin, sh.end));
  check_shard(comm, "ring " + p.name + " dqkv", dqkv, rows(p.dqkv, 3 * C, sh.begin, sh.end));
}

}  // namespace

TEST_CASE("Ulysses softmax attention equals the single-rank kernel", "[sp][mpi]") {
  for (const auto& lengths : kPackings)
    for (int D : {8, 16}) run_ulysses(world(), make_problem(lengths, 4, D, Attention::softmax), Attention::softmax);
}

TEST_CASE("Ulysses linear attention equals the single-rank kernel", "[sp][mpi]") {
  for (const auto& lengths : kPackings)
    for (int D : {8, 16}) run_ulysses(world(), make_problem(lengths, 4, D, Attention::linear), Attention::linear);
}

TEST_CASE("Ring Attention equals the single-rank softmax kernel", "[sp][mpi]") {
  for (const auto& lengths : kPackings)
    for (int D : {8, 16}) run_ring(world(), make_problem(lengths, 4, D, Attention::softmax));
}

// bf16 activations travel as bf16 (half the bytes) and the heads run the bf16 kernels, so out is the bf16 kernel's
// on the whole batch, bit for bit (heads are independent). So is dqkv when backward starts from zeros, as in the model:
// this rank's heads' gradient is rounded to bf16 before it travels back, and adding it to zero rounds nothing more.
// Onto a non-zero dqkv that addition rounds a second time: within two bf16 steps.
TEST_CASE("Ulysses on bf16 activations sends bf16 and equals the bf16 kernel", "[sp][mpi]") {
  Communicator& comm = world();
  Backend& cpu = cpu_backend();
  for (Attention kind : {Attention::softmax, Attention::linear}) {
    const Problem p = make_problem(kPackings[0], 4, 16, kind);
    const int64_t N = p.N(), C = p.C();
    const int n_seq = int(p.cu.size()) - 1;
    const std::vector<bf16> qkv = to_bf16(p.qkv), dout = to_bf16(p.dout);
    for (bool zero_seed : {true, false}) {
      const std::vector<bf16> seed = to_bf16(zero_seed ? std::vector<float>(N * 3 * C, 0.0f)
                                                       : random_normal<float>(N * 3 * C, 22));
      std::vector<bf16> want_out(N * C), want_dqkv = seed;
      std::vector<float> lse(p.H * N);
      if (kind == Attention::softmax) {
        cpu.attention_softmax_forward(want_out.data(), lse.data(), qkv.data(), p.cu.data(), n_seq, N, p.H, p.D);
        cpu.attention_softmax_backward(want_dqkv.data(), dout.data(), qkv.data(), want_out.data(), lse.data(),
                                       p.cu.data(), n_seq, N, p.H, p.D);
      } else {
        cpu.attention_linear_forward(want_out.data(), nullptr, qkv.data(), p.slopes.data(), nullptr, p.cu.data(),
                                     n_seq, N, p.H, p.D, kChunk);
        cpu.attention_linear_backward(want_dqkv.data(), nullptr, dout.data(), nullptr, qkv.data(), p.slopes.data(),
                                      nullptr, p.cu.data(), n_seq, N, p.H, p.D, kChunk);
      }

      const Shard sh = my_shard(comm, N);
      auto shard = [&](const std::vector<bf16>& x, int64_t width) {
        return to_f32(std::vector<bf16>(x.begin() + sh.begin * width, x.begin() + sh.end * width));
      };
      const std::vector<bf16> my_qkv = to_bf16(shard(qkv, 3 * C)), my_dout = to_bf16(shard(dout, C));
      std::vector<bf16> out(sh.n() * C), dqkv = to_bf16(shard(seed, 3 * C));
      UlyssesCacheOf<bf16> cache(cpu);
      comm.barrier();
      comm.reset_counters();
      if (kind == Attention::softmax) {
        ulysses_softmax_forward(comm, out.data(), cache, my_qkv.data(), p.batch());
        ulysses_softmax_backward(comm, dqkv.data(), my_dout.data(), cache, p.batch());
      } else {
        ulysses_linear_forward(comm, out.data(), cache, my_qkv.data(), p.slopes.data(), p.batch(), kChunk);
        ulysses_linear_backward(comm, dqkv.data(), my_dout.data(), cache, p.slopes.data(), p.batch(), kChunk);
      }
      const SpTraffic bytes = ulysses_traffic(N, comm.size(), comm.rank(), p.H, p.D, 2);
      CHECK(comm.counters().total_bytes() == bytes.forward + bytes.backward);
      const std::string name = "ulysses bf16 " + p.name + (zero_seed ? "" : " onto dqkv");
      check_shard(comm, name + " out", to_f32(out), shard(want_out, C), 0.0);
      check_shard(comm, name + " dqkv", to_f32(dqkv), shard(want_dqkv, 3 * C), zero_seed ? 0.0 : 2e-2);
    }
  }
}

// Ring Attention on bf16 activations: the K/V blocks travel as bf16 (half their bytes; dK/dV stay fp32) and are
// widened on arrival, so the result is bit for bit the fp32 ring on the widened activations, rounded once — what the
// model's fp32 copies (WideActivations) gave before.
TEST_CASE("Ring Attention on bf16 activations sends bf16 K/V and equals the fp32 ring rounded once", "[sp][mpi]") {
  Communicator& comm = world();
  for (const auto& lengths : {kPackings[0], kPackings[2]}) {
    const Problem p = make_problem(lengths, 4, 16, Attention::softmax);
    const Shard sh = my_shard(comm, p.N());
    const int64_t C = p.C();
    const std::vector<bf16> qkv = to_bf16(rows(p.qkv, 3 * C, sh.begin, sh.end)),
                            dout = to_bf16(rows(p.dout, C, sh.begin, sh.end)),
                            seed = to_bf16(random_normal<float>(sh.n() * 3 * C, 23 + comm.rank()));

    // fp32 ring on the exact fp32 copies
    std::vector<float> out32(sh.n() * C), lse32(p.H * sh.n()), dqkv32 = to_f32(seed);
    RingCache cache(cpu_backend());
    ring_attention_forward(comm, cache, out32.data(), lse32.data(), to_f32(qkv).data(), p.batch());
    const std::vector<bf16> out32_rounded = to_bf16(out32);  // backward reads the layer's bf16 out
    ring_attention_backward(comm, cache, dqkv32.data(), to_f32(dout).data(), to_f32(qkv).data(),
                            to_f32(out32_rounded).data(), lse32.data(), p.batch());

    std::vector<bf16> out(sh.n() * C), dqkv = seed;
    std::vector<float> lse(p.H * sh.n());
    comm.barrier();
    comm.reset_counters();
    ring_attention_forward(comm, cache, out.data(), lse.data(), qkv.data(), p.batch());
    ring_attention_backward(comm, cache, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), p.batch());
    const SpTraffic bytes = ring_attention_traffic(p.N(), comm.size(), comm.rank(), p.H, p.D, 2);
    CHECK(comm.counters().total_bytes() == bytes.forward + bytes.backward);
    CHECK(to_f32(out) == to_f32(out32_rounded));
    CHECK(lse == lse32);
    CHECK(to_f32(dqkv) == to_f32(to_bf16(dqkv32)));
  }
}

TEST_CASE("both baselines use group-relative ranks (strided subgroups)", "[sp][mpi]") {
  // Groups {0, 2, ...} and {1, 3, ...}: a ring over global rank +-1 would talk to the other group.
  Communicator* group = world().split(world().rank() % 2, world().rank());
  const Problem p = make_problem(kPackings[0], 4, 8, Attention::softmax);
  run_ulysses(*group, p, Attention::softmax);
  run_ring(*group, p);
}

TEST_CASE("Ulysses names H and T when the heads do not divide", "[sp][mpi]") {
  Communicator& comm = world();
  const Problem p = make_problem(kPackings[0], 3, 8, Attention::softmax);
  if (3 % comm.size() == 0) {  // a 1-rank group takes any head count
    run_ulysses(comm, p, Attention::softmax);
    return;
  }
  const Shard sh = my_shard(comm, p.N());
  std::vector<float> qkv = rows(p.qkv, 3 * p.C(), sh.begin, sh.end), out(sh.n() * p.C());
  UlyssesCache cache(cpu_backend());
  const std::string t = "T=" + std::to_string(comm.size());
  CHECK_THROWS_AS(ulysses_softmax_forward(comm, out.data(), cache, qkv.data(), p.batch()), RuntimeError);
  CHECK_THROWS_WITH(ulysses_softmax_forward(comm, out.data(), cache, qkv.data(), p.batch()),
                    Contains("H=3") && Contains(t));
  CHECK_THROWS_WITH(ulysses_linear_forward(comm, out.data(), cache, qkv.data(), p.slopes.data(), p.batch(), kChunk),
                    Contains("H=3") && Contains(t));
}

TEST_CASE("a 1-rank group equals the kernels bit for bit, accumulating into dqkv", "[sp][mpi]") {
  Communicator* alone = world().split(world().rank(), 0);
  REQUIRE(alone->size() == 1);
  for (Attention kind : {Attention::softmax, Attention::linear}) {
    const Problem p = make_problem(kPackings[0], 4, 16, kind);
    const std::vector<float> seed = random_normal<float>(p.dqkv.size(), 21);  // backward must add to it
    std::vector<float> ref_dqkv = seed;
    const int n_seq = int(p.cu.size()) - 1;
    if (kind == Attention::softmax)
      cpu::attention_softmax_backward(ref_dqkv.data(), p.dout.data(), p.qkv.data(), p.out.data(), p.lse.data(),
                                      p.cu.data(), n_seq, p.N(), p.H, p.D);
    else
      cpu::attention_linear_backward(ref_dqkv.data(), nullptr, p.dout.data(), nullptr, p.qkv.data(),
                                     p.slopes.data(), nullptr, p.cu.data(), n_seq, p.N(), p.H, p.D, kChunk);

    std::vector<float> out(p.out.size()), dqkv = seed;
    UlyssesCache cache(cpu_backend());
    if (kind == Attention::softmax) {
      ulysses_softmax_forward(*alone, out.data(), cache, p.qkv.data(), p.batch());
      ulysses_softmax_backward(*alone, dqkv.data(), p.dout.data(), cache, p.batch());
      CHECK(std::vector<float>(cache.lse.data(), cache.lse.data() + p.lse.size()) == p.lse);
    } else {
      ulysses_linear_forward(*alone, out.data(), cache, p.qkv.data(), p.slopes.data(), p.batch(), kChunk);
      ulysses_linear_backward(*alone, dqkv.data(), p.dout.data(), cache, p.slopes.data(), p.batch(), kChunk);
    }
    CHECK(out == p.out);
    CHECK(dqkv == ref_dqkv);

    if (kind == Attention::softmax) {
      std::vector<float> lse(p.lse.size());
      dqkv = seed;
      RingCache ring(cpu_backend());
      ring_attention_forward(*alone, ring, out.data(), lse.data(), p.qkv.data(), p.batch());
      ring_attention_backward(*alone, ring, dqkv.data(), p.dout.data(), p.qkv.data(), out.data(), lse.data(),
                              p.batch());
      CHECK(out == p.out);
      CHECK(lse == p.lse);
      CHECK(dqkv == ref_dqkv);
    }
  }
}

// The ring's block math without messages: three query shards, each folding in the key blocks of its own and earlier
// shards (newest first, as the ring delivers them), and gradients summed per key block. This is the path a
// multi-rank ring runs, checked here in a plain 1-rank build too.
TEST_CASE("Ring Attention block math over a simulated 3-rank ring equals the kernel", "[sp]") {
  for (const auto& lengths : kPackings) {
    const Problem p = make_problem(lengths, 4, 8, Attention::softmax);
    const int T = 3, H = p.H, D = p.D;
    const int64_t N = p.N(), C = p.C();
    const std::vector<int64_t> bounds = shard_bounds(N, T);
    std::vector<std::vector<float>> kv(T), dkv(T);
    for (int r = 0; r < T; ++r) {
      for (int64_t i = bounds[r]; i < bounds[r + 1]; ++i)
        kv[r].insert(kv[r].end(), p.qkv.begin() + i * 3 * C + C, p.qkv.begin() + (i + 1) * 3 * C);
      dkv[r].assign(kv[r].size(), 0.0f);
    }
    std::vector<float> out(N * C), dqkv(N * 3 * C, 0.0f), lse_all(H * N);
    for (int t = 0; t < T; ++t) {
      const int64_t b = bounds[t], n = bounds[t + 1] - b;
      const std::vector<int64_t> docs = document_begins(p.batch(), b, b + n);
      const float* q = p.qkv.data() + b * 3 * C;
      std::vector<float> m(H * n, -INFINITY), l(H * n, 0.0f), acc(n * C, 0.0f);
      for (int o = t; o >= 0; --o)
        cpu::attention_block_forward(m.data(), l.data(), acc.data(), q, 3 * C, n, b, docs.data(), kv[o].data(),
                                     bounds[o + 1] - bounds[o], bounds[o], H, D);
      std::vector<float> lse(H * n);
      cpu::attention_block_finish(out.data() + b * C, lse.data(), m.data(), l.data(), acc.data(), n, H, D);
      for (int h = 0; h < H; ++h)
        std::copy(lse.begin() + h * n, lse.begin() + (h + 1) * n, lse_all.begin() + h * N + b);
      std::vector<float> delta(H * n);
      cpu::attention_block_delta(delta.data(), out.data() + b * C, p.dout.data() + b * C, n, H, D);
      for (int o = t; o >= 0; --o)
        cpu::attention_block_backward(dqkv.data() + b * 3 * C, 3 * C, dkv[o].data(), q, 3 * C, n, b, docs.data(),
                                      p.dout.data() + b * C, lse.data(), delta.data(), kv[o].data(),
                                      bounds[o + 1] - bounds[o], bounds[o], H, D);
    }
    for (int r = 0; r < T; ++r)
      for (int64_t i = bounds[r]; i < bounds[r + 1]; ++i)
        for (int64_t c = 0; c < 2 * C; ++c) dqkv[i * 3 * C + C + c] += dkv[r][(i - bounds[r]) * 2 * C + c];
    check_close(p.name + " block out", out, p.out, kTol);
    check_close(p.name + " block lse", lse_all, p.lse, kTol);
    check_close(p.name + " block dqkv", dqkv, p.dqkv, kTol);
  }
}

// Bytes per rank from the communicator's counters, equal to each method's formula, and doubling with N. The
// numbers are printed for the record.
TEST_CASE("bytes per rank: Ulysses and Ring both grow linearly with N", "[sp][mpi]") {
  Communicator& comm = world();
  const int T = comm.size(), t = comm.rank();
  std::vector<SpTraffic> ulysses, ring;
  for (int scale : {1, 2}) {  // N = 240 and 480: every shard is N/T tokens at T = 1, 2, 4
    std::vector<int> lengths = {37, 1, 100, 5, 64, 33};
    for (int& len : lengths) len *= scale;
    const Problem p = make_problem(lengths, 4, 16, Attention::softmax);
    const Shard sh = my_shard(comm, p.N());
    const int64_t C = p.C();
    const std::vector<float> qkv = rows(p.qkv, 3 * C, sh.begin, sh.end), dout = rows(p.dout, C, sh.begin, sh.end);
    std::vector<float> out(sh.n() * C), lse(p.H * sh.n()), dqkv(sh.n() * 3 * C, 0.0f);

    auto measure = [&](auto&& op) {
      comm.barrier();
      comm.reset_counters();
      op();
      return comm.counters().total_bytes();
    };
    UlyssesCache cache(cpu_backend());
    RingCache ring_cache(cpu_backend());
    SpTraffic u, r;
    u.forward = measure([&] { ulysses_softmax_forward(comm, out.data(), cache, qkv.data(), p.batch()); });
    u.backward = measure([&] { ulysses_softmax_backward(comm, dqkv.data(), dout.data(), cache, p.batch()); });
    r.forward =
        measure([&] { ring_attention_forward(comm, ring_cache, out.data(), lse.data(), qkv.data(), p.batch()); });
    r.backward = measure([&] {
      ring_attention_backward(comm, ring_cache, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(),
                              p.batch());
    });
    const SpTraffic u_want = ulysses_traffic(p.N(), T, t, p.H, p.D);
    const SpTraffic r_want = ring_attention_traffic(p.N(), T, t, p.H, p.D);
    CHECK(u.forward == u_want.forward);
    CHECK(u.backward == u_want.backward);
    CHECK(r.forward == r_want.forward);
    CHECK(r.backward == r_want.backward);
    if (t == 0)
      std::printf("T=%d N=%lld C=%lld bytes/rank: ulysses fwd %lld bwd %lld; ring fwd %lld bwd %lld\n", T,
                  (long long)p.N(), (long long)C, (long long)u.forward, (long long)u.backward, (long long)r.forward,
                  (long long)r.backward);
    ulysses.push_back(u);
    ring.push_back(r);
  }
  CHECK(ulysses[1].forward == 2 * ulysses[0].forward);
  CHECK(ulysses[1].backward == 2 * ulysses[0].backward);
  CHECK(ring[1].forward == 2 * ring[0].forward);
  CHECK(ring[1].backward == 2 * ring[0].backward);
}
