#include "parallel/atom/placement.h"

#include <unistd.h>

#include <fmt/core.h>

#include "core/model/activations.h"
#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/atom/swapper.h"

namespace trident {

namespace {

Device device_of(const Config& config) { return config.device.backend == "cpu" ? Device::cpu : Device::cuda; }

int64_t placed_bytes(const Config& config, Precision precision, Device device, const std::vector<int>& starts,
                     bool recompute, int slots, int64_t tokens) {
  const Swapping swapping{.segment_starts = starts, .recompute = recompute};
  return GPT::memory_bytes(config.model, tokens, precision, device, &swapping) +
         LayerSwapper::device_bytes(config.model, starts, slots, precision);
}

}  // namespace

bool swaps(const Config& config, int world) {
  const std::string& strategy = config.parallel.strategy;
  bool swap = strategy == "atom";
  if (strategy == "auto") {
    const Precision precision = precision_named(config.train.precision);
    const int64_t resident = GPT::memory_bytes(config.model, 1, precision, device_of(config)) +
                             AdamW::memory_bytes(model_layout(config.model).num_params);
    swap = resident > static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  }
  if (!swap) return false;
  const std::string why = strategy == "atom" ? "parallel.strategy: atom"
                                             : "parallel.strategy: auto (the model does not fit device.memory_gb "
                                               "resident, so it swaps)";
  if (world != 1)
    throw_config_error("{} runs on one peer so far ({} ranks launched): peers averaging their models are not "
                       "available yet; launch one rank", why, world);
  if (config.device.backend != "cpu")
    throw_config_error("{}: swapping runs on the cpu backend so far (device.backend: '{}'); the CUDA copy engine "
                       "(pinned host memory, copy streams) is not available yet", why, config.device.backend);
  return true;
}

std::vector<int> balanced_starts(int64_t layers, int64_t count) {
  std::vector<int> starts;
  int64_t at = 0;
  for (int64_t i = 0; i < count; ++i) {
    starts.push_back(static_cast<int>(at));
    at += layers / count + (i >= count - layers % count ? 1 : 0);  // the remainder goes to the last ones
  }
  return starts;
}

int64_t host_budget_bytes(const Config& config) {
  if (config.parallel.atom_host_memory_gb > 0)
    return static_cast<int64_t>(gib_to_bytes(config.parallel.atom_host_memory_gb));
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
}

void check_host_store(const Config& config, int64_t num_params) {
  const int64_t store = 16 * num_params, budget = host_budget_bytes(config);
  if (store <= budget) return;
  throw_config_error("parallel.atom.host_memory_gb = {}{}: the host store of {} (16 bytes for each of {} parameters: "
                     "fp32 weights, gradients, AdamW m and v) does not fit",
                     config.parallel.atom_host_memory_gb,
                     config.parallel.atom_host_memory_gb > 0
                         ? ""
                         : fmt::format(" (this machine: {})", format_bytes(static_cast<std::size_t>(budget))),
                     format_bytes(static_cast<std::size_t>(store)), num_params);
}

namespace {

int64_t activations_of(const ModelConfig& m, int64_t tokens, Precision precision) {
  return precision == Precision::bf16 ? activation_bytes<bf16>(m, tokens) : activation_bytes<float>(m, tokens);
}

// The swap planner's view of this model and device for a pass of `tokens` tokens: identical layers, the pass's
// forward and backward from the profile's compute fit shared evenly by them (a forward is a third).
void planner_inputs(const Config& config, Precision precision, Device device, const cost::Profile& profile,
                    int64_t tokens, bool recompute, AtomPlacement& placed) {
  const ModelConfig& m = config.model;
  const int64_t L = m.n_layer, value = activation_value_bytes(precision);
  ModelConfig one = m, two = m;
  one.n_layer = 1, two.n_layer = 2;
  const int64_t layer_params = model_layout(two).num_params - model_layout(one).num_params;
  const int64_t layer_acts = activations_of(two, tokens, precision) - activations_of(one, tokens, precision);
  const int64_t outside_params = model_layout(m).num_params - L * layer_params;  // embeddings, final norm
  const cost::ComputeSection& c = *profile.compute;
  double pass_s = 0;
  for (int64_t left = tokens; left > 0; left -= m.max_seq_len) {
    const auto s = static_cast<double>(std::min(left, m.max_seq_len));
    pass_s += c.alpha1_s_per_token2 * s * s + c.alpha2_s_per_token * s;
  }
  const double per_layer = pass_s / static_cast<double>(L);
  placed.layers.assign(static_cast<std::size_t>(L), cost::LayerCost{.weight_bytes = layer_params * 4,  // fp32 masters
                                                                    .grad_bytes = layer_params * 4,
                                                                    .activation_bytes = recompute ? layer_acts : 0,
                                                                    .forward_s = per_layer / 3,
                                                                    .backward_s = per_layer * 2 / 3});
  const cost::Link h2d = *profile.network->host_to_device;
  const cost::Link d2h = profile.network->device_to_host.value_or(h2d);
  placed.device = {
      .budget_bytes = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb)),
      // always resident: embeddings and final norm with their gradients, the activations outside the layers
      // (embedding output, LM head chunk, backward scratch), and at most one boundary checkpoint a layer or every
      // layer's activations
      .resident_bytes = outside_params * (8 + (precision == Precision::bf16 ? 2 : 0)) +
                        activations_of(one, tokens, precision) - layer_acts +
                        (recompute ? L * tokens * m.n_embd * value : L * layer_acts),
      .h2d_bytes_per_s = h2d.bandwidth_gb_per_s * 1e9,
      .d2h_bytes_per_s = d2h.bandwidth_gb_per_s * 1e9,
      .shared_copy_engine = device == Device::cpu,
      .recompute = recompute};
}

bool plans_with(const cost::Profile* profile) {
  return profile && profile->compute && profile->network && profile->network->host_to_device;
}

}  // namespace

AtomPlacement place_atom(const Config& config, Precision precision, Device device, const cost::Profile* profile) {
  const ModelConfig& m = config.model;
  const int64_t L = m.n_layer, budget = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  const int64_t asked = config.parallel.atom_sub_models;
  if (asked > L)
    throw_config_error("parallel.atom.sub_models = {}: the model has only {} layers to split", asked, L);
  const int slots = static_cast<int>(config.parallel.atom_prefetch) + 1;
  check_host_store(config, model_layout(m).num_params);
  AtomPlacement placed;
  placed.host_bytes = 16 * model_layout(m).num_params;
  placed.slots = slots;
  auto bytes = [&](const std::vector<int>& starts, bool recompute, int64_t tokens) {
    return placed_bytes(config, precision, device, starts, recompute, slots, tokens);
  };
  // The partition for a whole batch with activations kept or recomputed, if one fits.
  const int64_t N = config.train.batch_tokens;
  auto partition = [&](bool recompute) -> std::vector<int> {
    if (plans_with(profile)) {  // the planner's fastest partition, if it fits as the executor lays it out
      planner_inputs(config, precision, device, *profile, N, recompute, placed);
      const std::optional<cost::SwapPlan> plan =
          cost::plan_swaps(placed.layers, placed.device, static_cast<int>(asked));
      if (plan && bytes(plan->starts, recompute, N) <= budget) return plan->starts;
    }
    for (int64_t count = asked > 0 ? asked : 1; count <= (asked > 0 ? asked : L); ++count)
      if (const std::vector<int> starts = balanced_starts(L, count); bytes(starts, recompute, N) <= budget)
        return starts;
    return {};
  };
  const std::string& activations = config.parallel.atom_activations;
  if (activations != "recompute") placed.segment_starts = partition(false);
  placed.recompute = placed.segment_starts.empty();
  if (placed.segment_starts.empty() && activations == "keep")
    throw_config_error("parallel.atom.activations: keep: every layer's activations for a pass of {} tokens "
                       "(train.batch_tokens) beside {} device slot(s) do not fit device.memory_gb = {}; use auto or "
                       "recompute, or lower train.batch_tokens",
                       N, std::min<int64_t>(slots, asked > 0 ? asked : L), config.device.memory_gb);
  if (placed.segment_starts.empty()) placed.segment_starts = partition(true);
  int64_t tokens = N;
  if (placed.segment_starts.empty()) {  // not even the finest split holds a batch: fewer tokens a pass
    const int64_t count = asked > 0 ? asked : L;
    const std::vector<int> starts = balanced_starts(L, count);
    if (bytes(starts, true, 1) > budget)
      throw_config_error("device.memory_gb = {}{}: {} sub-model(s) of up to {} layer(s) need {} on the device ({} "
                         "slot(s) of weights and gradients, the embeddings, one token's activations) and only {} is "
                         "there; raise device.memory_gb{}",
                         config.device.memory_gb,
                         asked > 0 ? fmt::format(" with parallel.atom.sub_models = {}", asked) : "", count,
                         (L + count - 1) / count,
                         format_bytes(static_cast<std::size_t>(bytes(starts, true, 1))),
                         std::min<int64_t>(slots, count), format_bytes(static_cast<std::size_t>(budget)),
                         count < L ? " or parallel.atom.sub_models" : (slots > 2 ? " or lower parallel.atom.prefetch" : ""));
    int64_t lo = 1, hi = N;  // bytes(starts, true, lo) fits throughout
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (bytes(starts, true, mid) <= budget ? lo : hi) = mid;
    }
    placed.segment_starts = starts;
    tokens = lo;
  }
  placed.tokens = tokens;
  placed.device_bytes = bytes(placed.segment_starts, placed.recompute, tokens);
  if (plans_with(profile)) {
    planner_inputs(config, precision, device, *profile, tokens, placed.recompute, placed);
    placed.predicted = cost::evaluate_swaps(placed.layers, placed.device, placed.segment_starts);
  }
  return placed;
}

}  // namespace trident
