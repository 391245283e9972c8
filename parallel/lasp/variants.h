#pragma once
// The two ways to move boundary states between the ranks of an SP group (private to parallel/lasp). Both fill
// cache.state_in in forward and read it in backward; lasp.cpp builds the rest of the cache and dispatches.
#include "kernels/backend.h"
#include "parallel/comm/communicator.h"
#include "parallel/lasp/lasp.h"

namespace trident::lasp {

// LASP-1: states pass rank to rank (lasp1.cpp).
void ring_forward(Communicator& sp, Backend& backend, float* out, const float* qkv, LaspCache& cache);
void ring_backward(Communicator& sp, Backend& backend, float* dqkv, const float* dout, const float* qkv,
                   const LaspCache& cache);

// LASP-2: one allgather of every rank's boundary state, then a local prefix (lasp2.cpp).
void allgather_forward(Communicator& sp, Backend& backend, float* out, const float* qkv, LaspCache& cache);
void allgather_backward(Communicator& sp, Backend& backend, float* dqkv, const float* dout, const float* qkv,
                        const LaspCache& cache);

}  // namespace trident::lasp
