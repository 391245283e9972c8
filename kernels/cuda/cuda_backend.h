#pragma once
// The CUDA backend: the Backend table (kernels/backend.h) over the .cu kernels and cuBLAS of this folder, fp32 and
// bf16, on one device and one compute stream (copies beside it: copy_queue.h). Device memory from the
// device's pool (memory.h). Everything is asynchronous on the compute stream except download() and squared_norm(),
// which wait for it. Cross-entropy leaves targets outside the vocabulary to its caller (a NaN loss, no error): the
// model checks them on the host before it uploads a batch (GPT::check_batch).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/backend.h"

namespace trident::cuda {

// Selects `device` for the calling thread and builds its backend. Throws RuntimeError when it cannot be used.
std::unique_ptr<Backend> make_cuda_backend(int device);

// The stream a CUDA backend runs its ops on, in order: what a consumer on another stream (an NCCL communicator)
// must wait for before it reads what the ops wrote. `backend` must be a CUDA backend.
cudaStream_t compute_stream(Backend& backend);

// The most device memory a CUDA backend's ops take from the device's pool at once beside the allocator's budget, for
// at most `tokens` rows of `channels`, biases of at most `widest_bias` outputs (a GPT block's MLP: 4 x channels) and
// a model of `params` parameters: the largest of the bias gradients' and the layernorm backward's partials, the
// embedding backward's sort and the gradient norm's partials (each freed in stream order before the next is taken).
// Beside it, and already in place when the backend is built: the CUDA context and the compute stream's cuBLAS
// workspace (gemm.h).
std::size_t launch_scratch_bytes(int64_t tokens, int channels, int widest_bias, int64_t params);

}  // namespace trident::cuda
