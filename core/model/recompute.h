#pragma once
// Activation recomputation of a resident model. train.recompute: selective keeps every layer's arrays but the norms'
// and the GELU's outputs, which the layer's backward computes again (ModelMemory::selective_recompute, gpt.cpp).
// train.recompute: full, here: The layers run as one-layer sub-models
// (core/model/sub_model_runner.h): every layer keeps only its input (N, C) through the forward, and its forward runs
// again, from that input, just before its backward, in one activation slot all layers share; the last layer's
// backward follows its forward, so it is not recomputed. A pass then holds one layer's saved arrays and L - 1 layer
// inputs instead of L layers' saved arrays, at the price of a second forward of L - 1 layers. The gradients are the
// model's own pass's, bit for bit: the recomputed forward is the same arithmetic on the same inputs (a
// sequence-parallel layer repeats its messages too).
// train.recompute: auto sizes the activations as full does, and each pass recomputes only the fewest first layers its
// tokens need to fit them (Swapping::recompute_as_needed): a pass that fits with every layer's arrays recomputes
// nothing, a pass of the longest tokens all but the last layer, the same gradients whichever.
//
// The sub-models' weights are the model's own buffers (ResidentLayers below), which hand each range of gradients to
// the model's grad-ready hook as it becomes final, in the order the model's own pass does: data parallelism still
// overlaps its reduction with the backward.
#include <cstdint>
#include <string>

#include "core/model/gpt.h"
#include "core/model/layer_source.h"
#include "core/model/sub_model_runner.h"

namespace trident {

// How a resident model is built as train.recompute (`recompute`: none | selective | full | auto) keeps its activations;
// `in_source`: what the source of a runner keeps instead of the model (parallel.zero.stage: 2 and 3), which then runs
// its layers as one-layer sub-models whatever `recompute` says. `spare_values`: auto's (Swapping::spare_values).
ModelMemory resident_model_memory(const ModelConfig& config, int64_t max_tokens, const std::string& recompute,
                                  InSource in_source = InSource::nothing, int64_t spare_values = 0);
// Its device bytes sized for `max_tokens` tokens: weights and gradients (unless in the source) and the activations kept
// (full: one layer's saved arrays and the inputs of the L - 1 recomputed layers, the runner's included).
int64_t resident_memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                              const std::string& recompute, InSource in_source = InSource::nothing,
                              int64_t spare_values = 0);
// The runner's sub-models of such a model: one a layer, every one but the last recomputed with `full` (as needed with
// `auto`).
Swapping resident_swapping(const ModelConfig& config, const std::string& recompute, InSource in_source,
                           int64_t spare_values = 0);

// The LayerSource of a resident model: every sub-model's window is the model's whole flat buffer (nothing moves).
class ResidentLayers final : public LayerSource {
 public:
  explicit ResidentLayers(GPT& model) : model_(model) {}
  Outer begin_pass(bool train, int passes) override;
  void end_pass(bool train) override;
  ParamWindow acquire(int sub_model, bool backward) override;
  void release(int sub_model, bool backward) override;
  void grads_zeroed() override {}
  bool reports_grad_ready() const override { return true; }
  int64_t copy_activations(std::string label, std::vector<Copy> copies, bool to_host) override;
  void wait_copies(int64_t ticket) override;

 private:
  GPT& model_;
  ParamWindow window_;  // the pass's: resident_weights(), taken once a pass (it rounds bf16's copy)
};

// Recomputation's runner (`recompute`: full or auto) and its source, set on `model` (built with
// resident_model_memory's `recompute`) while this lives.
class RecomputedModel {
 public:
  RecomputedModel(GPT& model, Allocator& device, const std::string& recompute = "full", int64_t spare_values = 0);
  const SubModelRunner& runner() const { return runner_; }

 private:
  ResidentLayers source_;
  SubModelRunner runner_;
};

}  // namespace trident
