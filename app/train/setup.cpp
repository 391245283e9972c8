#include "app/train/setup.h"

#include <string>

#include <spdlog/spdlog.h>

#include "kernels/backends.h"
#include "kernels/common/error.h"
#include "parallel/comm/node_layout.h"
#include "parallel/comm/staged.h"
#include "parallel/placement/capacity.h"
#include "parallel/placement/recompute.h"
#include "parallel/select/configure.h"
#include "parallel/select/registry.h"
#include "parallel/zero/config.h"

#if TRIDENT_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_backend.h"
#include "parallel/comm/nccl.h"
#endif

namespace trident {

namespace {

// The backend device.backend names, on this rank's GPU; with NCCL, at most one rank a GPU.
Backend& checked_backend(const Config& config) {
  Backend& backend = backend_for(config.device.backend, world().node_group()->rank());
  if (config.device.comm == "nccl") check_ranks_per_gpu(config.device.backend, world().node_group()->size());
  return backend;
}

// The communicator of `host`'s members for buffers in the backend's memory (collective over `host`): with
// device.comm: host, the buffers staged through host copies over `host` (on the CPU backend too, where the copies
// are memcpy: how CI runs the staged path end to end); else NCCL on the GPU, ordered after the backend's compute
// stream, and nullptr on the CPU, whose buffers `host` itself takes.
std::unique_ptr<Communicator> device_communicator([[maybe_unused]] Communicator& host, Backend& backend,
                                                  const std::string& comm) {
  if (comm == "host") return make_staged_communicator(host, backend);
  if (backend.device() != Device::cuda) return nullptr;
#if TRIDENT_WITH_CUDA
  int device = 0;
  cudaGetDevice(&device);
  return make_nccl_communicator(host, device, cuda::compute_stream(backend));
#else
  return nullptr;  // unreachable: a build without CUDA has no cuda backend
#endif
}

// device.memory_gb must fit the GPU beside what the CUDA libraries hold, checked on every rank at once: after this
// node's ranks have their CUDA contexts, cuBLAS workspaces and NCCL communicators (made with the backend and the run's
// groups) and before any allocates its budget. A budget too large is then a configuration error now, not an
// out-of-memory error in a library mid-run.
void check_device_memory(const Config& config, Backend& backend, Communicator& ranks, int64_t tokens) {
  if (backend.device() != Device::cuda) return;
  Communicator& node = *ranks.node_group();
  node.barrier();
  const std::string shortfall = device_memory_shortfall(
      config.device.backend, node.rank(), node.size(), config.device.memory_gb, gib_to_bytes(config.device.memory_gb),
      tokens, static_cast<int>(config.model.n_embd), static_cast<int>(4 * config.model.n_embd),  // the MLP's bias
      model_layout(config.model).num_params);
  int32_t short_ranks = shortfall.empty() ? 0 : 1;
  ranks.allreduce_sum(&short_ranks, 1, CommType::i32);
  if (!shortfall.empty()) throw_config_error("{}", shortfall);
  if (short_ranks > 0)
    throw_config_error("device.memory_gb = {} does not fit the GPU of {} other rank(s); their logs say by how much",
                       config.device.memory_gb, short_ranks);
}

// The ranks parallel.zero.stage shards over (1: no sharding), once the strategies are known to take it.
int sharding_ranks(const Config& config, Communicator& ranks) {
  check_sharding_applies(config, ranks.size());
  // at stage 0 without asking where the ranks run (a collective call)
  return zero_config(config).stage == 0 ? 1 : zero_group_ranks(config, node_layout(ranks));
}

// Where the model is: the placement a strategy family makes (ATOM's swapped model, a pipeline stage), else a resident
// model recomputing its activations (train.recompute) or whose gradients (and weights) a source keeps by range
// (parallel.zero.stage 2 and 3),
// else none: resident, every activation kept.
std::unique_ptr<ModelPlacement> placed_model(const Config& config, Precision precision, Device device,
                                             Communicator& ranks, int zero_ranks, Sharding& sharding) {
  std::unique_ptr<ModelPlacement> placed = place_model(config, precision, device, ranks);
  if (!placed) return place_resident_model(config, precision, device, zero_ranks, &sharding);
  if (config.train.recompute != "none")
    throw_config_error("train.recompute: {} recomputes a resident model's layers, but parallel.strategy: {} places the "
                       "model itself (ATOM's swapped model recomputes through parallel.atom.activations); set "
                       "train.recompute: none", config.train.recompute, config.parallel.strategy);
  return placed;
}

// The group sizes the run's communicators are made for: its strategies', and the sharding group's.
std::vector<int> run_degrees(const Config& config, int world, int zero_ranks) {
  std::vector<int> degrees = candidate_degrees(config, world);
  degrees.push_back(zero_ranks);
  return degrees;
}

}  // namespace

RunSetup::RunSetup(const Config& c)
    : config(c),
      backend(checked_backend(c)),
      ranks(world()),
      zero_ranks(sharding_ranks(c, ranks)),
      // made now (collective): gradients are reduced where they live, over MPI on the host, over NCCL on the GPU
      // (bootstrapped over MPI) or staged through the host
      groups(ranks, [this](Communicator& host) { return device_communicator(host, backend, config.device.comm); },
             run_degrees(c, ranks.size(), zero_ranks)),
      precision(precision_named(c.train.precision)),
      sharding(make_sharding(c, zero_ranks, groups, model_layout(c.model).num_params)),
      placement(placed_model(c, precision, backend.device(), ranks, zero_ranks, *sharding)),
      capacity(placement ? placement->capacity_tokens()
                         : token_capacity(c, precision, backend.device(), {}, zero_ranks)),
      profile(check_selection(c, groups, capacity)) {
  check_device_memory(c, backend, ranks, capacity);
}

void RunSetup::log_memory(const GPT& model, const Allocator& device, const Allocator& host_store) const {
  if (placement)
    placement->log(model, device, host_store);
  else
    log_activation_memory(config, precision, backend.device(), capacity, {}, zero_ranks);
  if (sharding->sharded())
    spdlog::info("parallel.zero.stage: {}: this rank holds AdamW's moments{} of parameters [{}, {}) of {}, sharded "
                 "over {} ranks ({})", sharding->stage(),
                 sharding->shards_weights()     ? ", the gradient and the weights"
                 : sharding->shards_gradients() ? " and the gradient"
                                                : "",
                 sharding->owned().offset,
                 sharding->owned().offset + sharding->owned().numel, model.num_params(), zero_ranks,
                 zero_config(config).group);
}

}  // namespace trident
