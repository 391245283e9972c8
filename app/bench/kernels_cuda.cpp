// trident bench kernels --backend cuda: every CUDA kernel, in fp32 and in bf16 where its launcher is templated on
// the storage type, is first checked against the CPU kernel on a small odd shape (inputs rounded to the storage type
// first, so both sides see the same values; a failure stops the bench with exit code 1), then timed at GPT-2-small
// shapes with CUDA events: N = 4 x 1024 tokens, C = 768, H = 12, D = 64, V = 50304, AdamW over the 124M parameters.
// Reports ms and TFLOP/s (GEMM-like kernels) or GB/s (memory-bound ones, compulsory traffic). Measured in the same
// run: the cuBLAS GEMM roof and the device's dense bf16 peak; then a GPT-2-small training step (B=4, T=1024, bf16)
// ESTIMATED as the sum of the measured kernel times times how often the step calls each kernel — not a measured step
// (no launch gaps, syncs, copies or the bf16 copy of the master weights) — and its MFU.
//
// Check tolerances, max |cuda - cpu| / max |cpu| (the CUDA kernel tests' bounds, rounded up):
//   fp32  1e-5  fp32 on both sides; only summation orders and exp implementations differ.
//         2e-5  attention: many exps and long sums per output (tiles vs OpenBLAS GEMMs).
//   bf16  1e-2  each bf16 output is rounded once more (2^-9 relative) on top of the fp32 differences.
//         2e-2  attention: backward also reads the bf16-rounded forward output, and dqkv accumulates in bf16.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/attention_block.h"
#include "kernels/cpu/attention_linear.h"
#include "kernels/cpu/attention_softmax.h"
#include "kernels/cpu/crossentropy.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/feature_map.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/grad_norm.h"
#include "kernels/cpu/layernorm.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/residual.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/attention_block.h"
#include "kernels/cuda/attention_linear.h"
#include "kernels/cuda/attention_softmax.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/crossentropy.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/feature_map.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/grad_norm.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/residual.h"
#include "kernels/cuda/rmsnorm.h"
#include "kernels/cuda/streams.h"
#include "kernels/cuda/strided_rows.h"
#include "kernels/shared/bf16.h"
#include "kernels/shared/decay.h"

namespace trident::bench {

namespace {

// GPT-2 small: the timed shapes, and the step that is estimated (N = B x T tokens, 12 layers).
constexpr int kB = 4, kT = 1024, kL = 12, kC = 768, kH = 12, kD = 64, kV = 50304, kChunk = 64;
constexpr int64_t kN = int64_t{kB} * kT, kNC = kN * kC, kWide = kN * 4 * kC;
// wte + wpe + 12 layers of (c_attn, c_proj, c_fc, c_proj, ln_1, ln_2) + ln_f = 124,475,904
constexpr int64_t kParams = int64_t{kV} * kC + int64_t{kT} * kC + kL * (12LL * kC * kC + 13LL * kC) + 2LL * kC;

// Uniform in [-scale, scale) from a splitmix64 stream: cheap enough for the 200M logits of the timed shape.
std::vector<float> random_vector(std::size_t n, uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull;
  for (float& x : v) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x = scale * (static_cast<float>(z >> 40) * 0x1p-23f - 1.0f);  // 24 random bits -> [-1, 1)
  }
  return v;
}

template <class T>
std::vector<T> to_storage(const std::vector<float>& x) {
  std::vector<T> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = from_float<T>(x[i]);
  return y;
}

template <class T>
std::vector<float> to_f32(const std::vector<T>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = to_float(x[i]);
  return y;
}

// x as a kernel of storage type T sees it (rounded to bf16 for bf16), for the CPU side of a check.
template <class T>
std::vector<float> rounded(const std::vector<float>& x) {
  return to_f32(to_storage<T>(x));
}

// Device memory from cudaMalloc, zeroed or uploaded from the host; freed on destruction.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    TRIDENT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<std::size_t>(n, 1) * sizeof(T)));
    TRIDENT_CUDA_CHECK(cudaMemset(ptr_, 0, n * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    TRIDENT_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr_); }
  T* get() const { return ptr_; }
  std::vector<T> download() const {  // after all work on the device
    std::vector<T> host(n_);
    TRIDENT_CUDA_CHECK(cudaDeviceSynchronize());
    TRIDENT_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_;
};

// Random device data of storage type T (returned as a prvalue: no copy or move is made).
template <class T>
DeviceBuffer<T> random_buffer(std::size_t n, uint64_t seed, float scale = 1.0f) {
  return DeviceBuffer<T>(to_storage<T>(random_vector(n, seed, scale)));
}

// ids[t] = (t * stride) % modulo: token ids, targets and positions spread over their range.
std::vector<int32_t> cyclic_ids(int64_t n, int64_t stride, int64_t modulo) {
  std::vector<int32_t> ids(n);
  for (int64_t t = 0; t < n; ++t) ids[t] = static_cast<int32_t>((t * stride) % modulo);
  return ids;
}

// cu_seqlens of n_seq sequences of `length` tokens each.
std::vector<int32_t> equal_sequences(int n_seq, int length) {
  std::vector<int32_t> cu(n_seq + 1);
  for (int s = 0; s <= n_seq; ++s) cu[s] = s * length;
  return cu;
}

// max |got - want| / max |want| over a device result and its CPU twin; NaN or Inf counts as an infinite error.
template <class T>
double error(const DeviceBuffer<T>& got_d, const std::vector<float>& want) {
  const std::vector<float> got = to_f32(got_d.download());
  double err = 0, mag = 1e-30;
  for (std::size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::isfinite(got[i]) ? std::abs(double(got[i]) - want[i]) : INFINITY);
    mag = std::max(mag, std::abs(double(want[i])));
  }
  return err / mag;
}

template <class T>
double tolerance(bool attention) {
  if constexpr (std::is_same_v<T, float>) return attention ? 2e-5 : 1e-5;
  return attention ? 2e-2 : 1e-2;
}

// ---- checks: the CUDA kernel against the CPU kernel at a small odd shape; forward and backward together ----

template <class T>
double check_linear() {
  const int64_t n = 37;
  const int c = 45, oc = 29;
  auto x = rounded<T>(random_vector(n * c, 11)), w = rounded<T>(random_vector(c * oc, 12));
  auto b = rounded<T>(random_vector(oc, 13)), dy = rounded<T>(random_vector(n * oc, 14));
  std::vector<float> y(n * oc), dx(n * c), dw(c * oc), db(oc);
  cpu::linear_forward(y.data(), x.data(), w.data(), b.data(), n, c, oc);
  cpu::linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), n, c, oc);
  DeviceBuffer<T> x_d(to_storage<T>(x)), w_d(to_storage<T>(w)), b_d(to_storage<T>(b)), dy_d(to_storage<T>(dy));
  DeviceBuffer<T> y_d(y.size()), dx_d(dx.size());
  DeviceBuffer<float> dw_d(dw.size()), db_d(db.size());
  cuda::linear_forward(y_d.get(), x_d.get(), w_d.get(), b_d.get(), n, c, oc, nullptr);
  cuda::linear_backward(dx_d.get(), dw_d.get(), db_d.get(), dy_d.get(), x_d.get(), w_d.get(), n, c, oc, nullptr);
  return std::max({error(y_d, y), error(dx_d, dx), error(dw_d, dw), error(db_d, db)});
}

// The tied LM head's three GEMMs: logits = x wte^T, dx += dlogits wte, dwte (fp32) += dlogits^T x.
template <class T>
double check_lm_head() {
  const int64_t n = 37, c = 45, v = 29;
  auto x = rounded<T>(random_vector(n * c, 41)), wte = rounded<T>(random_vector(v * c, 42));
  auto dl = rounded<T>(random_vector(n * v, 43));
  std::vector<float> logits(n * v), dx(n * c), dwte(v * c);
  cpu::gemm(Trans::no, Trans::yes, n, v, c, 1.0f, x.data(), c, wte.data(), c, 0.0f, logits.data(), v);
  cpu::gemm(Trans::no, Trans::no, n, c, v, 1.0f, dl.data(), v, wte.data(), c, 1.0f, dx.data(), c);
  cpu::gemm(Trans::yes, Trans::no, v, c, n, 1.0f, dl.data(), v, x.data(), c, 1.0f, dwte.data(), c);
  DeviceBuffer<T> x_d(to_storage<T>(x)), wte_d(to_storage<T>(wte)), dl_d(to_storage<T>(dl));
  DeviceBuffer<T> logits_d(logits.size()), dx_d(dx.size());
  DeviceBuffer<float> dwte_d(dwte.size());
  cuda::gemm<T>(Trans::no, Trans::yes, n, v, c, 1.0f, x_d.get(), c, wte_d.get(), c, 0.0f, logits_d.get(), v, nullptr);
  cuda::gemm<T>(Trans::no, Trans::no, n, c, v, 1.0f, dl_d.get(), v, wte_d.get(), c, 1.0f, dx_d.get(), c, nullptr);
  cuda::gemm<T, float>(Trans::yes, Trans::no, v, c, n, 1.0f, dl_d.get(), v, x_d.get(), c, 1.0f, dwte_d.get(), c,
                       nullptr);
  return std::max({error(logits_d, logits), error(dx_d, dx), error(dwte_d, dwte)});
}

template <class T>
double check_layernorm() {
  const int64_t n = 37;
  const int c = 70;
  auto x = rounded<T>(random_vector(n * c, 15)), dy = rounded<T>(random_vector(n * c, 16));
  auto w = random_vector(c, 17), b = random_vector(c, 18);
  std::vector<float> y(n * c), mean(n), rstd(n), dx(n * c), dw(c), db(c);
  cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), n, c);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), n,
                          c);
  DeviceBuffer<T> x_d(to_storage<T>(x)), dy_d(to_storage<T>(dy)), y_d(y.size()), dx_d(dx.size());
  DeviceBuffer<float> w_d(w), b_d(b), mean_d(mean.size()), rstd_d(rstd.size()), dw_d(dw.size()), db_d(db.size());
  cuda::layernorm_forward(y_d.get(), mean_d.get(), rstd_d.get(), x_d.get(), w_d.get(), b_d.get(), n, c, nullptr);
  cuda::layernorm_backward(dx_d.get(), dw_d.get(), db_d.get(), dy_d.get(), x_d.get(), w_d.get(), mean_d.get(),
                           rstd_d.get(), n, c, nullptr);
  return std::max({error(y_d, y), error(mean_d, mean), error(rstd_d, rstd), error(dx_d, dx), error(dw_d, dw),
                   error(db_d, db)});
}

template <class T>
double check_gelu() {
  const int64_t n = 9;
  const int oc = 111;
  auto pre = rounded<T>(random_vector(n * oc, 19, 4.0f)), bias = rounded<T>(random_vector(oc, 21));
  auto dy = rounded<T>(random_vector(n * oc, 20));
  std::vector<float> h(pre), y(n * oc), dx(n * oc), db(oc, 0.0f);
  cpu::bias_gelu_forward(h.data(), y.data(), bias.data(), n, oc);
  cpu::bias_gelu_backward(dx.data(), db.data(), h.data(), dy.data(), n, oc);
  DeviceBuffer<T> h_d(to_storage<T>(pre)), bias_d(to_storage<T>(bias)), dy_d(to_storage<T>(dy)), y_d(y.size()),
      dx_d(dx.size());
  DeviceBuffer<float> db_d(std::vector<float>(oc, 0.0f));
  cuda::bias_gelu_forward(h_d.get(), y_d.get(), bias_d.get(), n, oc, nullptr);
  cuda::bias_gelu_backward(dx_d.get(), db_d.get(), h_d.get(), dy_d.get(), n, oc, nullptr);
  return std::max({error(h_d, h), error(y_d, y), error(dx_d, dx), error(db_d, db)});
}

template <class T>
double check_residual() {
  const int64_t n = 999;
  auto a = rounded<T>(random_vector(n, 21)), b = rounded<T>(random_vector(n, 22));
  auto dy = rounded<T>(random_vector(n, 23));
  std::vector<float> y(n), da(n), db(n);
  cpu::residual_forward(y.data(), a.data(), b.data(), n);
  cpu::residual_backward(da.data(), db.data(), dy.data(), n);
  DeviceBuffer<T> a_d(to_storage<T>(a)), b_d(to_storage<T>(b)), dy_d(to_storage<T>(dy));
  DeviceBuffer<T> y_d(y.size()), da_d(da.size()), db_d(db.size());
  cuda::residual_forward(y_d.get(), a_d.get(), b_d.get(), n, nullptr);
  cuda::residual_backward(da_d.get(), db_d.get(), dy_d.get(), n, nullptr);
  return std::max({error(y_d, y), error(da_d, da), error(db_d, db)});
}

template <class T>
double check_crossentropy() {
  const int v = 301;
  const std::vector<int32_t> targets = {0, 300, 5, -1, 77};
  const auto n = static_cast<int64_t>(targets.size());
  auto logits = rounded<T>(random_vector(n * v, 24, 4.0f));
  std::vector<float> weight(n, 0.2f), loss(n), dlogits = logits;
  cpu::crossentropy_fused_backward(loss.data(), dlogits.data(), targets.data(), weight.data(), n, v);
  DeviceBuffer<T> logits_d(to_storage<T>(logits));
  DeviceBuffer<float> weight_d(weight), loss_d(loss.size());
  DeviceBuffer<int32_t> targets_d(targets);
  cuda::crossentropy_fused_backward(loss_d.get(), logits_d.get(), targets_d.get(), weight_d.get(), n, v, nullptr);
  return std::max(error(loss_d, loss), error(logits_d, dlogits));
}

template <class T>
double check_embedding() {
  const int c = 70;
  const std::vector<int32_t> tokens = {3, 1, 3, 0}, positions = {0, 1, 2, 3};
  const auto n = static_cast<int64_t>(tokens.size());
  auto wte = random_vector(4 * c, 25), wpe = random_vector(4 * c, 26), dy = rounded<T>(random_vector(n * c, 27));
  std::vector<float> y(n * c), dwte(wte.size()), dwpe(wpe.size());
  cpu::embedding_forward(y.data(), tokens.data(), positions.data(), wte.data(), wpe.data(), n, c);
  cpu::embedding_backward(dwte.data(), dwpe.data(), dy.data(), tokens.data(), positions.data(), n, c);
  DeviceBuffer<int32_t> tokens_d(tokens), positions_d(positions);
  DeviceBuffer<float> wte_d(wte), wpe_d(wpe), dwte_d(dwte.size()), dwpe_d(dwpe.size());
  DeviceBuffer<T> dy_d(to_storage<T>(dy)), y_d(y.size());
  cuda::embedding_forward(y_d.get(), tokens_d.get(), positions_d.get(), wte_d.get(), wpe_d.get(), n, c, nullptr);
  cuda::embedding_backward(dwte_d.get(), dwpe_d.get(), dy_d.get(), tokens_d.get(), positions_d.get(), n, c, nullptr);
  return std::max({error(y_d, y), error(dwte_d, dwte), error(dwpe_d, dwpe)});
}

// Linear attention's output norm over whole rows, gated; dinp and dgate from non-zero values (they accumulate).
template <class T>
double check_rmsnorm_gated() {
  const int64_t n = 37;
  const int c = 70;
  auto x = rounded<T>(random_vector(n * c, 28, 3.0f)), gate = rounded<T>(random_vector(n * c, 29));
  auto dy = rounded<T>(random_vector(n * c, 30)), dx0 = rounded<T>(random_vector(n * c, 38));
  auto dgate0 = rounded<T>(random_vector(n * c, 39));
  std::vector<float> y(n * c), rrms(n), dx = dx0, dgate = dgate0;
  cpu::rmsnorm_forward(y.data(), rrms.data(), x.data(), gate.data(), n, c);
  cpu::rmsnorm_backward(dx.data(), dgate.data(), dy.data(), x.data(), gate.data(), rrms.data(), n, c);
  DeviceBuffer<T> x_d(to_storage<T>(x)), gate_d(to_storage<T>(gate)), dy_d(to_storage<T>(dy)), y_d(y.size());
  DeviceBuffer<T> dx_d(to_storage<T>(dx0)), dgate_d(to_storage<T>(dgate0));
  DeviceBuffer<float> rrms_d(rrms.size());
  cuda::rmsnorm_forward(y_d.get(), rrms_d.get(), x_d.get(), gate_d.get(), n, c, nullptr);
  cuda::rmsnorm_backward(dx_d.get(), dgate_d.get(), dy_d.get(), x_d.get(), gate_d.get(), rrms_d.get(), n, c, nullptr);
  return std::max({error(y_d, y), error(rrms_d, rrms), error(dx_d, dx), error(dgate_d, dgate)});
}

// Linear attention's q/k feature map, both maps (the bench times silu, TransNormerLLM's default).
template <class T>
double check_feature_map() {
  const int64_t n = 37;
  const int c = 45;
  double err = 0;
  for (FeatureMap map : {FeatureMap::silu, FeatureMap::elu1}) {
    auto qkv = rounded<T>(random_vector(n * 3 * c, 40, 4.0f)), dqkv = rounded<T>(random_vector(n * 3 * c, 41));
    DeviceBuffer<T> qkv_d(to_storage<T>(qkv)), dqkv_d(to_storage<T>(dqkv)), pre_d(n * 2 * c);
    std::vector<float> pre(n * 2 * c);
    cpu::feature_map_forward(qkv.data(), pre.data(), n, c, map);
    cpu::feature_map_backward(dqkv.data(), pre.data(), n, c, map);
    cuda::feature_map_forward(qkv_d.get(), pre_d.get(), n, c, map, nullptr);
    cuda::feature_map_backward(dqkv_d.get(), pre_d.get(), n, c, map, nullptr);
    err = std::max({err, error(qkv_d, qkv), error(pre_d, pre), error(dqkv_d, dqkv)});
  }
  return err;
}

// Attention checks: 3 sequences (one of a single token) of 135 tokens, H = 3, D = 16.
constexpr int kCheckH = 3, kCheckD = 16, kCheckSeqs = 3;
constexpr int64_t kCheckN = 135;
const std::vector<int32_t> kCheckCu = {0, 1, 70, 135};

template <class T>
double check_softmax_attention() {
  const int h = kCheckH, d = kCheckD;
  const int64_t n = kCheckN;
  auto qkv = rounded<T>(random_vector(n * 3 * h * d, 31)), dout = rounded<T>(random_vector(n * h * d, 32));
  std::vector<float> out(n * h * d), lse(h * n), dqkv(qkv.size());
  const int32_t* cu = kCheckCu.data();
  cpu::attention_softmax_forward(out.data(), lse.data(), qkv.data(), cu, kCheckSeqs, n, h, d);
  cpu::attention_softmax_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), cu, kCheckSeqs, n, h,
                                  d);
  DeviceBuffer<T> qkv_d(to_storage<T>(qkv)), dout_d(to_storage<T>(dout)), out_d(out.size()), dqkv_d(dqkv.size());
  DeviceBuffer<float> lse_d(lse.size());
  DeviceBuffer<int32_t> cu_d(kCheckCu);
  cuda::attention_softmax_forward(out_d.get(), lse_d.get(), qkv_d.get(), cu_d.get(), kCheckSeqs, n, h, d, nullptr);
  cuda::attention_softmax_backward(dqkv_d.get(), dout_d.get(), qkv_d.get(), out_d.get(), lse_d.get(), cu_d.get(),
                                   kCheckSeqs, n, h, d, nullptr);
  return std::max({error(out_d, out), error(lse_d, lse), error(dqkv_d, dqkv)});
}

template <class T>
double check_linear_attention() {
  const int h = kCheckH, d = kCheckD, chunk = 16;
  const int64_t n = kCheckN;
  auto qkv = rounded<T>(random_vector(n * 3 * h * d, 33, 0.5f)), dout = rounded<T>(random_vector(n * h * d, 34));
  const std::vector<float> slopes = linear_attention_slopes(h);
  std::vector<float> out(n * h * d), state(kCheckSeqs * h * d * d), dqkv(qkv.size());
  const int32_t* cu = kCheckCu.data();
  cpu::attention_linear_forward(out.data(), state.data(), qkv.data(), slopes.data(), nullptr, cu, kCheckSeqs, n, h, d,
                                chunk);
  cpu::attention_linear_backward(dqkv.data(), nullptr, dout.data(), nullptr, qkv.data(), slopes.data(), nullptr, cu,
                                 kCheckSeqs, n, h, d, chunk);
  DeviceBuffer<T> qkv_d(to_storage<T>(qkv)), dout_d(to_storage<T>(dout)), out_d(out.size()), dqkv_d(dqkv.size());
  DeviceBuffer<float> slopes_d(slopes), state_d(state.size());
  DeviceBuffer<int32_t> cu_d(kCheckCu);
  cuda::attention_linear_forward(out_d.get(), state_d.get(), qkv_d.get(), slopes_d.get(), nullptr, cu_d.get(),
                                 kCheckSeqs, n, h, d, chunk, nullptr);
  cuda::attention_linear_backward(dqkv_d.get(), nullptr, dout_d.get(), nullptr, qkv_d.get(), slopes_d.get(), nullptr,
                                  cu_d.get(), kCheckSeqs, n, h, d, chunk, nullptr);
  return std::max({error(out_d, out), error(state_d, state), error(dqkv_d, dqkv)});
}

// Ring Attention's block ops (fp32): the second document's queries against a key block that ends inside them,
// which cuts the first document, so rows see all, part or none of it.
double check_attention_block() {
  const int h = kCheckH, d = kCheckD;
  const int64_t C = int64_t(h) * d, n = 65, n_k = 50, q_pos0 = 70, k_pos0 = 40;
  const std::vector<int64_t> docs(n, 60);  // the queries' document starts at 60
  const auto q = random_vector(n * C, 33), kv = random_vector(n_k * 2 * C, 34), dout = random_vector(n * C, 35);
  std::vector<float> m(h * n, -INFINITY), l(h * n, 0.0f), acc(n * C, 0.0f), out(n * C), lse(h * n), delta(h * n),
      dq(n * C, 0.0f), dkv(n_k * 2 * C, 0.0f);
  cpu::attention_block_forward(m.data(), l.data(), acc.data(), q.data(), C, n, q_pos0, docs.data(), kv.data(), n_k,
                               k_pos0, h, d);
  // Every row sees key 60 and its own position at least (l > 0), so the state is finished for finish and backward.
  cpu::attention_block_finish(out.data(), lse.data(), m.data(), l.data(), acc.data(), n, h, d);
  cpu::attention_block_delta(delta.data(), out.data(), dout.data(), n, h, d);
  cpu::attention_block_backward(dq.data(), C, dkv.data(), q.data(), C, n, q_pos0, docs.data(), dout.data(), lse.data(),
                                delta.data(), kv.data(), n_k, k_pos0, h, d);
  DeviceBuffer<float> m_d(std::vector<float>(h * n, -INFINITY)), l_d(h * n), acc_d(n * C), q_d(q), kv_d(kv),
      dout_d(dout), out_d(n * C), lse_d(h * n), delta_d(h * n), dq_d(n * C), dkv_d(n_k * 2 * C);
  DeviceBuffer<int64_t> docs_d(docs);
  cuda::attention_block_forward(m_d.get(), l_d.get(), acc_d.get(), q_d.get(), C, n, q_pos0, docs_d.get(), kv_d.get(),
                                n_k, k_pos0, h, d, nullptr);
  cuda::attention_block_finish(out_d.get(), lse_d.get(), m_d.get(), l_d.get(), acc_d.get(), n, h, d, nullptr);
  cuda::attention_block_delta(delta_d.get(), out_d.get(), dout_d.get(), n, h, d, nullptr);
  cuda::attention_block_backward(dq_d.get(), C, dkv_d.get(), q_d.get(), C, n, q_pos0, docs_d.get(), dout_d.get(),
                                 lse_d.get(), delta_d.get(), kv_d.get(), n_k, k_pos0, h, d, nullptr);
  return std::max({error(out_d, out), error(lse_d, lse), error(delta_d, delta), error(dq_d, dq), error(dkv_d, dkv)});
}


double check_adamw() {
  const int64_t n = 1000;
  auto p = random_vector(n, 35), g = random_vector(n, 36);
  std::vector<float> m(n), v(n);
  const AdamWStep step = cpu::adamw_step({1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f}, 1);
  DeviceBuffer<float> p_d(p), g_d(g), m_d(m), v_d(v);
  cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, step, 0.5f);
  cuda::adamw_update(p_d.get(), g_d.get(), m_d.get(), v_d.get(), n, step, 0.5f, nullptr);
  return std::max({error(p_d, p), error(m_d, m), error(v_d, v)});
}

double check_grad_norm() {
  const auto x = random_vector(999, 37);
  const DeviceBuffer<float> x_d(x);
  const double want = cpu::squared_norm(x.data(), 999);
  return std::abs(cuda::squared_norm(x_d.get(), 999, nullptr) - want) / want;
}

// ---- timed benches ----

struct CudaBench {
  std::string name;  // with the dtype, the key of the step estimate's call table
  std::string shape;
  std::function<double()> check;  // normalised error against the CPU kernel (small shape)
  double tolerance;
  std::function<void(cudaStream_t)> run;  // one call at the timed shape
  double flops = 0;                       // per call; 0 for memory-bound kernels
  double bytes = 0;                       // per call, compulsory traffic
};

// Seconds per call of fn on `stream`, timed with CUDA events: a warm-up call, one call to size the runs, then five
// runs of enough calls each to fill min_seconds in total; the median run resists a noisy neighbour (as time_call).
double time_cuda(const std::function<void(cudaStream_t)>& fn, cudaStream_t stream, double min_seconds) {
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    Events() {
      TRIDENT_CUDA_CHECK(cudaEventCreate(&start));
      TRIDENT_CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~Events() {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    }
  } events;
  // Uploads and memsets run on the legacy stream, which a non-blocking stream does not wait for.
  TRIDENT_CUDA_CHECK(cudaDeviceSynchronize());
  auto seconds_of = [&](int calls) {
    TRIDENT_CUDA_CHECK(cudaEventRecord(events.start, stream));
    for (int i = 0; i < calls; ++i) fn(stream);
    TRIDENT_CUDA_CHECK(cudaEventRecord(events.stop, stream));
    TRIDENT_CUDA_CHECK(cudaEventSynchronize(events.stop));
    float ms = 0;
    TRIDENT_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
    return ms * 1e-3;
  };
  seconds_of(1);  // warm-up: module loading, cuBLAS heuristics, memory pool growth
  const int calls = std::max(1, static_cast<int>(min_seconds / 5 / std::max(seconds_of(1), 1e-7)));
  std::vector<double> per_call;
  for (int run = 0; run < 5; ++run) per_call.push_back(seconds_of(calls) / calls);
  std::nth_element(per_call.begin(), per_call.begin() + 2, per_call.end());
  return per_call[2];
}

// Embedding, layernorm, the four linear layers of a block, GELU and residual at N tokens.
template <class T>
std::vector<CudaBench> layer_benches() {
  struct Buffers {
    DeviceBuffer<T> a = random_buffer<T>(kWide, 1), b = random_buffer<T>(kWide, 2), c = random_buffer<T>(kWide, 3),
                    weight = random_buffer<T>(4 * kC * kC, 4, 0.02f), bias = random_buffer<T>(4 * kC, 5);
    DeviceBuffer<float> ln_w = random_buffer<float>(kC, 6), ln_b = random_buffer<float>(kC, 7),
                        wte = random_buffer<float>(int64_t{kV} * kC, 8, 0.02f),
                        wpe = random_buffer<float>(int64_t{kT} * kC, 9, 0.02f);
    DeviceBuffer<float> mean{kN}, rstd{kN}, dweight{4 * kC * kC}, dbias{4 * kC}, dwte{int64_t{kV} * kC},
        dwpe{int64_t{kT} * kC};
    DeviceBuffer<int32_t> tokens{cyclic_ids(kN, 7919, kV)}, positions{cyclic_ids(kN, 1, kT)};
    // linear attention's output gate and q/k feature map
    DeviceBuffer<T> gate = random_buffer<T>(kNC, 10), dgate{kNC}, qkv = random_buffer<T>(3 * kNC, 11, 2.0f),
                    qk_pre{2 * kNC}, dqkv = random_buffer<T>(3 * kNC, 12), dqk_saved{2 * kNC};
    DeviceBuffer<float> rrms{kN};
  };
  auto buf = std::make_shared<Buffers>();
  // what the in-place feature map benches restore before each call: q|k into qk_pre, dq|dk into dqk_saved
  cuda::copy_rows(buf->qk_pre.get(), 2 * kC, buf->qkv.get(), 3 * kC, kN, 2 * kC, nullptr);
  cuda::copy_rows(buf->dqk_saved.get(), 2 * kC, buf->dqkv.get(), 3 * kC, kN, 2 * kC, nullptr);
  TRIDENT_CUDA_CHECK(cudaDeviceSynchronize());
  const double e = sizeof(T), f = sizeof(float);
  const std::string nc = fmt::format("N={} C={}", kN, kC), nw = fmt::format("n={}", kWide);
  std::vector<CudaBench> benches;
  benches.push_back({"embedding fwd", nc + " (wte+wpe)", check_embedding<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::embedding_forward(buf->a.get(), buf->tokens.get(), buf->positions.get(), buf->wte.get(),
                                               buf->wpe.get(), kN, kC, s);
                     },
                     0, kNC * (2 * f + e)});
  benches.push_back({"embedding bwd", nc + " (wte+wpe)", check_embedding<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::embedding_backward(buf->dwte.get(), buf->dwpe.get(), buf->a.get(), buf->tokens.get(),
                                                buf->positions.get(), kN, kC, s);
                     },
                     0, kNC * (e + 4 * f)});
  benches.push_back({"layernorm fwd", nc, check_layernorm<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::layernorm_forward(buf->b.get(), buf->mean.get(), buf->rstd.get(), buf->a.get(),
                                               buf->ln_w.get(), buf->ln_b.get(), kN, kC, s);
                     },
                     0, 2 * kNC * e});
  benches.push_back({"layernorm bwd", nc, check_layernorm<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::layernorm_backward(buf->c.get(), buf->dweight.get(), buf->dbias.get(), buf->b.get(),
                                                buf->a.get(), buf->ln_w.get(), buf->mean.get(), buf->rstd.get(), kN,
                                                kC, s);
                     },
                     0, 4 * kNC * e});
  struct Linear {
    const char* name;
    int c, oc;
  };
  for (const Linear& l : {Linear{"attn.c_attn", kC, 3 * kC}, Linear{"attn.c_proj", kC, kC},
                          Linear{"mlp.c_fc", kC, 4 * kC}, Linear{"mlp.c_proj", 4 * kC, kC}}) {
    const std::string shape = fmt::format("N={} {}->{}", kN, l.c, l.oc);
    const double flops = 2.0 * kN * l.c * l.oc;
    benches.push_back({fmt::format("linear fwd ({})", l.name), shape, check_linear<T>, tolerance<T>(false),
                       [buf, l](cudaStream_t s) {
                         cuda::linear_forward(buf->b.get(), buf->a.get(), buf->weight.get(), buf->bias.get(), kN,
                                              l.c, l.oc, s);
                       },
                       flops, 0});
    benches.push_back({fmt::format("linear bwd ({})", l.name), shape, check_linear<T>, tolerance<T>(false),
                       [buf, l](cudaStream_t s) {
                         cuda::linear_backward(buf->c.get(), buf->dweight.get(), buf->dbias.get(), buf->b.get(),
                                               buf->a.get(), buf->weight.get(), kN, l.c, l.oc, s);
                       },
                       2 * flops, 0});
  }
  benches.push_back({"bias + gelu fwd (mlp.c_fc)", nw, check_gelu<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::bias_gelu_forward(buf->a.get(), buf->b.get(), buf->bias.get(), kN, 4 * kC, s);
                     },
                     0, 3 * kWide * e});
  benches.push_back({"bias + gelu bwd (mlp.c_fc)", nw, check_gelu<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::bias_gelu_backward(buf->c.get(), buf->dbias.get(), buf->a.get(), buf->b.get(), kN,
                                                4 * kC, s);
                     },
                     0, 3 * kWide * e});
  benches.push_back({"residual fwd", nc, check_residual<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::residual_forward(buf->c.get(), buf->a.get(), buf->b.get(), kNC, s);
                     },
                     0, 3 * kNC * e});
  benches.push_back({"residual bwd", nc, check_residual<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::residual_backward(buf->b.get(), buf->c.get(), buf->a.get(), kNC, s);
                     },
                     0, 5 * kNC * e});
  // Linear attention's output norm and gate over whole rows (not part of the GPT-2 step estimate).
  benches.push_back({"rmsnorm gated fwd", nc, check_rmsnorm_gated<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::rmsnorm_forward(buf->b.get(), buf->rrms.get(), buf->a.get(), buf->gate.get(), kN, kC, s);
                     },
                     0, 3 * kNC * e});
  benches.push_back({"rmsnorm gated bwd", nc, check_rmsnorm_gated<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::rmsnorm_backward(buf->c.get(), buf->dgate.get(), buf->b.get(), buf->a.get(),
                                              buf->gate.get(), buf->rrms.get(), kN, kC, s);
                     },
                     0, 7 * kNC * e});
  // The feature map works in place: each call first restores its input (q|k, dq|dk), so every call maps the same
  // values rather than ones drifting towards 0 (silu) or subnormals. Bytes count the restore.
  const std::string qkv = fmt::format("N={} 3C={} (+ restore)", kN, 3 * kC);
  benches.push_back({"feature map fwd (silu)", qkv, check_feature_map<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::copy_rows(buf->qkv.get(), 3 * kC, buf->qk_pre.get(), 2 * kC, kN, 2 * kC, s);
                       cuda::feature_map_forward(buf->qkv.get(), buf->qk_pre.get(), kN, kC, FeatureMap::silu, s);
                     },
                     0, 10 * kNC * e});
  benches.push_back({"feature map bwd (silu)", qkv, check_feature_map<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::copy_rows(buf->dqkv.get(), 3 * kC, buf->dqk_saved.get(), 2 * kC, kN, 2 * kC, s);
                       cuda::feature_map_backward(buf->dqkv.get(), buf->qk_pre.get(), kN, kC, FeatureMap::silu, s);
                     },
                     0, 10 * kNC * e});
  return benches;
}

// Causal softmax and linear attention over B sequences of T tokens. FLOPs count the causal half only: softmax
// forward 2 B T^2 C (QK^T and PV), backward 2.5x (P recomputed, dV, dP, dQ, dK); linear attention as GPT::flops
// counts it, N H (2 chunk D + 4 D^2) forward (masked intra-chunk half, inter-chunk product, state update), backward 2x.
template <class T>
std::vector<CudaBench> attention_benches() {
  struct Buffers {
    DeviceBuffer<T> qkv = random_buffer<T>(3 * kNC, 51, 0.5f), dout = random_buffer<T>(kNC, 52), out{kNC},
                    dqkv{3 * kNC};
    DeviceBuffer<float> lse{kH * kN}, state{int64_t{kB} * kH * kD * kD}, slopes{linear_attention_slopes(kH)};
    DeviceBuffer<int32_t> cu_seqlens{equal_sequences(kB, kT)};
  };
  auto buf = std::make_shared<Buffers>();
  const std::string shape = fmt::format("{}x{} H={} D={}", kB, kT, kH, kD);
  const double softmax_fwd = 2.0 * kB * kT * kT * kC;
  const double linear_fwd = double(kN) * kH * (2.0 * kChunk * kD + 4.0 * kD * kD);
  std::vector<CudaBench> benches;
  benches.push_back({"softmax attention fwd", shape, check_softmax_attention<T>, tolerance<T>(true),
                     [buf](cudaStream_t s) {
                       cuda::attention_softmax_forward(buf->out.get(), buf->lse.get(), buf->qkv.get(),
                                                       buf->cu_seqlens.get(), kB, kN, kH, kD, s);
                     },
                     softmax_fwd, 0});
  benches.push_back({"softmax attention bwd", shape, check_softmax_attention<T>, tolerance<T>(true),
                     [buf](cudaStream_t s) {
                       cuda::attention_softmax_backward(buf->dqkv.get(), buf->dout.get(), buf->qkv.get(),
                                                        buf->out.get(), buf->lse.get(), buf->cu_seqlens.get(), kB, kN,
                                                        kH, kD, s);
                     },
                     2.5 * softmax_fwd, 0});
  benches.push_back({"linear attention fwd", shape + fmt::format(" chunk={}", kChunk), check_linear_attention<T>,
                     tolerance<T>(true),
                     [buf](cudaStream_t s) {
                       cuda::attention_linear_forward(buf->out.get(), buf->state.get(), buf->qkv.get(),
                                                      buf->slopes.get(), nullptr, buf->cu_seqlens.get(), kB, kN, kH,
                                                      kD, kChunk, s);
                     },
                     linear_fwd, 0});
  benches.push_back({"linear attention bwd", shape + fmt::format(" chunk={}", kChunk), check_linear_attention<T>,
                     tolerance<T>(true),
                     [buf](cudaStream_t s) {
                       cuda::attention_linear_backward(buf->dqkv.get(), nullptr, buf->dout.get(), nullptr,
                                                       buf->qkv.get(), buf->slopes.get(), nullptr,
                                                       buf->cu_seqlens.get(), kB, kN, kH, kD, kChunk, s);
                     },
                     2 * linear_fwd, 0});
  return benches;
}

// Ring Attention's block ops (fp32, as Ring Attention runs): one rank's N = B x T queries against a whole earlier
// block of N keys of the same document, the step every rank but the first repeats. FLOPs: forward 4 N^2 C (no causal
// half: every key is visible), backward 2.5x.
std::vector<CudaBench> block_attention_benches() {
  struct Buffers {
    DeviceBuffer<float> q = random_buffer<float>(kNC, 53, 0.5f), kv = random_buffer<float>(2 * kNC, 54, 0.5f),
                        dout = random_buffer<float>(kNC, 55), m{std::vector<float>(kH * kN, -INFINITY)},
                        l{kH * kN}, acc{kNC}, lse{kH * kN}, delta{kH * kN}, dq{kNC}, dkv{2 * kNC};
    DeviceBuffer<int64_t> docs{kN};  // one document from position 0; queries at kN.., keys at 0..
  };
  auto buf = std::make_shared<Buffers>();
  const std::string shape = fmt::format("{} queries after {} keys H={} D={}", kN, kN, kH, kD);
  const double fwd = 4.0 * kN * kN * kC;
  std::vector<CudaBench> benches;
  benches.push_back({"block attention fwd", shape, check_attention_block, tolerance<float>(true),
                     [buf](cudaStream_t s) {
                       cuda::attention_block_forward(buf->m.get(), buf->l.get(), buf->acc.get(), buf->q.get(), kC, kN,
                                                     kN, buf->docs.get(), buf->kv.get(), kN, 0, kH, kD, s);
                     },
                     fwd, 0});
  benches.push_back({"block attention bwd", shape, check_attention_block, tolerance<float>(true),
                     [buf](cudaStream_t s) {
                       cuda::attention_block_backward(buf->dq.get(), kC, buf->dkv.get(), buf->q.get(), kC, kN, kN,
                                                      buf->docs.get(), buf->dout.get(), buf->lse.get(),
                                                      buf->delta.get(), buf->kv.get(), kN, 0, kH, kD, s);
                     },
                     2.5 * fwd, 0});
  return benches;
}

// The tied LM head (cuBLAS GEMMs against wte) and the fused cross-entropy over the N x V logits.
template <class T>
std::vector<CudaBench> head_benches() {
  struct Buffers {
    DeviceBuffer<T> x = random_buffer<T>(kNC, 61), wte = random_buffer<T>(int64_t{kV} * kC, 62, 0.02f),
                    logits = random_buffer<T>(kN * kV, 63, 4.0f), dx{kNC};
    DeviceBuffer<float> dwte{int64_t{kV} * kC}, losses{kN}, weight{std::vector<float>(kN, 1.0f / kN)};
    DeviceBuffer<int32_t> targets{cyclic_ids(kN, 104729, kV)};
  };
  auto buf = std::make_shared<Buffers>();
  const std::string shape = fmt::format("N={} V={} C={}", kN, kV, kC);
  const double flops = 2.0 * kN * kV * kC;
  std::vector<CudaBench> benches;
  benches.push_back({"lm_head fwd (x wte^T)", shape, check_lm_head<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::gemm<T>(Trans::no, Trans::yes, kN, kV, kC, 1.0f, buf->x.get(), kC, buf->wte.get(), kC,
                                     0.0f, buf->logits.get(), kV, s);
                     },
                     flops, 0});
  benches.push_back({"lm_head bwd (dx, dwte)", shape, check_lm_head<T>, tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::gemm<T>(Trans::no, Trans::no, kN, kC, kV, 1.0f, buf->logits.get(), kV, buf->wte.get(),
                                     kC, 1.0f, buf->dx.get(), kC, s);
                       cuda::gemm<T, float>(Trans::yes, Trans::no, kV, kC, kN, 1.0f, buf->logits.get(), kV,
                                            buf->x.get(), kC, 1.0f, buf->dwte.get(), kC, s);
                     },
                     2 * flops, 0});
  // Overwrites the logits with their gradient; rerunning on it costs the same. The launcher syncs the stream.
  benches.push_back({"crossentropy fused", fmt::format("N={} V={}", kN, kV), check_crossentropy<T>,
                     tolerance<T>(false),
                     [buf](cudaStream_t s) {
                       cuda::crossentropy_fused_backward(buf->losses.get(), buf->logits.get(), buf->targets.get(),
                                                         buf->weight.get(), kN, kV, s);
                     },
                     0, 2.0 * kN * kV * sizeof(T)});
  return benches;
}

// fp32 only: AdamW and the gradient norm over every parameter of GPT-2 small.
std::vector<CudaBench> optimizer_benches() {
  struct Buffers {
    DeviceBuffer<float> params = random_buffer<float>(kParams, 71, 0.02f),
                        grads = random_buffer<float>(kParams, 72, 0.01f), m{kParams}, v{kParams};
  };
  auto buf = std::make_shared<Buffers>();
  const AdamWStep step = cpu::adamw_step({6e-4f, 0.9f, 0.95f, 1e-8f, 0.1f}, 10);
  const std::string shape = fmt::format("n={}", kParams);
  std::vector<CudaBench> benches;
  benches.push_back({"grad norm", shape, check_grad_norm, 1e-5,
                     [buf](cudaStream_t s) { (void)cuda::squared_norm(buf->grads.get(), kParams, s); }, 0,
                     4.0 * kParams});
  benches.push_back({"adamw", shape, check_adamw, 1e-5,
                     [buf, step](cudaStream_t s) {
                       cuda::adamw_update(buf->params.get(), buf->grads.get(), buf->m.get(), buf->v.get(), kParams,
                                          step, 1.0f, s);
                     },
                     0, 7.0 * 4 * kParams});  // reads params, grads, m, v; writes params, m, v
  return benches;
}

// ---- roof, peak and the step estimate ----

// cuBLAS at the mlp.c_fc shape (4096 x 3072 x 768), storage type T, fp32 accumulation (no TF32): FLOP/s.
template <class T>
double cublas_roof(cudaStream_t stream, double min_seconds, double* seconds) {
  const int64_t M = 4096, N = 3072, K = 768;
  const DeviceBuffer<T> a = random_buffer<T>(M * K, 81), b = random_buffer<T>(K * N, 82), c(M * N);
  *seconds = time_cuda(
      [&](cudaStream_t s) {
        cuda::gemm<T>(Trans::no, Trans::no, M, N, K, 1.0f, a.get(), K, b.get(), N, 0.0f, c.get(), N, s);
      },
      stream, min_seconds);
  return 2.0 * M * N * K / *seconds;
}

struct StepCalls {
  const char* dtype;
  std::string kernel;
  int calls;
};

// How often one GPT-2-small training step (softmax attention, bf16 activations, as core/model/gpt.cpp orders the
// kernels) calls each kernel. Residual backward is absent: backward kernels accumulate into the residual stream.
std::vector<StepCalls> gpt2_step_calls() {
  return {
      {"bf16", "embedding fwd", 1},
      {"bf16", "layernorm fwd", 2 * kL + 1},  // ln_1 and ln_2 of each block, ln_f
      {"bf16", "linear fwd (attn.c_attn)", kL},
      {"bf16", "softmax attention fwd", kL},
      {"bf16", "linear fwd (attn.c_proj)", kL},
      {"bf16", "residual fwd", 2 * kL},
      {"bf16", "linear fwd (mlp.c_fc)", kL},
      {"bf16", "gelu fwd", kL},
      {"bf16", "linear fwd (mlp.c_proj)", kL},
      {"bf16", "lm_head fwd (x wte^T)", 1},
      {"bf16", "crossentropy fused", 1},
      {"bf16", "lm_head bwd (dx, dwte)", 1},
      {"bf16", "layernorm bwd", 2 * kL + 1},
      {"bf16", "linear bwd (mlp.c_proj)", kL},
      {"bf16", "gelu bwd", kL},
      {"bf16", "linear bwd (mlp.c_fc)", kL},
      {"bf16", "linear bwd (attn.c_proj)", kL},
      {"bf16", "softmax attention bwd", kL},
      {"bf16", "linear bwd (attn.c_attn)", kL},
      {"bf16", "embedding bwd", 1},
      {"fp32", "grad norm", 1},
      {"fp32", "adamw", 1},
  };
}

// Model FLOPs of one step, counted as GPT::flops does: 6 x matmul parameters (all but wpe) x tokens, plus causal
// attention 6 L C T^2 per sequence (QK^T and PV over the causal half, x3 with backward).
double gpt2_step_flops() {
  return 6.0 * double(kParams - int64_t{kT} * kC) * kN + 6.0 * kL * kC * double(kT) * kT * kB;
}

void print_step_estimate(const std::map<std::string, double>& seconds, double peak, double roof, bool json) {
  Report calls(fmt::format("GPT-2 small step ESTIMATE (B={} T={}, {} layers, bf16): sum of kernel time x calls per "
                           "step, not a measured step",
                           kB, kT, kL),
               json);
  double total = 0;
  for (const StepCalls& c : gpt2_step_calls()) {
    const auto it = seconds.find(fmt::format("{} {}", c.dtype, c.kernel));
    TRIDENT_CHECK(it != seconds.end(), "no time measured for {} {}", c.dtype, c.kernel);
    total += it->second * c.calls;
    calls.add({{{"kernel", c.kernel}, {"dtype", c.dtype}},
               {{"calls", double(c.calls)}, {"ms/call", it->second * 1e3}, {"ms/step", it->second * c.calls * 1e3}}});
  }
  calls.add({{{"kernel", "total (estimate)"}, {"dtype", "-"}}, {{"calls", 0.0}, {"ms/step", total * 1e3}}});
  calls.print();

  const double flops = gpt2_step_flops();
  Report mfu("GPT-2 small step ESTIMATE: MFU = model FLOPs / (estimated step time x dense bf16 peak)", json);
  mfu.add({{{"step", "estimated from kernel times"}},
           {{"ms/step", total * 1e3},
            {"tokens/s", kN / total},
            {"model TFLOP/step", flops / 1e12},
            {"TFLOP/s", flops / total / 1e12},
            {"MFU", peak > 0 ? flops / total / peak : std::numeric_limits<double>::quiet_NaN()},
            {"of cuBLAS bf16 roof", flops / total / roof}}});
  mfu.print();
}

}  // namespace

void run_kernels_cuda(const Options& options) {
  const int device = 0;
  TRIDENT_CUDA_CHECK(cudaSetDevice(device));
  // Keep freed pool memory, as training's DeviceMemory does: kernels that take scratch with cudaMallocAsync
  // (layernorm and embedding backward) then do not go to the driver on every call.
  cudaMemPool_t pool;
  TRIDENT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t keep_everything = UINT64_MAX;
  TRIDENT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  cuda::Stream stream;

  Report report(fmt::format("CUDA kernels ({})", cuda::device_description(device)), options.json);
  std::map<std::string, double> seconds;  // "dtype kernel" -> seconds per call
  auto run = [&](const char* dtype, const std::vector<CudaBench>& benches) {
    for (const CudaBench& k : benches) {
      const double err = k.check();
      if (!(err <= k.tolerance))
        throw_runtime_error("CUDA kernel {} ({}) disagrees with the CPU kernel: normalised error {:.3g} > {:.0e}",
                            k.name, dtype, err, k.tolerance);
      const double sec = time_cuda(k.run, stream.get(), options.min_seconds);
      seconds[fmt::format("{} {}", dtype, k.name)] = sec;
      report.add({{{"kernel", k.name}, {"dtype", dtype}, {"shape", k.shape}},
                  {{"check_err", err},
                   {"tolerance", k.tolerance},
                   {"ms", sec * 1e3},
                   {"TFLOP/s", k.flops / sec / 1e12},
                   {"GB/s", k.bytes / sec / 1e9}}});
    }
  };
  // One group at a time, so only its buffers are on the device (the fp32 logits alone are 0.8 GB).
  run("fp32", layer_benches<float>());
  run("fp32", attention_benches<float>());
  run("fp32", block_attention_benches());
  run("fp32", head_benches<float>());
  run("bf16", layer_benches<bf16>());
  run("bf16", attention_benches<bf16>());
  run("bf16", head_benches<bf16>());
  run("fp32", optimizer_benches());
  report.print();

  Report roofs("cuBLAS GEMM roof and dense bf16 peak", options.json);
  double sec_bf16 = 0, sec_fp32 = 0;
  const double roof_bf16 = cublas_roof<bf16>(stream.get(), options.min_seconds, &sec_bf16);
  const double roof_fp32 = cublas_roof<float>(stream.get(), options.min_seconds, &sec_fp32);
  std::string how;
  const double peak = cuda::dense_peak_flops(device, true, &how);
  roofs.add({{{"what", "cuBLAS gemm bf16 (fp32 accumulate)"}, {"detail", "4096x3072x768"}},
             {{"ms", sec_bf16 * 1e3}, {"TFLOP/s", roof_bf16 / 1e12}}});
  roofs.add({{{"what", "cuBLAS gemm fp32 (no TF32)"}, {"detail", "4096x3072x768"}},
             {{"ms", sec_fp32 * 1e3}, {"TFLOP/s", roof_fp32 / 1e12}}});
  roofs.add({{{"what", "dense bf16 peak"}, {"detail", how}},
             {{"ms", 0.0}, {"TFLOP/s", peak > 0 ? peak / 1e12 : std::numeric_limits<double>::quiet_NaN()}}});
  roofs.print();

  print_step_estimate(seconds, peak, roof_bf16, options.json);
}

}  // namespace trident::bench
