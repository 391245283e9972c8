#pragma once
// Ulysses, Ring Attention and USP (the two combined) as the model sees them: one AttentionOp per layer
// (core/model/attention.h) over the rank's sequence-parallel group, so training can run them where LASP runs. A
// Ulysses or USP op keeps its layer's head-sharded activations for backward; Ring Attention keeps nothing between
// calls, so its layers share one RingCache of scratch buffers.
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

// USP (arXiv 2405.07719), softmax only: 2-D sequence parallelism, Ulysses over `ulysses_degree` consecutive ranks of
// the group (on one node) times Ring Attention across those Ulysses groups, so a group may be larger than the head
// count. Needs ulysses_degree to divide the group and H. Keeps its layer's head-sharded activations for backward.
std::unique_ptr<AttentionOp> make_usp_op(Communicator& sp, Backend& backend, std::shared_ptr<RingCache> scratch, int H,
                                         int D, int ulysses_degree);

}  // namespace trident
