#pragma once
// NCCL communicators for device buffers (built when CUDA is: TRIDENT_WITH_CUDA). The same Communicator interface as
// MPI, with every pointer a CUDA device pointer. Each NCCL communicator rides on a host (MPI) communicator of the
// same members: rank 0 makes the ncclUniqueId and broadcasts it over the host one, and subgroup/split/node_group
// create the host group first, then the NCCL one over it, cached per host group.
//
// Semantics beyond the interface's:
// - Operations run on the communicator's own CUDA stream, in call order. Blocking calls return once the operation
//   has finished on the device; non-blocking ones return a request whose wait()/test() follow a CUDA event.
// - Each operation starts after everything issued so far on the `producer` stream (the compute stream whose kernels
//   write the buffers, as MPI's calls see every host write made before them): the communicator's stream waits for
//   an event recorded on it. Without that, an all-reduce started from a gradient-ready hook could read gradients
//   whose kernels are still queued.
// - NCCL has no tags: point-to-point messages between a pair match in the order they were issued (the `tag`
//   argument is ignored).
// - A waiting call polls NCCL for asynchronous errors (a peer that died, a broken link), aborts the communicator and
//   throws RuntimeError naming the operation and rank, so a failure never turns into a silent hang.
// - Passing a host pointer is an error naming the operation, not a crash.
#include <cuda_runtime.h>

#include <memory>

#include "parallel/comm/communicator.h"

namespace trident {

// The NCCL communicator of `host`'s members on CUDA device `device` of this process, ordered after `producer`
// (nullptr: the legacy default stream, for callers that synchronise themselves). Every member of `host` calls it
// (collective). The host communicator must outlive the result; its sub-communicators share the producer.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, int device, cudaStream_t producer);

}  // namespace trident
