#pragma once
// The CUDA backend: the Backend table (kernels/backend.h) over the .cu kernels and cuBLAS of this folder, fp32 and
// bf16, on one device and one compute stream (copies beside it: copy_queue.h). Device memory from the
// device's pool (memory.h). Everything is asynchronous on the compute stream except download() and squared_norm(),
// which wait for it. Cross-entropy leaves targets outside the vocabulary to its caller (a NaN loss, no error): the
// model checks them on the host before it uploads a batch (GPT::check_batch).
#include <cuda_runtime.h>

#include <memory>

#include "kernels/backend.h"

namespace trident::cuda {

// Selects `device` for the calling thread and builds its backend. Throws RuntimeError when it cannot be used.
std::unique_ptr<Backend> make_cuda_backend(int device);

// The stream a CUDA backend runs its ops on, in order: what a consumer on another stream (an NCCL communicator)
// must wait for before it reads what the ops wrote. `backend` must be a CUDA backend.
cudaStream_t compute_stream(Backend& backend);

}  // namespace trident::cuda
