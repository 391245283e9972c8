#pragma once
// x[i] = value over n elements on the device (the loss weights of a batch; zeros go through cudaMemsetAsync).
#include <cuda_runtime.h>

#include <cstdint>

namespace trident::cuda {

void fill(float* x, int64_t n, float value, cudaStream_t stream);

}  // namespace trident::cuda
