// trident bench kernels: every CPU kernel is first checked against its naive double-precision reference on a small
// odd shape (a failure stops the bench with exit code 1), then timed at GPT-2-small layer shapes. Reports achieved
// GFLOP/s (GEMM-bound kernels) or GB/s (memory-bound ones), and how much faster the fused attention kernels are than
// their naive references.
#include <omp.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention_linear.h"
#include "kernels/cpu/attention_softmax.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/feature_map.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/grad_norm.h"
#include "kernels/cpu/blas.h"
#include "app/train/device_blas.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/residual.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/strided_rows.h"
#include "kernels/shared/decay.h"
#include "kernels/reference/attention_linear_naive.h"
#include "kernels/reference/attention_softmax_naive.h"
#include "kernels/reference/elementwise_naive.h"
#include "kernels/reference/layers_naive.h"

namespace trident::bench {

namespace {

std::vector<float> randn(std::size_t n, uint64_t seed, double stddev = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, static_cast<float>(stddev));
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// max |x - ref| / max |ref|
double normalised_error(const std::vector<float>& x, const std::vector<double>& ref) {
  double err = 0, mag = 1e-30;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, std::isfinite(x[i]) ? std::abs(x[i] - ref[i]) : INFINITY);
    mag = std::max(mag, std::abs(ref[i]));
  }
  return err / mag;
}

struct KernelBench {
  std::string name;
  std::string shape;
  std::function<double()> check;  // normalised error against the reference (small shape)
  std::function<void()> run;      // one call at the timed shape
  double flops = 0;               // per call; 0 for memory-bound kernels
  double bytes = 0;               // per call, compulsory traffic
};

constexpr double kTolerance = 1e-5;

}  // namespace

std::vector<KernelBench> layer_kernel_benches();
std::vector<KernelBench> attention_benches();

void run_kernels(const Options& options) {
  use_configured_blas(options.blas.empty() ? "auto" : options.blas);
  Report report(fmt::format("CPU kernels ({} threads, {})", omp_get_max_threads(), cpu::current_blas().name),
                options.json);
  std::vector<KernelBench> benches = layer_kernel_benches();
  for (KernelBench& k : attention_benches()) benches.push_back(std::move(k));
  Progress progress("bench kernels", static_cast<int64_t>(benches.size()));
  for (const KernelBench& k : benches) {
    progress.step(k.name + " " + k.shape);
    double err = k.check();
    if (!(err <= kTolerance))
      throw_runtime_error("kernel {} disagrees with its reference: normalised error {:.3g} > {:.0e}", k.name, err,
                          kTolerance);
    double sec = time_call(k.run, options.min_seconds);
    report.add({{{"kernel", k.name}, {"shape", k.shape}},
                {{"check_err", err},
                 {"ms", sec * 1e3},
                 {"GFLOP/s", k.flops / sec / 1e9},
                 {"GB/s", k.bytes / sec / 1e9}}});
  }
  report.print();
}

// GPT-2-small layer shapes: N tokens, C channels, V vocabulary.
std::vector<KernelBench> layer_kernel_benches() {
  const int64_t N = 1024;
  const int C = 768, V = 50304;
  const int64_t NC = N * C;
  std::vector<KernelBench> benches;

  // Buffers for the timed shape, shared by the closures below (kept alive by the shared_ptr).
  struct Buffers {
    std::vector<float> x, y, dy, dx, w, b, dw, db, mean, rstd, wide, dwide, fc_w, dfc_w, logits, loss, weight;
    std::vector<float> gate, dgate, qkv, qk_pre, dqkv, dqk_saved;  // linear attention's output gate and feature map
    std::vector<int32_t> tokens, positions, targets;
  };
  auto buf = std::make_shared<Buffers>();
  buf->x = randn(NC, 1);
  buf->y.resize(NC);
  buf->dy = randn(NC, 2);
  buf->dx.resize(NC);
  buf->w = randn(C, 3);
  buf->b = randn(C, 4);
  buf->dw.resize(C * 4 * C);
  buf->db.resize(4 * C);
  buf->mean.resize(N);
  buf->rstd.resize(N);
  buf->wide = randn(N * 4 * C, 5);
  buf->dwide.resize(N * 4 * C);
  buf->fc_w = randn(static_cast<std::size_t>(C) * 4 * C, 6, 0.02);
  buf->dfc_w.resize(static_cast<std::size_t>(C) * 4 * C);
  buf->logits = randn(N * V, 7);
  buf->loss.resize(N);
  buf->weight.assign(N, 1.0f / N);
  buf->gate = randn(NC, 9);
  buf->dgate.resize(NC);
  buf->qkv = randn(3 * NC, 10, 2.0);
  buf->qk_pre.resize(2 * NC);
  cpu::copy_rows(buf->qk_pre.data(), 2 * C, buf->qkv.data(), 3 * C, N, 2 * C);  // q|k, restored before each call
  buf->dqkv = randn(3 * NC, 11);
  buf->dqk_saved.resize(2 * NC);
  cpu::copy_rows(buf->dqk_saved.data(), 2 * C, buf->dqkv.data(), 3 * C, N, 2 * C);
  buf->tokens.resize(N);
  buf->positions.resize(N);
  buf->targets.resize(N);
  for (int64_t t = 0; t < N; ++t) {
    buf->tokens[t] = static_cast<int32_t>((t * 7919) % V);
    buf->positions[t] = static_cast<int32_t>(t);
    buf->targets[t] = static_cast<int32_t>((t * 104729) % V);
  }
  auto wte = std::make_shared<std::vector<float>>(randn(static_cast<std::size_t>(V) * C, 8, 0.02));
  auto dwte = std::make_shared<std::vector<float>>(static_cast<std::size_t>(V) * C);

  // --- small-shape checks against the double references ---
  auto check_linear = [] {
    const int64_t n = 37;
    const int c = 45, oc = 29;
    auto x = randn(n * c, 11), w = randn(c * oc, 12), b = randn(oc, 13);
    std::vector<float> y(n * oc);
    cpu::linear_forward(y.data(), x.data(), w.data(), b.data(), n, c, oc);
    auto bd = to_double(b);
    return normalised_error(y, reference::linear_forward(to_double(x), to_double(w), &bd, n, c, oc));
  };
  auto check_linear_backward = [] {
    const int64_t n = 37;
    const int c = 45, oc = 29;
    auto x = randn(n * c, 11), w = randn(c * oc, 12), dy = randn(n * oc, 14);
    std::vector<float> dx(n * c), dw(c * oc), db(oc);
    cpu::linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), n, c, oc);
    auto g = reference::linear_backward(to_double(dy), to_double(x), to_double(w), n, c, oc);
    return std::max({normalised_error(dx, g.dx), normalised_error(dw, g.dw), normalised_error(db, g.db)});
  };
  auto check_layernorm = [](bool backward) {
    const int64_t n = 37;
    const int c = 70;
    auto x = randn(n * c, 15), w = randn(c, 16), b = randn(c, 17), dy = randn(n * c, 18);
    std::vector<float> y(n * c), mean(n), rstd(n), dx(n * c), dw(c), db(c);
    cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), n, c);
    if (!backward) return normalised_error(y, reference::layernorm_forward(to_double(x), to_double(w), to_double(b), n, c));
    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), n,
                            c);
    auto g = reference::layernorm_backward(to_double(dy), to_double(x), to_double(w), n, c);
    return std::max({normalised_error(dx, g.dx), normalised_error(dw, g.dw), normalised_error(db, g.db)});
  };
  // linear attention's output norm over whole rows, gated
  auto check_rmsnorm_gated = [](bool backward) {
    const int64_t n = 37;
    const int c = 70;
    auto x = randn(n * c, 25, 3.0), gate = randn(n * c, 26), dy = randn(n * c, 27);
    std::vector<float> y(n * c), rrms(n), dx(n * c), dgate(n * c);
    auto xd = to_double(x), gd = to_double(gate);
    cpu::rmsnorm_forward(y.data(), rrms.data(), x.data(), gate.data(), n, c);
    if (!backward) return normalised_error(y, reference::rmsnorm_forward(xd, n, c, &gd));
    cpu::rmsnorm_backward(dx.data(), dgate.data(), dy.data(), x.data(), gate.data(), rrms.data(), n, c);
    auto g = reference::rmsnorm_backward(to_double(dy), xd, n, c, &gd);
    return std::max(normalised_error(dx, g.dx), normalised_error(dgate, g.dgate));
  };
  // both maps, both directions (the bench times silu, TransNormerLLM's default)
  auto check_feature_map = [] {
    const int64_t n = 37;
    const int c = 45;
    double err = 0;
    for (FeatureMap map : {FeatureMap::silu, FeatureMap::elu1}) {
      auto qkv = randn(n * 3 * c, 28, 3.0), dqkv = randn(n * 3 * c, 29);
      auto qkvd = to_double(qkv), dqkvd = to_double(dqkv);
      std::vector<float> pre(n * 2 * c);
      cpu::feature_map_forward(qkv.data(), pre.data(), n, c, map);
      cpu::feature_map_backward(dqkv.data(), pre.data(), n, c, map);
      const bool silu = map == FeatureMap::silu;
      auto y = silu ? reference::map_qk(qkvd, c, reference::silu<double>)
                    : reference::map_qk(qkvd, c, reference::elu1<double>);
      auto d = silu ? reference::map_qk_backward(dqkvd, qkvd, c, reference::silu_grad<double>)
                    : reference::map_qk_backward(dqkvd, qkvd, c, reference::elu1_grad<double>);
      err = std::max({err, normalised_error(qkv, y), normalised_error(dqkv, d)});
    }
    return err;
  };
  auto check_gelu = [] {
    const int64_t n = 9;
    const int oc = 111;
    auto pre = randn(n * oc, 19, 2.0), bias = randn(oc, 21, 1.0);
    std::vector<float> h(pre), y(pre.size());
    cpu::bias_gelu_forward(h.data(), y.data(), bias.data(), n, oc);
    std::vector<double> biased = to_double(pre);
    for (std::size_t i = 0; i < biased.size(); ++i) biased[i] += bias[i % oc];
    return normalised_error(y, reference::gelu(biased));
  };
  auto check_crossentropy = [] {
    const int v = 301;
    std::vector<int32_t> targets = {0, 300, 5, -1, 77};
    auto logits = randn(targets.size() * v, 20, 3.0);
    std::vector<float> weight(targets.size(), 0.2f), loss(targets.size()), d = logits;
    cpu::crossentropy_fused_backward(loss.data(), d.data(), targets.data(), weight.data(),
                                     static_cast<int64_t>(targets.size()), v);
    auto ld = to_double(logits);
    return std::max(normalised_error(loss, reference::crossentropy_forward(ld, targets, v)),
                    normalised_error(d, reference::crossentropy_backward(ld, targets, to_double(weight), v)));
  };
  auto check_embedding = [] {
    const int c = 70;
    std::vector<int32_t> tokens = {3, 1, 3, 0}, positions = {0, 1, 2, 3};
    auto tok = randn(4 * c, 21), pos = randn(4 * c, 22);
    std::vector<float> y(tokens.size() * c);
    cpu::embedding_forward(y.data(), tokens.data(), positions.data(), tok.data(), pos.data(),
                           static_cast<int64_t>(tokens.size()), c);
    auto posd = to_double(pos);
    return normalised_error(y, reference::embedding_forward(tokens, positions, to_double(tok), &posd, c));
  };
  auto check_adamw = [] {
    auto p = randn(1000, 23), g = randn(1000, 24);
    std::vector<float> m(1000), v(1000);
    auto pd = to_double(p), gd = to_double(g);
    std::vector<double> md(1000), vd(1000);
    cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), 1000, cpu::adamw_step({1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f}, 1),
                      1.0f);
    reference::adamw_step<double>(pd, gd, md, vd, 1e-3, 0.9, 0.95, 1e-8, 0.1, 1);
    return normalised_error(p, pd);
  };
  auto exact = [] { return 0.0; };  // residual and grad norm are exact sums; their tests cover them

  const std::string nc = fmt::format("N={} C={}", N, C);
  const double f = sizeof(float);
  benches.push_back({"embedding fwd", nc + " (wte+wpe)", check_embedding,
                     [buf, wte] {
                       cpu::embedding_forward(buf->y.data(), buf->tokens.data(), buf->positions.data(), wte->data(),
                                              buf->x.data(), N, C);
                     },
                     0, 3 * NC * f});
  benches.push_back({"embedding bwd", nc, exact,
                     [buf, dwte] {
                       cpu::embedding_backward(dwte->data(), buf->dx.data(), buf->dy.data(), buf->tokens.data(),
                                               buf->positions.data(), N, C);
                     },
                     0, 5 * NC * f});
  benches.push_back({"layernorm fwd", nc, [=] { return check_layernorm(false); },
                     [buf] {
                       cpu::layernorm_forward(buf->y.data(), buf->mean.data(), buf->rstd.data(), buf->x.data(),
                                              buf->w.data(), buf->b.data(), N, C);
                     },
                     0, 2 * NC * f});
  benches.push_back({"layernorm bwd", nc, [=] { return check_layernorm(true); },
                     [buf] {
                       cpu::layernorm_backward(buf->dx.data(), buf->dw.data(), buf->db.data(), buf->dy.data(),
                                               buf->x.data(), buf->w.data(), buf->mean.data(), buf->rstd.data(), N, C);
                     },
                     0, 4 * NC * f});
  benches.push_back({"rmsnorm gated fwd", nc, [=] { return check_rmsnorm_gated(false); },
                     [buf] {
                       cpu::rmsnorm_forward(buf->y.data(), buf->rstd.data(), buf->x.data(), buf->gate.data(), N, C);
                     },
                     0, 3 * NC * f});
  benches.push_back({"rmsnorm gated bwd", nc, [=] { return check_rmsnorm_gated(true); },
                     [buf] {
                       cpu::rmsnorm_backward(buf->dx.data(), buf->dgate.data(), buf->dy.data(), buf->x.data(),
                                             buf->gate.data(), buf->rstd.data(), N, C);
                     },
                     0, 7 * NC * f});
  // The feature map works in place: each call first restores its input (q|k, dq|dk), or repeated calls would run
  // on values decaying into the subnormal range, which the CPU computes slowly. Bytes count the restore.
  const std::string qkv = fmt::format("N={} 3C={} (+ restore)", N, 3 * C);
  benches.push_back({"feature map fwd (silu)", qkv, check_feature_map,
                     [buf] {
                       cpu::copy_rows(buf->qkv.data(), 3 * C, buf->qk_pre.data(), 2 * C, N, 2 * C);
                       cpu::feature_map_forward(buf->qkv.data(), buf->qk_pre.data(), N, C, FeatureMap::silu);
                     },
                     0, 10 * NC * f});
  benches.push_back({"feature map bwd (silu)", qkv, check_feature_map,
                     [buf] {
                       cpu::copy_rows(buf->dqkv.data(), 3 * C, buf->dqk_saved.data(), 2 * C, N, 2 * C);
                       cpu::feature_map_backward(buf->dqkv.data(), buf->qk_pre.data(), N, C, FeatureMap::silu);
                     },
                     0, 10 * NC * f});
  const std::string fc = fmt::format("N={} {}->{}", N, C, 4 * C);
  benches.push_back({"linear fwd (mlp.c_fc)", fc, check_linear,
                     [buf] {
                       cpu::linear_forward(buf->wide.data(), buf->x.data(), buf->fc_w.data(), buf->db.data(), N, C,
                                           4 * C);
                     },
                     2.0 * N * C * 4 * C, 0});
  benches.push_back({"linear bwd (mlp.c_fc)", fc, check_linear_backward,
                     [buf] {
                       cpu::linear_backward(buf->dx.data(), buf->dfc_w.data(), buf->db.data(), buf->dwide.data(),
                                            buf->x.data(), buf->fc_w.data(), N, C, 4 * C);
                     },
                     4.0 * N * C * 4 * C, 0});
  const std::string wide = fmt::format("n={}", N * 4 * C);
  benches.push_back({"bias + gelu fwd (mlp.c_fc)", wide, check_gelu,
                     [buf] { cpu::bias_gelu_forward(buf->wide.data(), buf->dwide.data(), buf->db.data(), N, 4 * C); },
                     0, 3.0 * N * 4 * C * f});
  benches.push_back({"bias + gelu bwd (mlp.c_fc)", wide, check_gelu,
                     [buf] {
                       cpu::bias_gelu_backward(buf->dwide.data(), buf->db.data(), buf->wide.data(), buf->wide.data(),
                                               N, 4 * C);
                     },
                     0, 3.0 * N * 4 * C * f});
  benches.push_back({"residual fwd", nc, exact,
                     [buf] { cpu::residual_forward(buf->y.data(), buf->x.data(), buf->dy.data(), NC); }, 0,
                     3 * NC * f});
  benches.push_back({"crossentropy fused", fmt::format("N={} V={}", N, V), check_crossentropy,
                     [buf] {
                       // recomputing from the same overwritten buffer keeps the call cost identical each time
                       cpu::crossentropy_fused_backward(buf->loss.data(), buf->logits.data(), buf->targets.data(),
                                                        buf->weight.data(), N, V);
                     },
                     0, 2.0 * N * V * f});
  const int64_t params = static_cast<int64_t>(C) * 4 * C;
  benches.push_back({"adamw", fmt::format("n={}", params), check_adamw,
                     [buf, params] {
                       cpu::adamw_update(buf->fc_w.data(), buf->dfc_w.data(), buf->wide.data(), buf->dwide.data(),
                                         params, cpu::adamw_step({1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f}, 10), 1.0f);
                     },
                     0, 7.0 * params * f});
  benches.push_back({"grad norm", fmt::format("n={}", params), exact,
                     [buf, params] { (void)cpu::squared_norm(buf->dfc_w.data(), params); }, 0, params * f});
  return benches;
}


// Attention at a GPT-2-small head shape (H=12, D=64): the fused kernels and their naive references side by side on
// the same inputs, so the table shows the speed-up directly (compare the "ms" of a kernel and its "naive" row).
std::vector<KernelBench> attention_benches() {
  const int H = 12, D = 64, C = H * D, chunk = 64;
  struct Buffers {
    std::vector<float> qkv, out, lse, dout, dqkv, slopes, state;
    std::vector<int32_t> cu_seqlens;
    int64_t N = 0;
  };
  auto make = [&](int64_t N, uint64_t seed) {
    auto b = std::make_shared<Buffers>();
    b->N = N;
    b->qkv = randn(N * 3 * C, seed, 0.5);
    b->out.resize(N * C);
    b->lse.resize(H * N);
    b->dout = randn(N * C, seed + 1);
    b->dqkv.resize(N * 3 * C);
    b->slopes = linear_attention_slopes(H);
    b->state.resize(static_cast<std::size_t>(H) * D * D);
    b->cu_seqlens = {0, static_cast<int32_t>(N)};
    return b;
  };

  auto check_softmax = [] {
    const int h = 3, d = 16;
    std::vector<int32_t> cu = {0, 1, 70, 135};
    auto qkv = randn(135 * 3 * h * d, 31), dout = randn(135 * h * d, 32);
    std::vector<float> out(135 * h * d), lse(h * 135), dqkv(qkv.size());
    cpu::attention_softmax_forward(out.data(), lse.data(), qkv.data(), cu.data(), 3, 135, h, d);
    cpu::attention_softmax_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), cu.data(), 3, 135, h,
                                    d);
    auto ref = reference::attention_softmax_forward(to_double(qkv), cu, h, d);
    auto dref = reference::attention_softmax_backward(to_double(dout), to_double(qkv), cu, h, d);
    return std::max(normalised_error(out, ref.out), normalised_error(dqkv, dref));
  };
  auto check_linear = [] {
    const int h = 3, d = 16;
    std::vector<int32_t> cu = {0, 1, 70, 135};
    auto qkv = randn(135 * 3 * h * d, 33, 0.5), dout = randn(135 * h * d, 34);
    auto slopes = linear_attention_slopes(h);
    std::vector<float> out(135 * h * d), dqkv(qkv.size());
    cpu::attention_linear_forward(out.data(), nullptr, qkv.data(), slopes.data(), nullptr, cu.data(), 3, 135, h, d, 16);
    cpu::attention_linear_backward(dqkv.data(), nullptr, dout.data(), nullptr, qkv.data(), slopes.data(), nullptr,
                                   cu.data(), 3, 135, h, d, 16);
    auto qd = to_double(qkv), sd = std::vector<double>(slopes.begin(), slopes.end()), dd = to_double(dout);
    std::vector<double> ref(out.size()), dref(qkv.size());
    reference::attention_linear_forward<double>(ref.data(), nullptr, qd.data(), sd.data(), nullptr, cu.data(), 3, 135, h,
                                                d);
    reference::attention_linear_backward<double>(dref.data(), nullptr, dd.data(), nullptr, qd.data(), sd.data(),
                                                 nullptr, cu.data(), 3, 135, h, d);
    return std::max(normalised_error(out, ref), normalised_error(dqkv, dref));
  };

  std::vector<KernelBench> benches;
  const int64_t Ns = 1024;
  auto s = make(Ns, 40);
  const double causal_fwd = 2.0 * Ns * Ns * D * H;  // QK^T and PV over the causal half
  const std::string sshape = fmt::format("N={} H={} D={}", Ns, H, D);
  benches.push_back({"softmax attention fwd", sshape, check_softmax,
                     [s] {
                       cpu::attention_softmax_forward(s->out.data(), s->lse.data(), s->qkv.data(), s->cu_seqlens.data(),
                                                      1, s->N, H, D);
                     },
                     causal_fwd, 0});
  benches.push_back({"softmax attention bwd", sshape, check_softmax,
                     [s] {
                       cpu::attention_softmax_backward(s->dqkv.data(), s->dout.data(), s->qkv.data(), s->out.data(),
                                                       s->lse.data(), s->cu_seqlens.data(), 1, s->N, H, D);
                     },
                     2.5 * causal_fwd, 0});
  benches.push_back({"softmax attention fwd+bwd naive", sshape, check_softmax,
                     [s] {
                       std::vector<int32_t> cu(s->cu_seqlens);
                       auto r = reference::attention_softmax_forward(s->qkv, cu, H, D);
                       (void)reference::attention_softmax_backward(s->dout, s->qkv, cu, H, D);
                     },
                     3.5 * causal_fwd, 0});

  const int64_t Nl = 4096;
  auto l = make(Nl, 50);
  const double linear_fwd = double(Nl) * H * (4.0 * chunk * D + 4.0 * D * D);  // full chunk tiles
  const std::string lshape = fmt::format("N={} H={} D={} chunk={}", Nl, H, D, chunk);
  benches.push_back({"linear attention fwd", lshape, check_linear,
                     [l] {
                       cpu::attention_linear_forward(l->out.data(), l->state.data(), l->qkv.data(), l->slopes.data(),
                                                     nullptr, l->cu_seqlens.data(), 1, l->N, H, D, chunk);
                     },
                     linear_fwd, 0});
  benches.push_back({"linear attention bwd", lshape, check_linear,
                     [l] {
                       cpu::attention_linear_backward(l->dqkv.data(), nullptr, l->dout.data(), nullptr, l->qkv.data(),
                                                      l->slopes.data(), nullptr, l->cu_seqlens.data(), 1, l->N, H, D,
                                                      chunk);
                     },
                     2.0 * linear_fwd, 0});
  benches.push_back({"linear attention fwd+bwd naive (recurrent)", lshape, check_linear,
                     [l] {
                       reference::attention_linear_forward<float>(l->out.data(), nullptr, l->qkv.data(),
                                                                  l->slopes.data(), nullptr, l->cu_seqlens.data(), 1,
                                                                  l->N, H, D);
                       reference::attention_linear_backward<float>(l->dqkv.data(), nullptr, l->dout.data(), nullptr,
                                                                   l->qkv.data(), l->slopes.data(), nullptr,
                                                                   l->cu_seqlens.data(), 1, l->N, H, D);
                     },
                     3.0 * linear_fwd, 0});
  return benches;
}

}  // namespace trident::bench
