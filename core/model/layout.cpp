#include "core/model/layout.h"

#include <cmath>

namespace trident {

ModelLayout model_layout(const ModelConfig& m) {
  const int64_t V = m.vocab_size, C = m.n_embd, P = m.max_seq_len, L = m.n_layer;
  const float std_base = 0.02f;
  const float std_residual = 0.02f / std::sqrt(2.0f * static_cast<float>(L));  // GPT-2: scaled residual projections
  ModelLayout layout;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay, float init_std, float init_value = 0.0f) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    layout.params.push_back({std::move(name), std::move(shape), layout.num_params, numel, decay, init_std, init_value});
    layout.num_params += numel;
    return layout.params.back().offset;
  };
  auto weight = [&](std::string name, std::vector<int64_t> shape, float init_std) {
    return add(std::move(name), std::move(shape), true, init_std);
  };
  auto bias = [&](std::string name, int64_t n) { return add(std::move(name), {n}, false, 0.0f, 0.0f); };
  auto gain = [&](std::string name, int64_t n) { return add(std::move(name), {n}, false, 0.0f, 1.0f); };

  layout.wte = weight("transformer.wte.weight", {V, C}, std_base);
  if (m.any_softmax()) layout.wpe = weight("transformer.wpe.weight", {P, C}, std_base);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    BlockOffsets b;
    b.ln1_w = gain(p + "ln_1.weight", C);
    b.ln1_b = bias(p + "ln_1.bias", C);
    b.qkv_w = weight(p + "attn.c_attn.weight", {C, 3 * C}, std_base);
    b.qkv_b = bias(p + "attn.c_attn.bias", 3 * C);
    if (m.linear_layer(l) && m.linear_output_gate) {
      b.gate_w = weight(p + "attn.c_gate.weight", {C, C}, std_base);
      b.gate_b = bias(p + "attn.c_gate.bias", C);
    }
    b.attproj_w = weight(p + "attn.c_proj.weight", {C, C}, std_residual);
    b.attproj_b = bias(p + "attn.c_proj.bias", C);
    b.ln2_w = gain(p + "ln_2.weight", C);
    b.ln2_b = bias(p + "ln_2.bias", C);
    b.fc_w = weight(p + "mlp.c_fc.weight", {C, 4 * C}, std_base);
    b.fc_b = bias(p + "mlp.c_fc.bias", 4 * C);
    b.fcproj_w = weight(p + "mlp.c_proj.weight", {4 * C, C}, std_residual);
    b.fcproj_b = bias(p + "mlp.c_proj.bias", C);
    layout.blocks.push_back(b);
  }
  layout.lnf_w = gain("transformer.ln_f.weight", C);
  layout.lnf_b = bias("transformer.ln_f.bias", C);
  return layout;
}

std::vector<std::pair<int64_t, int64_t>> gradient_buckets(const ModelLayout& layout) {
  std::vector<std::pair<int64_t, int64_t>> buckets;
  int64_t end = layout.num_params;
  auto add = [&](int64_t begin) {
    buckets.emplace_back(begin, end - begin);
    end = begin;
  };
  add(layout.lnf_w);
  for (auto b = layout.blocks.rbegin(); b != layout.blocks.rend(); ++b) add(b->ln1_w);
  add(0);
  return buckets;
}

}  // namespace trident
