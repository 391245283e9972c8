#pragma once
// A communicator for buffers in a backend's memory that stages them through host memory over the MPI communicator
// of the same members (device.comm: host). Every call downloads what it sends (Backend::download: after the ops
// issued before it), runs the MPI operation on host copies and uploads what it received; a non-blocking call
// uploads when it is waited on. Slower than NCCL by two copies a call and a host round trip, but it takes any number
// of ranks on one GPU (NCCL takes one rank a GPU), so every strategy's CUDA path can be checked with several ranks
// on one card. On the CPU backend the copies are memcpy (which is how it is tested in CI).
// Sums of bf16 are refused as MPI refuses them (MPI has no bf16 arithmetic).
#include <memory>

#include "kernels/backend.h"
#include "parallel/comm/communicator.h"

namespace trident {

// The staged communicator over `host`'s members. `host` and `backend` must outlive it; its sub-communicators are
// staged communicators over `host`'s, cached like them.
std::unique_ptr<Communicator> make_staged_communicator(Communicator& host, Backend& backend);

}  // namespace trident
