#include "core/model/activations.h"

#include <algorithm>

namespace trident {

Activations allocate_activations(const ModelConfig& m, int64_t max_tokens, Allocator& allocator) {
  const int64_t N = max_tokens, C = m.n_embd, H = m.n_head, V = m.vocab_size;
  const bool linear = m.attention == "linear";
  // Two passes over the same carving: the first counts floats, the second hands out pointers.
  Activations a;
  float* base = nullptr;
  int64_t used = 0;
  auto take = [&](int64_t n) {
    float* p = base ? base + used : nullptr;
    used += n;
    return p;
  };
  auto carve = [&] {
    used = 0;
    a.encoded = take(N * C);
    a.layers.assign(m.n_layer, LayerActivations{});
    for (LayerActivations& l : a.layers) {
      l.ln1 = take(N * C);
      l.ln1_mean = take(N);
      l.ln1_rstd = take(N);
      l.qkv = take(3 * N * C);
      l.att = take(N * C);
      l.lse = linear ? nullptr : take(H * N);
      l.o = linear ? take(N * C) : nullptr;
      l.rrms = linear ? take(N * H) : nullptr;
      l.res2 = take(N * C);
      l.ln2 = take(N * C);
      l.ln2_mean = take(N);
      l.ln2_rstd = take(N);
      l.fc = take(4 * N * C);
      l.gelu = take(4 * N * C);
      l.res3 = take(N * C);
    }
    a.lnf = take(N * C);
    a.lnf_mean = take(N);
    a.lnf_rstd = take(N);
    a.dres = take(N * C);
    a.dnarrow = take(N * C);
    a.dwide1 = take(4 * N * C);
    a.dwide2 = take(4 * N * C);
    a.logits = take(std::min(N, kHeadChunk) * V);
    a.losses = take(N);
    a.loss_weight = take(N);
  };
  carve();
  a.storage = Tensor::empty(allocator, {used});
  base = a.storage.data<float>();
  carve();
  return a;
}

}  // namespace trident
