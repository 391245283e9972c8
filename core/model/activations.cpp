#include "core/model/activations.h"

#include <algorithm>

#include "kernels/common/error.h"

namespace trident {

namespace {

// Every array a layer saves for its backward, in the order they are carved, with its values a token; arrays its
// attention does not have are skipped (left nullptr). `linear`, `softmax`: the layer's attention kinds; a hybrid
// model's layers are carved with both, so that any layer fits any slot (a swapped model reuses slots). `selective`:
// without the norms' and the GELU's outputs, which the backward recomputes (train.recompute: selective).
template <class T, class F>
void for_each_saved_array(LayerActivations<T>& l, const ModelConfig& m, bool linear, bool softmax, bool selective,
                          F&& f) {
  const int64_t C = m.n_embd, H = m.n_head;
  if (!selective) f(l.ln1, C);
  f(l.ln1_mean, 1);
  f(l.ln1_rstd, 1);
  f(l.qkv, 3 * C);
  if (linear && m.linear_qk_activation != "none") f(l.qk_pre, 2 * C);
  if (linear && m.linear_output_gate) f(l.gate, C);
  f(l.att, C);
  if (softmax) f(l.lse, H);
  if (linear) f(l.o, C);
  if (linear) f(l.rrms, m.linear_output_norm == "head" ? H : 1);
  f(l.res2, C);
  if (!selective) f(l.ln2, C);
  f(l.ln2_mean, 1);
  f(l.ln2_rstd, 1);
  f(l.fc, 4 * C);
  if (!selective) f(l.gelu, 4 * C);
  f(l.res3, C);
}

// Hands out the arrays of `a` from `base` (nullptr: only counts) and returns the bytes they take. Every array starts
// on a 256-byte boundary (what device kernels' vector loads and cuBLAS prefer), whatever the element type before it.
template <class T>
int64_t carve(Activations<T>& a, const ModelConfig& m, int64_t max_tokens, bool selective, int64_t spare, char* base) {
  const int64_t N = max_tokens, C = m.n_embd, V = m.vocab_size;
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
  for (LayerActivations<T>& l : a.layers)
    for_each_saved_array(l, m, m.any_linear(), m.any_softmax(), selective,
                         [&]<class E>(E*& p, int64_t per_token) { p = take(p, N * per_token); });
  if (selective) {  // one slot for every layer's norms and GELU outputs, which each layer's backward writes again
    T* ln1 = act(N * C);
    T* ln2 = act(N * C);
    T* gelu = act(4 * N * C);
    for (LayerActivations<T>& l : a.layers) {
      l.ln1 = ln1;
      l.ln2 = ln2;
      l.gelu = gelu;
    }
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
  a.spare = spare > 0 ? act(spare) : nullptr;
  return used;
}

}  // namespace

template <class T>
int64_t activation_bytes(const ModelConfig& config, int64_t max_tokens, bool selective, int64_t spare) {
  Activations<T> counted;
  return (carve(counted, config, max_tokens, selective, spare, nullptr) + 3) / 4 * 4;  // whole fp32 elements
}

template <class T>
Activations<T> allocate_activations(const ModelConfig& config, int64_t max_tokens, Allocator& allocator,
                                    bool selective, int64_t spare) {
  Activations<T> a;
  a.storage = Tensor::empty(allocator, {activation_bytes<T>(config, max_tokens, selective, spare) / 4});
  carve(a, config, max_tokens, selective, spare, static_cast<char*>(a.storage.raw()));
  return a;
}

template <class T>
void recarve_activations(Activations<T>& a, const ModelConfig& config, int64_t max_tokens, bool selective,
                         int64_t spare) {
  const int64_t bytes = activation_bytes<T>(config, max_tokens, selective, spare);
  TRIDENT_CHECK(bytes <= static_cast<int64_t>(a.storage.nbytes()), "activations of {} layer(s) for {} tokens take {} "
                "bytes, more than the {} allocated", config.n_layer, max_tokens, bytes, a.storage.nbytes());
  carve(a, config, max_tokens, selective, spare, static_cast<char*>(a.storage.raw()));
}

template <class T>
std::vector<SavedArray> saved_arrays(const LayerActivations<T>& layer, const ModelConfig& config, int64_t index) {
  LayerActivations<T> l = layer;
  std::vector<SavedArray> out;
  const bool linear = config.linear_layer(index);
  for_each_saved_array(l, config, linear, !linear, false, [&]<class E>(E*& p, int64_t per_token) {
    out.push_back({p, per_token * static_cast<int64_t>(sizeof(E))});
  });
  return out;
}

template <class T>
int64_t saved_bytes_per_token(const ModelConfig& config) {
  int64_t bytes = 0;
  LayerActivations<T> l{};
  for_each_saved_array(l, config, config.any_linear(), config.any_softmax(), false,
                       [&]<class E>(E*&, int64_t per_token) { bytes += per_token * static_cast<int64_t>(sizeof(E)); });
  return bytes;
}

template Activations<float> allocate_activations<float>(const ModelConfig&, int64_t, Allocator&, bool, int64_t);
template Activations<bf16> allocate_activations<bf16>(const ModelConfig&, int64_t, Allocator&, bool, int64_t);
template int64_t activation_bytes<float>(const ModelConfig&, int64_t, bool, int64_t);
template int64_t activation_bytes<bf16>(const ModelConfig&, int64_t, bool, int64_t);
template void recarve_activations<float>(Activations<float>&, const ModelConfig&, int64_t, bool, int64_t);
template void recarve_activations<bf16>(Activations<bf16>&, const ModelConfig&, int64_t, bool, int64_t);
template std::vector<SavedArray> saved_arrays<float>(const LayerActivations<float>&, const ModelConfig&, int64_t);
template std::vector<SavedArray> saved_arrays<bf16>(const LayerActivations<bf16>&, const ModelConfig&, int64_t);
template int64_t saved_bytes_per_token<float>(const ModelConfig&);
template int64_t saved_bytes_per_token<bf16>(const ModelConfig&);

}  // namespace trident
