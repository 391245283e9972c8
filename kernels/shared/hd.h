#pragma once
// TRIDENT_HD marks arithmetic compiled for both the host (CPU backend, tests) and the device (CUDA backend),
// so what the CPU tests verify is the arithmetic the GPU runs.
#if defined(__CUDACC__)
#define TRIDENT_HD __host__ __device__ __forceinline__
#else
#define TRIDENT_HD inline
#endif

// A vectorised reduction loop on the host (OpenMP simd); a plain loop in device code, where threads do the work.
#define TRIDENT_PRAGMA(x) _Pragma(#x)
#if defined(__CUDA_ARCH__)
#define TRIDENT_SIMD_REDUCTION(op, var)
#else
#define TRIDENT_SIMD_REDUCTION(op, var) TRIDENT_PRAGMA(omp simd reduction(op : var))
#endif
