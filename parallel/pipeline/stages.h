#pragma once
// How a pipeline (parallel.strategy: pipeline) splits the model over its ranks: rank s is stage s and computes a
// contiguous run of layers; the first stage also the embeddings, the last the final norm and the tied LM head.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "core/model/layout.h"

namespace trident {

using ParamRanges = std::vector<std::pair<int64_t, int64_t>>;  // {offset, numel} of the flat layout

// The layers [first_layer, end_layer) one stage computes. Its model keeps their activations only
// (stage_memory); parameters and gradients keep the whole flat layout, of which the stage computes the gradients of
// its own layers (the first and the last both of the tied embedding).
struct PipelineStage {
  int first_layer = 0;
  int end_layer = 0;
  int layers() const { return end_layer - first_layer; }
  bool first() const { return first_layer == 0; }
};

// How a stage's model is built: the activations of its layers.
ModelMemory stage_memory(const PipelineStage& stage);

// A ConfigError naming the key unless the model has a layer for each of `stages` stages.
void check_pipeline_stages(const ModelConfig& model, int stages);

// ConfigErrors naming the key unless the run can be a pipeline of `world` stages: no more stages than layers, the
// cpu backend (its boundary buffers are host memory).
void check_pipeline(const Config& config, int world);

// Stage `stage` of `stages`: balanced runs of layers, the first n_layer % stages stages one layer longer.
PipelineStage pipeline_stage(const ModelConfig& model, int stages, int stage);

// The parameters a stage computes the gradients of and updates: its blocks; the first stage the embeddings, the
// last ln_f and the tied wte too (with the first; both update it from the summed gradient).
ParamRanges stage_updates(const ModelLayout& layout, const PipelineStage& stage);
// The same with each parameter owned by one stage: the tied wte by the first. The gradient norm adds these up.
ParamRanges stage_owns(const ModelLayout& layout, const PipelineStage& stage);

}  // namespace trident
