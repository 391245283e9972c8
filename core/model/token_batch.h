#pragma once
// A packed batch as the model sees it: documents (or pieces of them) back to back, attention inside each only.
#include <cstdint>

namespace trident {

class AttentionOp;  // core/model/attention.h

// Under sequence parallelism a rank holds a contiguous token slice of a micro-batch that its group holds together.
// The context travels with that slice: the whole micro-batch's document boundaries, and the attention op of each
// layer for the group that runs it (each op owns its group's communicator and what it keeps from forward for
// backward). The group may change from one micro-batch to the next: the model binds nothing to a group.
struct SequenceParallelContext {
  const int32_t* cu_seqlens = nullptr;  // (num_sequences + 1) of the whole micro-batch
  int num_sequences = 0;
  int64_t num_tokens = 0;
  AttentionOp* const* layer_ops = nullptr;  // (n_layer) this group's op for each layer
  // The longest slice a rank of the group holds (0: this one's): what sizes a pass every rank of the group must
  // shape alike (train.recompute: auto).
  int64_t most_slice_tokens = 0;
};

struct TokenBatch {
  const int32_t* tokens = nullptr;      // (N)
  const int32_t* targets = nullptr;     // (N) next token, or -1 where there is none; nullptr when not training
  const int32_t* positions = nullptr;   // (N) index of the token inside its sequence
  const int32_t* cu_seqlens = nullptr;  // (n_seq + 1) sequence s is tokens [cu_seqlens[s], cu_seqlens[s+1])
  int64_t num_tokens = 0;
  int num_sequences = 0;
  const SequenceParallelContext* sp = nullptr;  // sequence parallelism: the micro-batch this slice belongs to
};

}  // namespace trident
