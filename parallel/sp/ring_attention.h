#pragma once
// Ring Attention (arXiv 2310.01889) for causal softmax attention over a packed batch, in the layout of
// parallel/sp/shard.h. Each rank keeps its queries; the K/V blocks of all ranks pass around the ring (isendrecv to
// group rank t+1, from t-1), the next exchange posted before computing on the current block so the transfer
// overlaps the compute, and partial results merge by online softmax. Masks are causal and per document by global
// token position (kernels/cpu/attention_block.h). Backward rotates K/V again together with their dK/dV accumulators, which travel
// with their blocks and come back to their owner after T steps, and recomputes probabilities from the saved lse.
//
// The signatures mirror kernels/cpu/attention_softmax.h with local buffers: qkv, dqkv (n_local, 3C), out, dout
// (n_local, C), lse (H, n_local). A 1-rank group runs the packed kernel itself (bit for bit the single-rank path).
// Host buffers.
#include "parallel/comm/communicator.h"
#include "parallel/sp/shard.h"

namespace trident {

void ring_attention_forward(Communicator& comm, float* out, float* lse, const float* qkv, const SpBatch& batch);

// Accumulates into dqkv. Needs the forward's out and lse.
void ring_attention_backward(Communicator& comm, float* dqkv, const float* dout, const float* qkv, const float* out,
                             const float* lse, const SpBatch& batch);

// Bytes rank t of T hands to the communicator: forward T-1 K/V blocks; backward the same plus T dK/dV hops.
SpTraffic ring_attention_traffic(int64_t N, int T, int t, int H, int D);

}  // namespace trident
