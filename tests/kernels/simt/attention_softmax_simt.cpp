// The CUDA source itself, compiled as host C++ against the SIMT emulation (shim/cuda_runtime.h).
#include "kernels/cuda/attention_softmax.cu"
