#pragma once
// Linear attention's q/k feature map on the device (kernels/shared/feature_map.h holds the arithmetic the CPU backend
// also runs), in place on the q and k columns of the attention input. qkv (N, 3C) = [q | k | v] per row; qk_pre
// (N, 2C) = [q | k] before the map, saved for backward; both in the storage type T (float or bf16), fp32 arithmetic.
// v is left alone. Every call is asynchronous on `stream`.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/shared/feature_map.h"

namespace trident::cuda {

// qk_pre = qkv[:, :2C];  qkv[:, :2C] = map(qk_pre)
template <class T>
void feature_map_forward(T* qkv, T* qk_pre, int64_t N, int C, FeatureMap map, cudaStream_t stream);

// dqkv[:, :2C] *= map'(qk_pre), in place: it rescales, it does not accumulate. dv is left alone.
template <class T>
void feature_map_backward(T* dqkv, const T* qk_pre, int64_t N, int C, FeatureMap map, cudaStream_t stream);

}  // namespace trident::cuda
