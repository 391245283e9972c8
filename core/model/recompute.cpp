#include "core/model/recompute.h"

#include <numeric>

#include "kernels/common/error.h"

namespace trident {

namespace {

// Whether the layers run through a runner: full recomputation, or states kept by the source.
bool runs_layers(const std::string& recompute, InSource in_source) {
  return recompute == "full" || recompute == "auto" || in_source != InSource::nothing;
}

}  // namespace

Swapping resident_swapping(const ModelConfig& config, const std::string& recompute, InSource in_source,
                           int64_t spare_values) {
  Swapping s;
  s.sub_model_starts.resize(static_cast<std::size_t>(config.n_layer));
  std::iota(s.sub_model_starts.begin(), s.sub_model_starts.end(), 0);
  s.recomputed = recompute == "full" || recompute == "auto" ? static_cast<int>(config.n_layer) - 1 : 0;
  s.resident = true;
  s.selective_recompute = recompute == "selective";
  s.in_source = in_source;
  s.recompute_as_needed = recompute == "auto";
  s.spare_values = spare_values;
  return s;
}

ModelMemory resident_model_memory(const ModelConfig& config, int64_t max_tokens, const std::string& recompute,
                                  InSource in_source, int64_t spare_values) {
  if (runs_layers(recompute, in_source))
    return SubModelRunner::model_memory(config, max_tokens,
                                        resident_swapping(config, recompute, in_source, spare_values));
  return {.selective_recompute = recompute == "selective"};
}

int64_t resident_memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                              const std::string& recompute, InSource in_source, int64_t spare_values) {
  if (runs_layers(recompute, in_source))
    return SubModelRunner::memory_bytes(config, max_tokens, precision, device,
                                        resident_swapping(config, recompute, in_source, spare_values));
  return GPT::memory_bytes(config, max_tokens, precision, device, resident_model_memory(config, max_tokens, recompute));
}

LayerSource::Outer ResidentLayers::begin_pass(bool, int) {
  window_ = model_.resident_weights();
  return {window_, window_};
}

// The gradient buckets (core/model/layout.h, gradient_buckets): ln_f's (0), layer l's (L - l), the embeddings' (L + 1).
ParamWindow ResidentLayers::acquire(int sub_model, bool backward) {
  // ln_f's backward ran before the last layer's
  if (backward && sub_model == model_.config().n_layer - 1) model_.grad_ready(0);
  return window_;
}

void ResidentLayers::release(int sub_model, bool backward) {
  if (backward) model_.grad_ready(static_cast<std::size_t>(model_.config().n_layer - sub_model));
}

void ResidentLayers::end_pass(bool train) {
  if (train) model_.grad_ready(static_cast<std::size_t>(model_.config().n_layer + 1));
}

int64_t ResidentLayers::copy_activations(std::string label, std::vector<Copy>, bool) {
  throw_runtime_error("a resident model recomputes its activations; it does not offload them ({})", label);
}

void ResidentLayers::wait_copies(int64_t) {}

RecomputedModel::RecomputedModel(GPT& model, Allocator& device, const std::string& recompute, int64_t spare_values)
    : source_(model),
      runner_(model, resident_swapping(model.config(), recompute, InSource::nothing, spare_values), device) {
  runner_.set_source(&source_);
}

}  // namespace trident
