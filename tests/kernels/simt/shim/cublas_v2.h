#pragma once
// SIMT emulation (cuda_runtime.h here): the cuBLAS status type that kernels/cuda/check.h names; no cuBLAS.
using cublasStatus_t = int;
enum : int { CUBLAS_STATUS_SUCCESS = 0 };
