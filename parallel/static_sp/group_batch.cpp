#include "parallel/static_sp/group_batch.h"

#include <algorithm>

#include "parallel/lasp/lasp.h"

namespace trident {

TokenBatch GroupBatch::view() {
  TokenBatch v{tokens.tokens.data(), tokens.targets.data(), tokens.positions.data(), tokens.cu_seqlens.data(),
               tokens.num_tokens(), tokens.num_sequences()};
  if (group_cu_seqlens.empty()) return v;
  context.cu_seqlens = group_cu_seqlens.data();
  v.sp = &context;
  return v;
}

GroupBatch group_batch(Batch micro, const Communicator* group, AttentionOp* const* layer_ops) {
  if (!group) return GroupBatch{std::move(micro), {}, {}};
  const LaspShard shard = lasp_shard(micro.cu_seqlens.data(), micro.num_sequences(), micro.num_tokens(),
                                     group->size(), group->rank());
  GroupBatch local;
  auto range = [&](const std::vector<int32_t>& v) {
    return std::vector<int32_t>(v.begin() + shard.begin, v.begin() + shard.end);
  };
  local.tokens.tokens = range(micro.tokens);
  local.tokens.targets = range(micro.targets);
  // Each token's index inside its document, as in the whole micro-batch: a slice starting mid-document keeps its
  // tokens' true positions (what learned position embeddings read), not its local piece offsets.
  local.tokens.positions = range(micro.positions);
  local.tokens.cu_seqlens = shard.n_pieces() > 0 ? shard.cu_seqlens : std::vector<int32_t>{0};
  local.context.num_sequences = micro.num_sequences();
  local.context.num_tokens = micro.num_tokens();
  for (int r = 0; r < group->size(); ++r) {
    const LaspShard slice = lasp_shard(micro.cu_seqlens.data(), micro.num_sequences(), micro.num_tokens(),
                                       group->size(), r);
    local.context.most_slice_tokens = std::max<int64_t>(local.context.most_slice_tokens, slice.end - slice.begin);
  }
  local.context.layer_ops = layer_ops;
  local.group_cu_seqlens = std::move(micro.cu_seqlens);
  return local;
}

}  // namespace trident
