#include "parallel/zero/sharding.h"

#include <algorithm>
#include <vector>

#include "kernels/common/error.h"
#include "parallel/zero/config.h"

namespace trident {

Sharding::Sharding(int64_t num_params) : ranges_{{0, num_params}} {}

Sharding::Sharding(int stage, int64_t num_params, const RunGroups::RankGroup& group)
    : stage_(stage), rank_(group.device->rank()), group_(group), ranges_(shard_ranges(num_params, group.device->size())) {
  TRIDENT_CHECK(stage == 1, "parallel.zero.stage {} is not implemented", stage);
  TRIDENT_CHECK(group.host && group.host->size() == group.device->size(), "a sharding group's host and device "
                "communicators differ");
}

void Sharding::gather_parameters(GPT& model) {
  if (!sharded()) return;
  const FlatRange mine = owned();
  Backend& backend = model.store_backend();
  if (mine.numel > 0)
    backend.copy_rows(model.grads() + mine.offset, mine.numel, model.params() + mine.offset, mine.numel, 1, mine.numel);
  std::vector<int64_t> counts, displs;
  for (const FlatRange& r : ranges_) {
    counts.push_back(r.numel);
    displs.push_back(r.offset);
  }
  group_.device->allgatherv(model.grads() + mine.offset, mine.numel, model.params(), counts, displs, CommType::f32);
}

void Sharding::gather_optimizer(const AdamW& mine, AdamW* whole) {
  const bool root = rank_ == 0;
  TRIDENT_CHECK(root == (whole != nullptr), "the whole optimizer state is gathered on the group's rank 0 alone");
  if (root) {
    TRIDENT_CHECK(whole->owned().offset == 0 && whole->owned().numel == ranges_.back().offset + ranges_.back().numel,
                  "the whole optimizer state goes into an optimizer owning every parameter");
    whole->set_steps_taken(mine.steps_taken());
  }
  // One moment at a time through a host copy of this rank's range: the root writes its own, the others send theirs.
  const HostFloats m(mine.backend(), mine.m(), mine.size()), v(mine.backend(), mine.v(), mine.size());
  const HostFloats* moments[2] = {&m, &v};
  for (int k = 0; k < 2; ++k) {
    if (!root) {
      group_.host->send(moments[k]->data(), mine.size(), CommType::f32, 0, k);
      continue;
    }
    float* out = k == 0 ? whole->m() : whole->v();
    std::copy_n(moments[k]->data(), mine.size(), out + owned().offset);
    for (int r = 1; r < static_cast<int>(ranges_.size()); ++r)
      group_.host->recv(out + ranges_[static_cast<std::size_t>(r)].offset, ranges_[static_cast<std::size_t>(r)].numel,
                        CommType::f32, r, k);
  }
}

std::unique_ptr<Sharding> make_sharding(const Config& config, const RunGroups& groups, int64_t num_params) {
  const ZeroConfig& zero = zero_config(config);
  const int ranks = zero.group == "node" ? groups.ranks_per_node() : static_cast<int>(groups.world_size());
  if (zero.stage == 0 || ranks <= 1) return std::make_unique<Sharding>(num_params);
  return std::make_unique<Sharding>(static_cast<int>(zero.stage), num_params, groups.group(ranks));
}

}  // namespace trident
