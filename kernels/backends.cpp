#include "kernels/backends.h"

#include <fmt/format.h>

#if TRIDENT_WITH_CUDA
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

}  // namespace trident
