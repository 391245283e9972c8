#include "parallel/atom/placement.h"

#include <unistd.h>

#include <fmt/core.h>

#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/atom/swapper.h"

namespace trident {

namespace {

Device device_of(const Config& config) { return config.device.backend == "cpu" ? Device::cpu : Device::cuda; }

int64_t placed_bytes(const Config& config, Precision precision, Device device, const std::vector<int>& starts,
                     int slots, int64_t tokens) {
  return GPT::memory_bytes(config.model, tokens, precision, device, starts) +
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

AtomPlacement place_atom(const Config& config, Precision precision, Device device) {
  const ModelConfig& m = config.model;
  const int64_t L = m.n_layer, budget = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  const int64_t asked = config.parallel.atom_sub_models;
  if (asked > L)
    throw_config_error("parallel.atom.sub_models = {}: the model has only {} layers to split", asked, L);
  const int slots = static_cast<int>(config.parallel.atom_prefetch) + 1;
  check_host_store(config, model_layout(m).num_params);
  AtomPlacement placed;
  placed.host_bytes = 16 * model_layout(m).num_params;
  auto fits = [&](int64_t count, int64_t tokens) {
    return placed_bytes(config, precision, device, balanced_starts(L, count), slots, tokens) <= budget;
  };
  const int64_t N = config.train.batch_tokens;
  int64_t count = asked;
  if (count == 0)  // the fewest sub-models that hold a whole batch, else the finest split
    for (count = 1; count < L && !fits(count, N);) ++count;
  if (!fits(count, 1)) {
    const std::vector<int> starts = balanced_starts(L, count);
    throw_config_error("device.memory_gb = {}: {} sub-model(s) of up to {} layer(s) need {} on the device ({} "
                       "slot(s) of weights and gradients, the embeddings, one token's activations) and only {} is "
                       "there; raise device.memory_gb{}",
                       config.device.memory_gb, count, (L + count - 1) / count,
                       format_bytes(static_cast<std::size_t>(placed_bytes(config, precision, device, starts, slots, 1))),
                       std::min<int64_t>(slots, count),
                       format_bytes(static_cast<std::size_t>(budget)),
                       count < L ? " or parallel.atom.sub_models" : (slots > 2 ? " or lower parallel.atom.prefetch" : ""));
  }
  int64_t lo = 1, hi = N;  // fits(count, lo) holds throughout
  if (fits(count, hi)) lo = hi;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(count, mid) ? lo : hi) = mid;
  }
  placed.segment_starts = balanced_starts(L, count);
  placed.slots = slots;
  placed.tokens = lo;
  placed.device_bytes = placed_bytes(config, precision, device, placed.segment_starts, slots, lo);
  return placed;
}

}  // namespace trident
