#include "kernels/backends.h"

#include <memory>

#include <fmt/format.h>

#include "kernels/common/error.h"

#if TRIDENT_WITH_CUDA
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"
#endif

namespace trident {

BackendStatus backend_status(const std::string& name) {
  if (name == "cpu") return {true, true, "OpenBLAS + OpenMP"};
  if (name != "cuda") return {false, false, fmt::format("unknown backend '{}'", name)};
#if TRIDENT_WITH_CUDA
  std::string why;
  const int count = cuda::device_count(&why);
  if (count == 0) return {true, false, fmt::format("no usable CUDA device ({})", why)};
  return {true, true, fmt::format("{} CUDA device(s), the first: {}", count, cuda::device_description(0))};
#else
  return {false, false,
          "this build has no CUDA backend (configured without the CUDA toolkit; rebuild with -DTRIDENT_CUDA=ON where "
          "nvcc is installed)"};
#endif
}

Backend& backend_for(const std::string& name, int local_rank) {
  const BackendStatus status = backend_status(name);
  if (!status.built || !status.usable)
    throw_config_error("device.backend: '{}' is not available: {}", name, status.detail);
  if (name == "cpu") return cpu_backend();
#if TRIDENT_WITH_CUDA
  static std::unique_ptr<Backend> cuda;
  if (!cuda) cuda = cuda::make_cuda_backend(local_rank % cuda::device_count(nullptr));
  return *cuda;
#else
  throw_config_error("device.backend: '{}' is not available", name);  // unreachable: status says not built
#endif
}

void check_ranks_per_gpu(const std::string& name, int node_ranks) {
#if TRIDENT_WITH_CUDA
  if (name != "cuda") return;
  const int gpus = cuda::device_count(nullptr);
  if (node_ranks > gpus)
    throw_config_error("device.backend: 'cuda' with {} ranks on this node and {} GPU(s): NCCL takes one rank a GPU, "
                       "so start at most {} rank(s) a node (mpirun -np / -N, srun --ntasks-per-node)",
                       node_ranks, gpus, gpus);
#else
  (void)name, (void)node_ranks;
#endif
}

std::string device_memory_shortfall(const std::string& name, int local_rank, int node_ranks, double memory_gb,
                                    std::size_t budget_bytes, int64_t tokens, int channels, int widest_bias,
                                    int64_t params) {
#if TRIDENT_WITH_CUDA
  if (name != "cuda") return "";
  const int gpus = cuda::device_count(nullptr);
  const int device = local_rank % gpus;
  const int sharing = node_ranks / gpus + (device < node_ranks % gpus ? 1 : 0);  // ranks r with r % gpus == device
  return cuda::memory_shortfall(device, memory_gb, budget_bytes,
                                cuda::launch_scratch_bytes(tokens, channels, widest_bias, params), sharing);
#else
  (void)name, (void)local_rank, (void)node_ranks, (void)memory_gb, (void)budget_bytes, (void)tokens, (void)channels,
      (void)widest_bias, (void)params;
  return "";
#endif
}

double device_peak_flops(const std::string& name, int local_rank, bool bf16, std::string* how) {
#if TRIDENT_WITH_CUDA
  if (name == "cuda") return cuda::dense_peak_flops(local_rank % cuda::device_count(nullptr), bf16, how);
#endif
  (void)local_rank, (void)bf16;
  *how = fmt::format("no device peak for the {} backend", name);
  return 0;
}

}  // namespace trident
