#pragma once
// Fully connected layer on the device, weight in the Hugging Face GPT-2 Conv1D layout (C_in, C_out), as in
// kernels/cpu/linear.h:
//   out (N, OC) = inp (N, C) @ weight (C, OC) + bias (OC)          bias may be nullptr
// Activations, weight and bias have storage type T (float or bf16; for bf16 training, the bf16 copy of the fp32
// master weights); the GEMMs accumulate in fp32 (kernels/cuda/gemm.h, no TF32). Every call is asynchronous on
// `stream`.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trident::cuda {

template <class T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int C, int OC,
                    cudaStream_t stream);

// dinp (N, C) += dout @ weight^T;  dweight (C, OC) += inp^T @ dout;  dbias (OC) += column sums of dout.
// dinp and dbias may be nullptr (first layer / no bias).
// Parameter gradients are fp32 whatever T is: dweight is the fp32 output of a mixed GEMM (bf16 A and B, fp32 C,
// beta = 1, so the accumulation into dweight is fp32 too), and dbias a fixed-order column sum in fp32 (blocks of
// 256 rows summed, then the block partials added in block order), bit-identical run to run. dinp is T.
template <class T>
void linear_backward(T* dinp, float* dweight, float* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                     int C, int OC, cudaStream_t stream);

// The scratch the bias gradient takes from the device's pool for N rows of OC outputs (the blocks' partials, freed
// in stream order): linear_backward's, and gelu_backward's with a bias (the same column sums).
std::size_t bias_grad_scratch_bytes(int64_t N, int OC);

}  // namespace trident::cuda
