#pragma once
// SIMT emulation (cuda_runtime.h here): the CUDA math constants the kernels use, as host values.
#include <limits>

#define CUDART_INF_F std::numeric_limits<float>::infinity()
#define CUDART_NAN_F std::numeric_limits<float>::quiet_NaN()
