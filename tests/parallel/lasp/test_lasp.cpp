// LASP-1 (ring) and LASP-2 (allgather) against the single-rank kernel on the whole packed batch: outputs and every
// input gradient, gathered from the ranks, to a normalised max error of 1e-5. Each [mpi] case runs as a 1-rank
// world (ctest) and under mpirun with 2, 3 and 4 ranks. Every rank runs every case and every collective in the same
// order; CHECK rather than REQUIRE, so that a rank with a wrong result still joins the collectives that follow.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "kernels/backend.h"
#include "kernels/cpu/attention_linear.h"
#include "kernels/shared/decay.h"
#include "parallel/comm/communicator.h"
#include "parallel/lasp/auto_variant.h"
#include "parallel/lasp/lasp.h"
#include "parallel/sp/shard.h"
#include "support/assert_close.h"
#include "support/random.h"
#include "support/sp_rows.h"

using namespace trident;
using namespace trident::test;

namespace {

constexpr double kTol = 1e-5;
constexpr LaspVariant kVariants[] = {LaspVariant::lasp1, LaspVariant::lasp2};

std::vector<int32_t> offsets(const std::vector<int>& lengths) {
  std::vector<int32_t> cu{0};
  for (int n : lengths) cu.push_back(cu.back() + n);
  return cu;
}

// A global packed batch, identical on every rank (same seeds), with upstream gradients.
struct Batch {
  int H, D;
  std::vector<int32_t> cu;
  std::vector<float> qkv, slopes, dout, dqkv_base;  // dqkv_base: what dqkv holds before backward (it accumulates)
  int n_seq() const { return int(cu.size()) - 1; }
  int64_t N() const { return cu.back(); }
  int64_t C() const { return int64_t(H) * D; }
};

Batch make_batch(const std::vector<int>& lengths, int H, int D, uint64_t seed) {
  Batch b{H, D, offsets(lengths), {}, linear_attention_slopes(H), {}, {}};
  b.qkv = random_normal<float>(b.N() * 3 * b.C(), seed, 0.5);
  b.dout = random_normal<float>(b.N() * b.C(), seed + 1);
  b.dqkv_base = random_normal<float>(b.N() * 3 * b.C(), seed + 2, 0.1);
  return b;
}

struct Result {
  std::vector<float> out, dqkv;  // (N, C), (N, 3C)
};

Result kernel_result(const Batch& b, int chunk) {
  Result r{std::vector<float>(b.N() * b.C()), b.dqkv_base};
  cpu::attention_linear_forward(r.out.data(), nullptr, b.qkv.data(), b.slopes.data(), nullptr, b.cu.data(),
                                b.n_seq(), b.N(), b.H, b.D, chunk);
  cpu::attention_linear_backward(r.dqkv.data(), nullptr, b.dout.data(), nullptr, b.qkv.data(), b.slopes.data(),
                                 nullptr, b.cu.data(), b.n_seq(), b.N(), b.H, b.D, chunk);
  return r;
}

// The op on this rank's tokens; returns the gathered global result. Counters of `sp` cover only the op.
Result lasp_result(Communicator& sp, const Batch& b, int chunk, LaspVariant variant, CommCounters* traffic = nullptr) {
  const int64_t begin = shard_begin(b.N(), sp.size(), sp.rank()), end = shard_begin(b.N(), sp.size(), sp.rank() + 1);
  const int64_t n = end - begin, C = b.C();
  std::vector<float> qkv(b.qkv.begin() + begin * 3 * C, b.qkv.begin() + end * 3 * C);
  std::vector<float> dout(b.dout.begin() + begin * C, b.dout.begin() + end * C);
  std::vector<float> dqkv(b.dqkv_base.begin() + begin * 3 * C, b.dqkv_base.begin() + end * 3 * C);
  std::vector<float> out(n * C, -1.0f);

  sp.reset_counters();
  LinearAttentionSP op(sp, cpu_backend(), variant);
  op.forward(out.data(), qkv.data(), b.slopes.data(), b.cu.data(), b.n_seq(), b.N(), b.H, b.D, chunk);
  op.backward(dqkv.data(), dout.data(), qkv.data());
  if (traffic) *traffic = sp.counters();
  return {gather_rows(sp, out, b.N(), C), gather_rows(sp, dqkv, b.N(), 3 * C)};
}

// LASP against the kernel for both variants; prints the errors once per world.
void check_against_kernel(Communicator& sp, const std::vector<int>& lengths, int H, int D, int chunk,
                          uint64_t seed) {
  const Batch b = make_batch(lengths, H, D, seed);
  const Result want = kernel_result(b, chunk);
  for (LaspVariant variant : kVariants) {
    const Result got = lasp_result(sp, b, chunk, variant);
    const std::string name = fmt::format("{} T={} N={} H={} D={} chunk={}", lasp_variant_name(variant), sp.size(),
                                         b.N(), H, D, chunk);
    check_close(name + " out", got.out, want.out, kTol);
    check_close(name + " dqkv", got.dqkv, want.dqkv, kTol);
    if (world().rank() == 0)
      fmt::print("[lasp] {}: out {:.2e} dqkv {:.2e}\n", name,
                 compare(got.out.data(), want.out.data(), want.out.size()).normalised,
                 compare(got.dqkv.data(), want.dqkv.data(), want.dqkv.size()).normalised);
  }
}

}  // namespace

TEST_CASE("shards: split, local pieces and boundary flags", "[lasp]") {
  // Documents {5, 10, 5} over 4 ranks of 5 tokens: [0,5) whole, [5,10) head, [10,15) tail, [15,20) whole.
  const std::vector<int32_t> cu = offsets({5, 10, 5});
  LaspShard s0 = lasp_shard(cu.data(), 3, 20, 4, 0), s1 = lasp_shard(cu.data(), 3, 20, 4, 1),
            s2 = lasp_shard(cu.data(), 3, 20, 4, 2), s3 = lasp_shard(cu.data(), 3, 20, 4, 3);
  CHECK((s0.cu_seqlens == std::vector<int32_t>{0, 5}));
  CHECK((!s0.from_prev && !s0.to_next && !s1.from_prev && s1.to_next && s2.from_prev && !s2.to_next));
  CHECK((!s3.from_prev && !s3.to_next && s1.first_doc == 1 && s3.first_doc == 2));
  // One document of 10 over 3 ranks: 3, 3, 4 tokens; the middle one passes the state through.
  const std::vector<int32_t> one = offsets({10});
  LaspShard m = lasp_shard(one.data(), 1, 10, 3, 1);
  CHECK((m.begin == 3 && m.end == 6 && m.pass_through()));
  CHECK(lasp_shard(one.data(), 1, 10, 3, 2).describe() == "tokens [6, 10) pieces 1 from_prev 1 to_next 0");
  // Empty documents are dropped; a rank without tokens inside a document passes its state through.
  const std::vector<int32_t> tiny = offsets({0, 2, 0});
  LaspShard e = lasp_shard(tiny.data(), 3, 2, 4, 2);
  CHECK((e.n_local() == 0 && e.n_pieces() == 0 && e.pass_through()));
  CHECK(lasp_shard(tiny.data(), 3, 2, 4, 1).cu_seqlens == std::vector<int32_t>{0, 1});
  CHECK(lasp_shard(tiny.data(), 3, 2, 4, 0).to_next == false);
}

TEST_CASE("several documents of odd lengths", "[lasp][mpi]") {
  for (int chunk : {1, 7, 64}) check_against_kernel(world(), {37, 1, 100, 5, 64}, 3, 8, chunk, 11);
  check_against_kernel(world(), {37, 1, 100, 5, 64}, 3, 16, 7, 12);
}

TEST_CASE("one document spanning every rank", "[lasp][mpi]") {
  // Ranks in the middle lie inside the document: their incoming state passes through with decay.
  for (int chunk : {1, 7, 64}) check_against_kernel(world(), {203}, 3, 16, chunk, 21);
}

TEST_CASE("documents shorter than a rank's share, and ranks inside one document", "[lasp][mpi]") {
  check_against_kernel(world(), {3, 2, 1, 4, 2, 3, 1, 5, 2, 1, 3}, 3, 8, 7, 31);
  check_against_kernel(world(), {9, 180, 11}, 3, 8, 7, 32);
  check_against_kernel(world(), {1, 1, 190, 1}, 2, 8, 64, 33);
}

TEST_CASE("fewer tokens than ranks, and empty documents", "[lasp][mpi]") {
  check_against_kernel(world(), {2}, 3, 8, 1, 41);
  check_against_kernel(world(), {0, 3, 0, 1}, 3, 8, 7, 42);
}

TEST_CASE("a 1-rank group is bit-identical to the kernel", "[lasp][mpi]") {
  Communicator& alone = *world().subgroup({world().rank()});
  const Batch b = make_batch({37, 1, 100, 5, 64}, 3, 16, 51);
  for (int chunk : {1, 7, 64}) {
    const Result want = kernel_result(b, chunk);
    for (LaspVariant variant : kVariants) {
      const Result got = lasp_result(alone, b, chunk, variant);
      INFO(lasp_variant_name(variant) << " chunk " << chunk);
      CHECK(got.out == want.out);
      CHECK(got.dqkv == want.dqkv);
    }
  }
}

TEST_CASE("SP on a subgroup uses group-relative peers", "[lasp][mpi]") {
  // Ranks of the same parity form one SP group: peers are group rank +-1, not world rank +-1.
  Communicator& sp = *world().split(world().rank() % 2, world().rank());
  check_against_kernel(sp, {37, 1, 100, 5, 64}, 3, 8, 7, 61);
}

TEST_CASE("LASP-1 and LASP-2 agree bit for bit", "[lasp][mpi]") {
  // The ring's S_out = lambda^n S_in + S_local and LASP-2's Horner step are the same float operations.
  const Batch b = make_batch({37, 1, 100, 5, 64, 203}, 3, 8, 71);
  const Result ring = lasp_result(world(), b, 7, LaspVariant::lasp1);
  const Result gathered = lasp_result(world(), b, 7, LaspVariant::lasp2);
  CHECK(ring.out == gathered.out);
  CHECK(ring.dqkv == gathered.dqkv);
}

TEST_CASE("causality: perturbing token u leaves the outputs before u unchanged", "[lasp][mpi]") {
  const Batch b = make_batch({150, 50}, 3, 8, 81);
  const int64_t C = b.C();
  for (LaspVariant variant : kVariants) {
    for (int64_t u : {int64_t{1}, int64_t{60}, int64_t{120}}) {
      Batch p = b;
      for (int64_t e = 0; e < 3 * C; ++e) p.qkv[u * 3 * C + e] += 1.0f;
      const Result base = lasp_result(world(), b, 7, variant), moved = lasp_result(world(), p, 7, variant);
      INFO(lasp_variant_name(variant) << " u=" << u);
      CHECK(std::vector<float>(moved.out.begin(), moved.out.begin() + u * C) ==
            std::vector<float>(base.out.begin(), base.out.begin() + u * C));
      CHECK(moved.out[u * C] != base.out[u * C]);
    }
  }
}

TEST_CASE("bytes sent per rank do not depend on N", "[lasp][mpi]") {
  // One document over every rank: each boundary carries one H*D*D fp32 state per direction.
  const int H = 3, D = 8, T = world().size(), t = world().rank();
  const int64_t state_bytes = int64_t(H) * D * D * 4;
  for (LaspVariant variant : kVariants) {
    CommCounters small, large;
    lasp_result(world(), make_batch({64}, H, D, 91), 7, variant, &small);
    lasp_result(world(), make_batch({640}, H, D, 92), 7, variant, &large);
    INFO(lasp_variant_name(variant));
    CHECK(small.total_bytes() == large.total_bytes());
    const int64_t expected = variant == LaspVariant::lasp1
                                 ? (int64_t(t > 0) + int64_t(t + 1 < T)) * state_bytes  // one send each way
                                 : 2 * state_bytes + int64_t(H) * 4;  // forward: state + transitions; backward: state
    CHECK(large.total_bytes() == (T > 1 || variant == LaspVariant::lasp2 ? expected : 0));
    if (world().rank() == 0)
      fmt::print("[lasp] {} T={} rank 0 sent {} B for N=64 and {} B for N=640 (state {} B)\n",
                 lasp_variant_name(variant), T, small.total_bytes(), large.total_bytes(), state_bytes);
  }
}

TEST_CASE("variant auto: every rank of the group measures the same times and picks the same variant", "[lasp][mpi]") {
  const LaspVariantTimes times = measure_lasp_variants(world(), 4 * 16 * 16, 3);
  // Gather every rank's view: identical times (bit for bit), so an SP group can never split between variants.
  const double mine[2] = {times.lasp1_s, times.lasp2_s};
  std::vector<double> all(2 * static_cast<std::size_t>(world().size()));
  world().allgather(mine, all.data(), 2, CommType::f64);
  for (int r = 0; r < world().size(); ++r) {
    CHECK(all[2 * r] == times.lasp1_s);
    CHECK(all[2 * r + 1] == times.lasp2_s);
  }
  CHECK((world().size() == 1 ? times.lasp1_s == 0 : times.lasp1_s > 0));  // a 1-rank group has nothing to exchange
  CHECK((world().size() == 1 ? times.lasp2_s == 0 : times.lasp2_s > 0));
  CHECK(times.faster() == (times.lasp1_s < times.lasp2_s ? LaspVariant::lasp1 : LaspVariant::lasp2));
  // The probe leaves nothing in flight: LASP itself runs right after it on the same communicator.
  check_against_kernel(world(), {37, 1, 100, 5, 64}, 3, 8, 7, 91);
  const LaspVariantTimes alone = measure_lasp_variants(*world().subgroup({world().rank()}), 16, 3);
  CHECK(alone.lasp1_s == 0);
  CHECK(alone.lasp2_s == 0);
}
