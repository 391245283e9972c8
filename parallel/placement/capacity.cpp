#include "parallel/placement/capacity.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/zero/model_shards.h"
#include "parallel/zero/shards.h"

namespace trident {

namespace {

ModelBytes resident_bytes(const Config& config, Precision precision, Device device, const ModelMemory& memory) {
  return [&config, precision, device, memory](int64_t tokens) {
    return GPT::memory_bytes(config.model, tokens, precision, device, memory);
  };
}

}  // namespace

// The bytes of this rank's AdamW moments (every parameter's, or the largest shard's: parallel.zero.stage 1), and at
// stages 2 and 3 of its shards and the windows they move through (the model then holds no gradients, and at stage 3
// no weights).
int64_t optimizer_state_bytes(const Config& config, int zero_ranks) {
  const int64_t owned = owned_params(config, model_layout(config.model).num_params, zero_ranks);
  return AdamW::memory_bytes(owned) + sharded_state_bytes(config, zero_ranks);
}

int64_t token_capacity(const Config& config, const ModelBytes& model_bytes, int zero_ranks) {
  const int64_t budget = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  const int64_t optimizer = optimizer_state_bytes(config, zero_ranks);
  auto fits = [&](int64_t tokens) { return model_bytes(tokens) + optimizer <= budget; };
  if (!fits(1))
    throw_config_error("device.memory_gb = {}: the model's weights, gradients and optimizer state ({}) leave no room "
                       "for activations",
                       config.device.memory_gb, format_bytes(static_cast<std::size_t>(model_bytes(0) + optimizer)));
  int64_t lo = 1, hi = config.train.batch_tokens;  // fits(lo) holds throughout
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

int64_t token_capacity(const Config& config, Precision precision, Device device, const ModelMemory& memory,
                       int zero_ranks) {
  return token_capacity(config, resident_bytes(config, precision, device, memory), zero_ranks);
}

int64_t host_memory_bytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
}

void log_activation_memory(const Config& config, const ModelBytes& model_bytes, int64_t capacity, int zero_ranks) {
  const int64_t fixed = model_bytes(0) + optimizer_state_bytes(config, zero_ranks);
  spdlog::info("activations: {} tokens per rank (device.memory_gb = {}: model, gradients and optimizer state {}, "
               "activations {})",
               capacity, config.device.memory_gb, format_bytes(static_cast<std::size_t>(fixed)),
               format_bytes(static_cast<std::size_t>(model_bytes(capacity) - model_bytes(0))));
}

void log_activation_memory(const Config& config, Precision precision, Device device, int64_t capacity,
                           const ModelMemory& memory, int zero_ranks) {
  log_activation_memory(config, resident_bytes(config, precision, device, memory), capacity, zero_ranks);
}

}  // namespace trident
