// trident_parity_dump DIR softmax|linear: writes a parity directory (tests/reference/README.md) from Trident's own
// model and training step, for gpt_reference.py to recompute independently in PyTorch.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checkpoint/safetensors.h"
#include "core/common/atomic_file.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "app/train/step.h"

using namespace trident;

namespace {

std::vector<StTensor> weight_tensors(const GPT& model, const float* base, const std::string& prefix) {
  std::vector<StTensor> out;
  for (const ParamEntry& e : model.layout().params) out.push_back({prefix + e.name, StDType::F32, e.shape, base + e.offset});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: trident_parity_dump DIR softmax|linear\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  ModelConfig m;
  m.n_layer = 2;
  m.n_embd = 48;
  m.n_head = 3;  // not a power of two: exercises the second branch of the ALiBi slope rule
  m.vocab_size = 67;
  m.max_seq_len = 32;
  m.attention = argv[2];
  m.linear_chunk = 8;  // several chunks per document, and a partial last chunk
  TrainConfig t;
  t.lr = 1e-3;
  t.weight_decay = 0.1;
  t.grad_clip = 0.5;  // small enough to clip, so clipping is part of the comparison
  // Adam divides by sqrt(v): with eps = 1e-8, fp32 rounding in the smallest gradients grows into final-weight
  // differences of about lr * rounding / eps, far above 1e-4. eps = 1e-4 keeps the comparison well conditioned and
  // still exercises every term of the update.
  t.eps = 1e-4;
  const int steps = 3;

  Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 30});
  GPT model(m, 256, allocator);
  model.init_weights(1234);
  AdamW optimizer(model.layout(), t, allocator);
  DataParallel dp(world());  // one rank

  // Documents of lengths 1 (no target at all), 13, 32 (the full max_seq_len) and 20; each ends without a target.
  std::vector<int32_t> tokens, targets, positions, cu_seqlens = {0};
  std::mt19937_64 rng(99);
  for (int len : {13, 1, 32, 20}) {
    for (int i = 0; i < len; ++i) {
      tokens.push_back(static_cast<int32_t>(rng() % m.vocab_size));
      positions.push_back(i);
    }
    for (int i = 0; i < len; ++i) targets.push_back(i + 1 < len ? tokens[tokens.size() - len + i + 1] : -1);
    cu_seqlens.push_back(static_cast<int32_t>(tokens.size()));
  }
  const int64_t N = static_cast<int64_t>(tokens.size());
  TokenBatch batch{tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), N,
                   static_cast<int>(cu_seqlens.size()) - 1};

  nlohmann::json config = {{"n_layer", m.n_layer},       {"n_embd", m.n_embd},
                           {"n_head", m.n_head},         {"vocab_size", m.vocab_size},
                           {"max_seq_len", m.max_seq_len}, {"attention", m.attention},
                           {"decay_layer_scaling", m.decay_layer_scaling},
                           {"lr", t.lr},                 {"beta1", t.beta1},
                           {"beta2", t.beta2},           {"eps", t.eps},
                           {"weight_decay", t.weight_decay}, {"grad_clip", t.grad_clip},
                           {"steps", steps}};
  write_file_atomically(dir / "config.json", config.dump(2));
  write_safetensors(dir / "weights.safetensors", weight_tensors(model, model.params(), ""));
  const int64_t S = static_cast<int64_t>(cu_seqlens.size());
  write_safetensors(dir / "batch.safetensors", {{"tokens", StDType::I32, {N}, tokens.data()},
                                                {"targets", StDType::I32, {N}, targets.data()},
                                                {"positions", StDType::I32, {N}, positions.data()},
                                                {"cu_seqlens", StDType::I32, {S}, cu_seqlens.data()}});

  std::vector<float> logits(N * m.vocab_size);
  model.forward_logits(batch, logits.data());
  std::vector<float> losses;
  std::vector<float> initial_grads;
  for (int s = 0; s < steps; ++s) {
    StepStats stats = train_step(model, optimizer, {batch}, count_targets(batch), t.lr, t, dp);
    if (s == 0) initial_grads.assign(model.grads(), model.grads() + model.num_params());
    losses.push_back(static_cast<float>(stats.loss));
  }
  float loss0 = losses[0];
  std::vector<StTensor> out = {{"loss", StDType::F32, {}, &loss0},
                               {"logits", StDType::F32, {N, m.vocab_size}, logits.data()},
                               {"losses", StDType::F32, {steps}, losses.data()}};
  for (StTensor& g : weight_tensors(model, initial_grads.data(), "grad.")) out.push_back(g);
  for (StTensor& w : weight_tensors(model, model.params(), "final.")) out.push_back(w);
  write_safetensors(dir / "outputs.safetensors", out);
  std::printf("parity dump (%s attention, %lld tokens) written to %s\n", m.attention.c_str(),
              static_cast<long long>(N), dir.c_str());
  return 0;
}
