#pragma once
// TRIDENT_HD marks arithmetic compiled for both the host (CPU backend, tests) and the device (CUDA backend),
// so what the CPU tests verify is the arithmetic the GPU runs.
#if defined(__CUDACC__)
#define TRIDENT_HD __host__ __device__ __forceinline__
#else
#define TRIDENT_HD inline
#endif
