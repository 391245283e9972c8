#include "parallel/placement/capacity.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/zero/shards.h"

namespace trident {

namespace {

// The bytes of this rank's AdamW moments: every parameter's, or the largest shard's (parallel.zero.stage: 1).
int64_t optimizer_bytes(const Config& config, int zero_ranks) {
  return AdamW::memory_bytes(owned_params(config, model_layout(config.model).num_params, zero_ranks));
}

}  // namespace

int64_t token_capacity(const Config& config, Precision precision, Device device, const ModelMemory& memory,
                       int zero_ranks) {
  const int64_t budget = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  const int64_t optimizer = optimizer_bytes(config, zero_ranks);
  auto fits = [&](int64_t tokens) {
    return GPT::memory_bytes(config.model, tokens, precision, device, memory) + optimizer <= budget;
  };
  if (!fits(1))
    throw_config_error("device.memory_gb = {}: the model's weights, gradients and optimizer state ({}) leave no room "
                       "for activations",
                       config.device.memory_gb,
                       format_bytes(static_cast<std::size_t>(GPT::memory_bytes(config.model, 0, precision, device) +
                                                             optimizer)));
  int64_t lo = 1, hi = config.train.batch_tokens;  // fits(lo) holds throughout
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

int64_t host_memory_bytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGE_SIZE));
}

void log_activation_memory(const Config& config, Precision precision, Device device, int64_t capacity,
                           const ModelMemory& memory, int zero_ranks) {
  const int64_t fixed = GPT::memory_bytes(config.model, 0, precision, device, memory) +
                        optimizer_bytes(config, zero_ranks);
  spdlog::info("activations: {} tokens per rank (device.memory_gb = {}: model, gradients and optimizer state {}, "
               "activations {})",
               capacity, config.device.memory_gb,
               format_bytes(static_cast<std::size_t>(fixed)),
               format_bytes(static_cast<std::size_t>(GPT::memory_bytes(config.model, capacity, precision, device,
                                                                       memory) -
                                                     GPT::memory_bytes(config.model, 0, precision, device, memory))));
}

}  // namespace trident
