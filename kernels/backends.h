#pragma once
// The compute backends: which this build has, and whether this machine can run them. Asked before any work starts,
// so `device.backend: cuda` on a machine (or a build) without CUDA is a one-line configuration error that says
// which of the three is missing: the build, the driver, or a device.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/backend.h"

namespace trident {

struct BackendStatus {
  bool built = false;   // compiled into this binary
  bool usable = false;  // and this machine can run it
  std::string detail;   // why not, or what was found ("2 CUDA device(s): NVIDIA H100 ...")
};

// `name` is a value of device.backend: "cpu" or "cuda".
BackendStatus backend_status(const std::string& name);

// The backend device.backend names, for this process: the shared CPU backend, or the CUDA backend on device
// `local_rank % devices` (created on first use, then kept). Throws ConfigError saying what is missing.
Backend& backend_for(const std::string& name, int local_rank);

// NCCL takes one rank a GPU: throws ConfigError naming device.backend when `node_ranks` ranks of this node would
// share fewer GPUs (backend_for gives rank r GPU r % GPUs). Nothing to check for the cpu backend.
void check_ranks_per_gpu(const std::string& name, int node_ranks);

// Why device.memory_gb (`budget_bytes`) does not fit this rank's GPU (cuda::memory_shortfall names the key and the
// largest value that fits), or "": the `node_ranks` ranks of this node share its GPUs as backend_for places them,
// each needing its budget plus the CUDA backend's launch scratch (cuda::launch_scratch_bytes, whose arguments
// follow budget_bytes). Call it when this node's ranks hold their backend and device communicators, before any
// allocates. "" for the cpu backend.
std::string device_memory_shortfall(const std::string& name, int local_rank, int node_ranks, double memory_gb,
                                    std::size_t budget_bytes, int64_t tokens, int channels, int widest_bias,
                                    int64_t params);

// The dense peak FLOP/s of the GPU backend_for(name, local_rank) runs on, for bf16 or fp32 matmuls
// (kernels/cuda/device.h); 0 for the CPU (whose roof is measured: core/metrics/roof.h) or an unknown GPU. `how` says
// where the number comes from.
double device_peak_flops(const std::string& name, int local_rank, bool bf16, std::string* how);

}  // namespace trident
