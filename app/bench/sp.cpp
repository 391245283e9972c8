// trident bench sp: the sequence-parallel attention methods side by side — one attention layer's forward +
// backward (everything else in a block is token-local, so this is where the methods differ) on one document of N
// tokens, H = 8 heads of D = 64, fp32, random qkv, on the CPU backend.
//
//   linear attention (decay, chunk 64): LASP-1 (ring of states), LASP-2 (allgather of states), Ulysses
//   softmax attention:                  Ulysses, Ring Attention
//
// Under mpirun with W ranks, each group size T in {1, 2, 4, 8} that divides W runs in W/T groups of consecutive
// ranks at once (as `bench comm`); T = 1 runs the plain single-rank kernel (the baseline). Per case: one warm-up
// call, which also gives the bytes this rank handed to its group communicator (counters reset before it: forward +
// backward of one layer), then 3 or more timed calls, each started by a world barrier and timed on the slowest
// rank; the median is reported. A series (method, T) stops before the N whose predicted case time (warm-up + 3
// calls, extrapolated from the previous N as N for linear, N^2 for softmax) exceeds --max-case-seconds; the first
// length of a series always runs.
//
// --max-length-budget GIB instead finds, per method and T, the longest N whose one-layer forward + backward
// buffers fit a per-rank Allocator budget of GIB (see `Needs` below for exactly which buffers are counted).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "core/tensor/allocator.h"
#include "kernels/backend.h"
#include "parallel/comm/communicator.h"
#include "parallel/lasp/lasp.h"
#include "parallel/sp/ring_attention.h"
#include "parallel/sp/shard.h"
#include "parallel/sp/ulysses.h"

namespace trident::bench {

namespace {

constexpr int kHeads = 8, kHeadDim = 64, kSpChunk = 64;
constexpr int64_t kSpWidth = int64_t(kHeads) * kHeadDim;
constexpr int kGroupSizes[] = {1, 2, 4, 8};

enum class Method { kernel, lasp1, lasp2, ulysses, ring };

struct SpCase {
  Method method;
  bool softmax;
  const char* name;
};

// T = 1 runs the kernels; T > 1 runs the sequence-parallel methods.
const SpCase kBaselines[] = {{Method::kernel, false, "kernel"}, {Method::kernel, true, "kernel"}};
const SpCase kMethods[] = {{Method::lasp1, false, "lasp1"},
                         {Method::lasp2, false, "lasp2"},
                         {Method::ulysses, false, "ulysses"},
                         {Method::ulysses, true, "ulysses"},
                         {Method::ring, true, "ring"}};

const char* attention_name(bool softmax) { return softmax ? "softmax" : "linear"; }

std::vector<int> dividing_group_sizes(int world_size) {
  std::vector<int> sizes;
  for (int T : kGroupSizes)
    if (world_size % T == 0) sizes.push_back(T);
  return sizes;
}

std::vector<float> decay_slopes() {  // ALiBi-style, as the model uses for linear attention: 2^(-8(h+1)/H)
  std::vector<float> s(kHeads);
  for (int h = 0; h < kHeads; ++h) s[h] = std::pow(2.0f, -8.0f * float(h + 1) / kHeads);
  return s;
}

// ---------------------------------------------------------------- timing

// One rank's buffers and op for a case: call() runs forward + backward of the attention layer.
class Runner {
 public:
  Runner(const SpCase& c, Communicator* group, int64_t N, uint32_t seed)
      : case_(c), group_(group), N_(N), cu_{0, int32_t(N)}, slopes_(decay_slopes()) {
    const int T = group ? group->size() : 1, t = group ? group->rank() : 0;
    const int64_t n = shard_size(N, T, t);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    qkv_.resize(n * 3 * kSpWidth);
    dout_.resize(n * kSpWidth);
    for (float& x : qkv_) x = u(rng);
    for (float& x : dout_) x = u(rng);
    out_.assign(n * kSpWidth, 0.0f);
    dqkv_.assign(n * 3 * kSpWidth, 0.0f);
    if (c.softmax) lse_.assign(int64_t(kHeads) * (c.method == Method::kernel ? N : n), 0.0f);
    if (c.method == Method::lasp1 || c.method == Method::lasp2)
      lasp_ = std::make_unique<LinearAttentionSP>(*group, cpu_backend(),
                                                  c.method == Method::lasp1 ? LaspVariant::lasp1
                                                                            : LaspVariant::lasp2);
  }

  void call() {
    Backend& cpu = cpu_backend();
    const SpBatch batch{cu_.data(), 1, N_, kHeads, kHeadDim};
    switch (case_.method) {
      case Method::kernel:
        if (case_.softmax) {
          cpu.attention_softmax_forward(out_.data(), lse_.data(), qkv_.data(), cu_.data(), 1, N_, kHeads, kHeadDim);
          cpu.attention_softmax_backward(dqkv_.data(), dout_.data(), qkv_.data(), out_.data(), lse_.data(),
                                         cu_.data(), 1, N_, kHeads, kHeadDim);
        } else {
          cpu.attention_linear_forward(out_.data(), nullptr, qkv_.data(), slopes_.data(), nullptr, cu_.data(), 1, N_,
                                       kHeads, kHeadDim, kSpChunk);
          cpu.attention_linear_backward(dqkv_.data(), nullptr, dout_.data(), nullptr, qkv_.data(), slopes_.data(),
                                        nullptr, cu_.data(), 1, N_, kHeads, kHeadDim, kSpChunk);
        }
        return;
      case Method::lasp1:
      case Method::lasp2:
        lasp_->forward(out_.data(), qkv_.data(), slopes_.data(), cu_.data(), 1, N_, kHeads, kHeadDim, kSpChunk);
        lasp_->backward(dqkv_.data(), dout_.data(), qkv_.data());
        return;
      case Method::ulysses:
        if (case_.softmax) {
          ulysses_softmax_forward(*group_, out_.data(), ulysses_, qkv_.data(), batch);
          ulysses_softmax_backward(*group_, dqkv_.data(), dout_.data(), ulysses_, batch);
        } else {
          ulysses_linear_forward(*group_, out_.data(), ulysses_, qkv_.data(), slopes_.data(), batch, kSpChunk);
          ulysses_linear_backward(*group_, dqkv_.data(), dout_.data(), ulysses_, slopes_.data(), batch, kSpChunk);
        }
        return;
      case Method::ring:
        ring_attention_forward(*group_, ring_, out_.data(), lse_.data(), qkv_.data(), batch);
        ring_attention_backward(*group_, ring_, dqkv_.data(), dout_.data(), qkv_.data(), out_.data(), lse_.data(),
                                batch);
        return;
    }
  }

 private:
  SpCase case_;
  Communicator* group_;
  int64_t N_;
  std::vector<int32_t> cu_;
  std::vector<float> slopes_, qkv_, dout_, out_, dqkv_, lse_;
  UlyssesCache ulysses_{cpu_backend()};
  RingCache ring_{cpu_backend()};
  std::unique_ptr<LinearAttentionSP> lasp_;
};

// The largest value over the world's ranks (every rank gets it, so decisions made from it agree).
double world_max(double mine) {
  Communicator& w = world();
  std::vector<double> all(w.size());
  w.allgather(&mine, all.data(), 1, CommType::f64);
  return *std::max_element(all.begin(), all.end());
}

// Seconds of one call on the slowest rank. (Not time_call from bench.h: each rank would choose its own number of
// calls, and calls that communicate must be made the same number of times by every rank.), every rank starting at the same world barrier.
double slowest_call(Runner& runner) {
  world().barrier();
  const auto start = std::chrono::steady_clock::now();
  runner.call();
  return world_max(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

struct SpMeasurement {
  SpCase c;
  int T;
  int64_t N;
  double seconds;  // median per call, slowest rank
  int64_t bytes;    // per rank, forward + backward (the largest over the ranks)
};

SpMeasurement measure(const SpCase& c, int T, int64_t N, double min_seconds) {
  Communicator& w = world();
  Communicator* group = T > 1 ? w.split(w.rank() / T, w.rank()) : nullptr;
  Runner runner(c, group, N, 1234u + 7919u * uint32_t(w.rank()));
  if (group) group->reset_counters();
  const double warm = slowest_call(runner);  // page faults, thread start; and the traffic of exactly one layer
  const int64_t bytes = group ? group->counters().total_bytes() : 0;
  // --repeat seconds of timed calls, at least 3 and at most 9 (an odd count: the median is one of them)
  const int runs = std::clamp(int(std::ceil(min_seconds / std::max(warm, 1e-9))), 3, 9) | 1;
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) seconds.push_back(slowest_call(runner));
  std::nth_element(seconds.begin(), seconds.begin() + runs / 2, seconds.end());
  return {c, T, N, seconds[runs / 2], int64_t(world_max(double(bytes)))};
}

void run_timing(const Options& options, const std::vector<int64_t>& lengths, double max_case_seconds) {
  Communicator& w = world();
  std::vector<SpMeasurement> results;
  std::vector<std::string> skipped;
  for (int T : dividing_group_sizes(w.size())) {
    for (const SpCase& c : T == 1 ? std::vector<SpCase>(std::begin(kBaselines), std::end(kBaselines))
                                  : std::vector<SpCase>(std::begin(kMethods), std::end(kMethods))) {
      std::optional<SpMeasurement> last;
      for (int64_t N : lengths) {
        if (last) {
          const double growth = double(N) / double(last->N);
          const double predicted = last->seconds * (c.softmax ? growth * growth : growth);
          if (4 * predicted > max_case_seconds) {  // warm-up + 3 timed calls
            skipped.push_back(fmt::format("{} {} T={}: N >= {} (predicted {:.1f} s per call)", c.name,
                                          attention_name(c.softmax), T, N, predicted));
            break;
          }
        }
        if (w.rank() == 0)
          fmt::print(stderr, "bench sp: {} {} T={} N={}\n", c.name, attention_name(c.softmax), T, N);
        last = measure(c, T, N, options.min_seconds);
        results.push_back(*last);
      }
    }
  }

  Report report(fmt::format("sequence-parallel attention, one layer forward + backward: one document of N tokens, "
                            "H={} D={} chunk={} fp32, {} rank(s) in groups of T consecutive ranks (all groups run "
                            "at once: with more ranks than cores the times measure oversubscription; the bytes are "
                            "exact)",
                            kHeads, kHeadDim, kSpChunk, w.size()),
                options.json);
  for (const SpMeasurement& m : results) {
    // Ulysses's bytes over this method's, same attention type, T and N (0 where there is no traffic to compare)
    double ratio = 0;
    for (const SpMeasurement& u : results)
      if (u.c.method == Method::ulysses && u.c.softmax == m.c.softmax && u.T == m.T && u.N == m.N && m.bytes > 0)
        ratio = double(u.bytes) / double(m.bytes);
    report.add({{{"method", m.c.name},
                 {"attention", attention_name(m.c.softmax)},
                 {"T", fmt::format("{}", m.T)},
                 {"N", fmt::format("{}", m.N)},
                 {"bytes/rank", fmt::format("{}", m.bytes)}},
                {{"ms", m.seconds * 1e3}, {"tokens/s", double(m.N) / m.seconds}, {"ulysses_bytes/this", ratio}}});
  }
  if (w.rank() != 0) return;
  report.print();
  if (!options.json)
    for (const std::string& s : skipped) fmt::print("skipped (over --max-case-seconds {}): {}\n", max_case_seconds, s);
}

// ---------------------------------------------------------------- longest sequence at a memory budget

// The fp32 buffers of one rank t of T for one layer's forward + backward, in elements, as the ops hold them.
// `persistent` lives from forward through backward; each phase's buffers live together on top of it, one phase
// after the other. Counted for every method: qkv (n, 3C), out (n, C), dout (n, C), dqkv (n, 3C). Per method:
//   kernel linear  phase: the backward's chunk states ceil(N/chunk) D^2 (one head in flight: 1 thread per rank)
//   kernel softmax persistent: lse (H, N)
//   lasp1          persistent: S_in (H D^2)   phases: fwd S_out + scaled q rows (n D); bwd dS_out + dS_in + chunk
//                  states ceil(n/chunk) D^2; bwd dS_out + dS_in + scaled v/k rows (n D)
//   lasp2          persistent: S_in, transitions (T H)   phases: fwd own block (H D^2 + H) + gathered T blocks +
//                  scaled rows (n D); bwd own G + chunk states; bwd own G + gathered T H D^2 + dS_out + scaled rows
//   ulysses linear persistent: head-sharded qkv (N, 3C/T)   phases: fwd out_h (N, C/T) + send (n, 3C); fwd out_h +
//                  receive (n, C); bwd dout_h (N, C/T) + dqkv_h (N, 3C/T) + send (n, C) | chunk states
//                  ceil(N/chunk) D^2 | receive (n, 3C)
//   ulysses softmax persistent: head-sharded qkv (N, 3C/T), out (N, C/T), lse (H/T, N)   phases: fwd send (n, 3C);
//                  fwd receive (n, C); bwd dout_h + dqkv_h + send (n, C) | receive (n, 3C)
//   ring           persistent: lse (H, n)   phases: fwd K/V block + next block (2 x (n_max, 2C)) + online softmax
//                  acc (n, C), m, l (H, n); bwd delta (H, n) + K/V, next, dK/dV, incoming, finished (5 x (n_max, 2C))
// Not counted: scratch of O(tile) or O(chunk D) per thread, cu_seqlens, slopes, the MPI library's own buffers.
struct Needs {
  std::vector<int64_t> persistent;
  std::vector<std::vector<int64_t>> phases;
};

Needs needs(const SpCase& c, int T, int t, int64_t N) {
  const int64_t n = shard_size(N, T, t), C = kSpWidth, D = kHeadDim, H = kHeads, S = H * D * D, DD = D * D;
  auto chunks = [](int64_t x) { return (x + kSpChunk - 1) / kSpChunk; };
  Needs k{{3 * C * n, C * n, C * n, 3 * C * n}, {}};
  switch (c.method) {
    case Method::kernel:
      if (c.softmax)
        k.persistent.push_back(H * N);
      else
        k.phases = {{chunks(N) * DD}};
      break;
    case Method::lasp1:
      k.persistent.push_back(S);
      k.phases = {{S, n * D}, {S, S, chunks(n) * DD}, {S, S, n * D}};
      break;
    case Method::lasp2:
      k.persistent.insert(k.persistent.end(), {S, T * H});
      k.phases = {{S + H, T * (S + H), n * D}, {S, chunks(n) * DD}, {S, T * S, S, n * D}};
      break;
    case Method::ulysses: {
      const int64_t Cl = C / T;
      k.persistent.push_back(3 * Cl * N);
      if (c.softmax) {
        k.persistent.insert(k.persistent.end(), {Cl * N, (H / T) * N});
        k.phases = {{3 * C * n}, {C * n}, {Cl * N, 3 * Cl * N, C * n}, {Cl * N, 3 * Cl * N, 3 * C * n}};
      } else {
        k.phases = {{Cl * N, 3 * C * n},
                    {Cl * N, C * n},
                    {Cl * N, 3 * Cl * N, C * n},
                    {Cl * N, 3 * Cl * N, chunks(N) * DD},
                    {Cl * N, 3 * Cl * N, 3 * C * n}};
      }
      break;
    }
    case Method::ring: {
      const int64_t block = 2 * C * shard_size(N, T, T - 1);  // the last shard is the largest
      k.persistent.push_back(H * n);
      k.phases = {{block, block, C * n, H * n, H * n}, {H * n, block, block, block, block, block}};
      break;
    }
  }
  return k;
}

// Whether every rank's buffers of (c, T, N) fit `budget` bytes, allocated for real from a budgeted Allocator
// (untouched, so the host does not commit the pages).
bool fits(const SpCase& c, int T, int64_t N, std::size_t budget) {
  for (int t = 0; t < T; ++t) {
    AllocatorOptions options;
    options.name = "per-rank";
    options.budget_bytes = budget;
    Allocator allocator(options);  // frees whatever is left when it goes out of scope
    const Needs k = needs(c, T, t, N);
    try {
      for (int64_t e : k.persistent) allocator.allocate(std::size_t(e) * sizeof(float));
      for (const auto& phase : k.phases) {
        std::vector<void*> live;
        for (int64_t e : phase) live.push_back(allocator.allocate(std::size_t(e) * sizeof(float)));
        for (void* p : live) allocator.release(p);
      }
    } catch (const RuntimeError&) {
      return false;
    }
  }
  return true;
}

// The largest N that fits: doubling from 1, then bisection between the last N that fit and the first that did not.
int64_t longest(const SpCase& c, int T, std::size_t budget) {
  int64_t good = 0, bad = 1;
  while (fits(c, T, bad, budget)) {
    good = bad;
    bad *= 2;
    TRIDENT_CHECK(bad < (int64_t{1} << 50), "no N fails a budget of {} bytes", budget);
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    (fits(c, T, mid, budget) ? good : bad) = mid;
  }
  return good;
}

void run_max_length(const Options& options, double budget_gib) {
  Communicator& w = world();
  if (w.rank() != 0) return;  // a calculation with real allocations, no messages: rank 0 does it for every rank
  const std::size_t budget = gib_to_bytes(budget_gib);
  Report report(fmt::format("longest N whose one-layer forward + backward buffers fit {} per rank (H={} D={} "
                            "chunk={} fp32; buffers counted: see app/bench/sp.cpp)",
                            format_bytes(budget), kHeads, kHeadDim, kSpChunk),
                options.json);
  std::vector<std::pair<SpCase, int64_t>> base;
  for (const SpCase& c : kBaselines) base.emplace_back(c, longest(c, 1, budget));
  for (const auto& [c, N] : base)
    report.add({{{"method", c.name}, {"attention", attention_name(c.softmax)}, {"T", "1"}, {"N", fmt::format("{}", N)}},
                {{"vs T=1", 1.0}}});
  for (int T : dividing_group_sizes(w.size())) {
    if (T == 1) continue;
    for (const SpCase& c : kMethods) {
      const int64_t N = longest(c, T, budget);
      const int64_t N1 = base[c.softmax ? 1 : 0].second;
      report.add({{{"method", c.name},
                   {"attention", attention_name(c.softmax)},
                   {"T", fmt::format("{}", T)},
                   {"N", fmt::format("{}", N)}},
                  {{"vs T=1", N1 > 0 ? double(N) / double(N1) : 0.0}}});
    }
  }
  report.print();
}

}  // namespace

void run_sp(const Options& options, const std::vector<int64_t>& lengths, double max_case_seconds,
            double max_length_budget_gib) {
  if (max_length_budget_gib > 0) {
    run_max_length(options, max_length_budget_gib);
    return;
  }
  run_timing(options, lengths, max_case_seconds);
}

}  // namespace trident::bench
