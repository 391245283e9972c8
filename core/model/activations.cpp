#include "core/model/activations.h"

#include <algorithm>

namespace trident {

namespace {

// Hands out the arrays of `a` from `base` (nullptr: only counts) and returns the bytes they take. Every array starts
// on a 256-byte boundary (what device kernels' vector loads and cuBLAS prefer), whatever the element type before it.
template <class T>
int64_t carve(Activations<T>& a, const ModelConfig& m, int64_t max_tokens, char* base) {
  const int64_t N = max_tokens, C = m.n_embd, H = m.n_head, V = m.vocab_size;
  const bool linear = m.attention == "linear";
  int64_t used = 0;
  auto take = [&]<class E>(E*, int64_t n) {
    used = (used + 255) / 256 * 256;
    E* p = base ? reinterpret_cast<E*>(base + used) : nullptr;
    used += n * static_cast<int64_t>(sizeof(E));
    return p;
  };
  auto act = [&](int64_t n) { return take(static_cast<T*>(nullptr), n); };
  auto stat = [&](int64_t n) { return take(static_cast<float*>(nullptr), n); };
  a.encoded = act(N * C);
  a.layers.assign(m.n_layer, LayerActivations<T>{});
  for (LayerActivations<T>& l : a.layers) {
    l.ln1 = act(N * C);
    l.ln1_mean = stat(N);
    l.ln1_rstd = stat(N);
    l.qkv = act(3 * N * C);
    l.qk_pre = linear && m.linear_qk_activation != "none" ? act(2 * N * C) : nullptr;
    l.gate = linear && m.linear_output_gate ? act(N * C) : nullptr;
    l.att = act(N * C);
    l.lse = linear ? nullptr : stat(H * N);
    l.o = linear ? act(N * C) : nullptr;
    l.rrms = linear ? stat(m.linear_output_norm == "head" ? N * H : N) : nullptr;
    l.res2 = act(N * C);
    l.ln2 = act(N * C);
    l.ln2_mean = stat(N);
    l.ln2_rstd = stat(N);
    l.fc = act(4 * N * C);
    l.gelu = act(4 * N * C);
    l.res3 = act(N * C);
  }
  a.lnf = act(N * C);
  a.lnf_mean = stat(N);
  a.lnf_rstd = stat(N);
  a.dres = act(N * C);
  a.dnarrow = act(N * C);
  a.dwide1 = act(4 * N * C);
  a.dwide2 = act(4 * N * C);
  a.logits = act(std::min(N, kHeadChunk) * V);
  a.losses = stat(N);
  a.loss_weight = stat(N);
  return used;
}

}  // namespace

template <class T>
int64_t activation_bytes(const ModelConfig& config, int64_t max_tokens) {
  Activations<T> counted;
  return (carve(counted, config, max_tokens, nullptr) + 3) / 4 * 4;  // whole fp32 elements, as allocated
}

template <class T>
Activations<T> allocate_activations(const ModelConfig& config, int64_t max_tokens, Allocator& allocator) {
  Activations<T> a;
  a.storage = Tensor::empty(allocator, {activation_bytes<T>(config, max_tokens) / 4});
  carve(a, config, max_tokens, static_cast<char*>(a.storage.raw()));
  return a;
}

template Activations<float> allocate_activations<float>(const ModelConfig&, int64_t, Allocator&);
template Activations<bf16> allocate_activations<bf16>(const ModelConfig&, int64_t, Allocator&);
template int64_t activation_bytes<float>(const ModelConfig&, int64_t);
template int64_t activation_bytes<bf16>(const ModelConfig&, int64_t);

}  // namespace trident
