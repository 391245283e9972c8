#pragma once
// Ulysses and Ring Attention as the model sees them: one AttentionOp per layer (core/model/attention.h) over the
// rank's sequence-parallel group, so training can run either baseline where LASP runs. A Ulysses op keeps its layer's
// head-sharded activations for backward; Ring Attention keeps nothing between calls, so its layers share one
// RingCache of scratch buffers.
// The ops compute on the backend passed in, on buffers in its memory; the communicator must take that memory (MPI for
// the CPU backend, NCCL for CUDA).
#include <memory>

#include "core/model/attention.h"
#include "parallel/comm/communicator.h"
#include "parallel/sp/ring_attention.h"

namespace trident {

enum class AttentionType { softmax, linear };

// Either attention type; needs H % sp.size() == 0 (the trainer checks it as a configuration error first).
std::unique_ptr<AttentionOp> make_ulysses_op(Communicator& sp, Backend& backend, AttentionType type, int H, int D);
// Softmax only: asking for linear attention throws. Computes on the scratch's backend.
std::unique_ptr<AttentionOp> make_ring_op(Communicator& sp, std::shared_ptr<RingCache> scratch, AttentionType type,
                                          int H, int D);

}  // namespace trident
