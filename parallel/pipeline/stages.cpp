#include "parallel/pipeline/stages.h"

#include <algorithm>

#include "kernels/common/error.h"

namespace trident {

void check_pipeline_stages(const ModelConfig& model, int stages) {
  if (stages > model.n_layer)
    throw_config_error("parallel.strategy: pipeline on {} ranks needs at least one layer a stage; model.n_layer is {}",
                       stages, model.n_layer);
}

void check_pipeline(const Config& config, int world) {
  check_pipeline_stages(config.model, world);
  if (config.device.backend != "cpu")
    throw_config_error("parallel.strategy: pipeline runs on the cpu backend only (device.backend: '{}')",
                       config.device.backend);
}

PipelineStage pipeline_stage(const ModelConfig& model, int stages, int stage) {
  const int L = static_cast<int>(model.n_layer);
  TRIDENT_CHECK(1 <= stages && stages <= L && 0 <= stage && stage < stages, "stage {} of {} over {} layers", stage,
                stages, L);
  const int base = L / stages, longer = L % stages;
  const int first = stage * base + std::min(stage, longer);
  return {first, first + base + (stage < longer ? 1 : 0)};
}

ModelMemory stage_memory(const PipelineStage& stage) { return {.activation_layers = stage.layers()}; }

namespace {

// Where layer l's parameters start in the flat layout (ln_f's for l = n_layer).
int64_t block_start(const ModelLayout& layout, int l) {
  return l < static_cast<int>(layout.blocks.size()) ? layout.blocks[static_cast<std::size_t>(l)].ln1_w
                                                     : layout.lnf_w;
}

ParamRanges stage_ranges(const ModelLayout& layout, const PipelineStage& stage, bool tied_on_last) {
  const bool last = stage.end_layer == static_cast<int>(layout.blocks.size());
  const int64_t begin = stage.first_layer == 0 ? 0 : block_start(layout, stage.first_layer);
  const int64_t end = last ? layout.num_params : block_start(layout, stage.end_layer);
  ParamRanges out;
  if (tied_on_last && last && stage.first_layer > 0) {  // the tied embedding, ahead of the blocks
    const ParamEntry& wte = layout.params.front();
    TRIDENT_CHECK(wte.offset == layout.wte, "the layout starts with wte");
    out.emplace_back(wte.offset, wte.numel);
  }
  out.emplace_back(begin, end - begin);
  return out;
}

}  // namespace

ParamRanges stage_updates(const ModelLayout& layout, const PipelineStage& stage) {
  return stage_ranges(layout, stage, true);
}

ParamRanges stage_owns(const ModelLayout& layout, const PipelineStage& stage) {
  return stage_ranges(layout, stage, false);
}

}  // namespace trident
