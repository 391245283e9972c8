#pragma once
// The CUDA backend's copy queue (kernels/copy_queue.h): copies on a stream of their own, beside the compute stream.
// A compute mark is an event recorded on the compute stream; after_compute makes the copy stream wait for it, so a
// slot is not overwritten while kernels issued before its release still read it, and neither stream stops. Host
// buffers should be pinned (the backend's staging_memory()) for the copies to be asynchronous. Each call selects the
// device first: the queue is used from a thread of its own, and a thread's current device is its own.
#include <memory>

#include <cuda_runtime.h>

#include "kernels/copy_queue.h"

namespace trident::cuda {

std::unique_ptr<CopyQueue> make_copy_queue(int device, cudaStream_t compute);

}  // namespace trident::cuda
