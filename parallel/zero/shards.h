#pragma once
// Which range of the flat parameter buffer (core/model/layout.h) each rank of a sharding group owns: pure functions
// of the buffer's length and the group, so every rank, `trident plan` and the checkpoint reader agree without asking.
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "core/model/layout.h"
#include "parallel/comm/node_layout.h"

namespace trident {

// Floats a shard boundary is a multiple of: 64 bytes, so every range starts on a cache line (and a vector's width).
inline constexpr int64_t kShardAlign = 16;

// `ranks` consecutive ranges covering [0, numel): the buffer cut into kShardAlign-float units dealt as evenly as they
// go, the first numel/kShardAlign % ranks ranges one unit longer; the last non-empty range ends at numel. A group
// larger than the units leaves its last ranks empty ranges (at numel).
std::vector<FlatRange> shard_ranges(int64_t numel, int ranks);

// The ranks the optimizer state is sharded over, on `world` ranks of `ranks_per_node` a node: 1 at stage 0 (nothing
// sharded), else the world or a node's ranks as parallel.zero.group says (at least 1). Pure: the run's setup, its
// cost model and `trident plan` on a described cluster all ask it.
int zero_ranks(const Config& config, int64_t world, int64_t ranks_per_node);
// The same for the world's ranks where they run: a ConfigError naming parallel.zero.group when it is node and the
// nodes hold different numbers of ranks.
int zero_group_ranks(const Config& config, const NodeLayout& world);

// Whether a rank keeps only its range's gradient: parallel.zero.stage 2 or 3 over a group of several ranks; and its
// range's weights: stage 3.
bool gradients_sharded(const Config& config, int group_ranks);
bool weights_sharded(const Config& config, int group_ranks);
// What the sharding keeps outside the model for the config's stage over `group_ranks` ranks.
InSource sharded_states(const Config& config, int group_ranks);
// The device bytes of a rank's shards and the windows they move through (ModelShards::memory_bytes), 0 unless the
// gradients are sharded.
int64_t sharded_state_bytes(const Config& config, int group_ranks);

// The floats of the largest range one rank owns with this config: AdamW's moments (and the gradient and weight shards
// of stages 2 and 3) are this long per rank at stages 1 to 3 (all of them at stage 0). The capacity sizes every rank's
// activations for it.
int64_t owned_params(const Config& config, int64_t num_params, int group_ranks);

}  // namespace trident
