#pragma once
// One micro-batch as a rank runs it: the whole micro-batch, or under sequence parallelism this rank's contiguous
// token slice of it, with the context its group's attention ops need (the whole micro-batch's document boundaries,
// core/model/token_batch.h). Static candidates and FlexSP's groups cut their micro-batches the same way.
#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "core/model/token_batch.h"
#include "parallel/comm/communicator.h"

namespace trident {

struct GroupBatch {
  Batch tokens;                           // what this rank runs
  std::vector<int32_t> group_cu_seqlens;  // the whole micro-batch's; empty without sequence parallelism
  SequenceParallelContext context;
  // The view the model runs (valid while this object lives and is not moved).
  TokenBatch view();
};

// `micro` whole when `group` is null, else this rank's slice of it for `group`, whose layers run `layer_ops`.
GroupBatch group_batch(Batch micro, const Communicator* group, AttentionOp* const* layer_ops);

}  // namespace trident
