#include "parallel/zero/sharding.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/checkpoint/model_io.h"
#include "core/common/atomic_file.h"
#include "kernels/common/error.h"
#include "parallel/zero/config.h"

namespace trident {

Sharding::Sharding(int64_t num_params) : ranges_{{0, num_params}} {}

Sharding::Sharding(int stage, int64_t num_params, const RunGroups::RankGroup& group, Communicator* across)
    : stage_(stage),
      rank_(group.device->rank()),
      group_(group),
      ranges_(shard_ranges(num_params, group.device->size())),
      across_(across) {
  TRIDENT_CHECK(stage >= 1 && stage <= 3, "parallel.zero.stage {} is not implemented", stage);
  TRIDENT_CHECK(group.host && group.host->size() == group.device->size(), "a sharding group's host and device "
                "communicators differ");
}

float* Sharding::owned_grads(GPT& model) {
  if (!shards_gradients()) return model.grads() + owned().offset;
  TRIDENT_CHECK(shards_ != nullptr, "parallel.zero.stage {} without the source of the gradients", stage_);
  return shards_->grads();
}

float* Sharding::owned_weights(GPT& model) {
  if (!shards_weights()) return model.params() + owned().offset;
  TRIDENT_CHECK(shards_ != nullptr, "parallel.zero.stage 3 without the source of the weights");
  return shards_->weights();
}

void Sharding::set_weights(const float* host_owned) {
  TRIDENT_CHECK(shards_weights() && shards_ != nullptr, "parallel.zero.stage 3 without the source of the weights");
  shards_->set_weights(host_owned);
}

// Each rank's range to the group's rank 0 over the host communicator, one after another: no rank but rank 0 holds
// more than its range, and the device holds nothing more.
std::vector<float> Sharding::weights_on_group_lead() {
  TRIDENT_CHECK(shards_weights() && shards_ != nullptr, "parallel.zero.stage 3 without the source of the weights");
  constexpr int kWeightsTag = 7301;
  std::vector<float> mine = shards_->weights_to_host();
  if (rank_ != 0) {
    group_.host->send(mine.data(), owned().numel, CommType::f32, 0, kWeightsTag);
    return {};
  }
  const FlatRange& last = ranges_.back();
  std::vector<float> whole(static_cast<std::size_t>(last.offset + last.numel));
  std::copy(mine.begin(), mine.end(), whole.begin() + owned().offset);
  for (int r = 1; r < static_cast<int>(ranges_.size()); ++r)
    {
    const FlatRange& range = ranges_[static_cast<std::size_t>(r)];
    group_.host->recv(whole.data() + range.offset, range.numel, CommType::f32, r, kWeightsTag);
  }
  return whole;
}

double Sharding::squared_grad_norm(GPT& model) {
  double sum = model.store_backend().squared_norm(owned_grads(model), owned().numel);
  if (sharded()) group_.host->allreduce_sum(&sum, 1, CommType::f64);
  return sum;
}

void Sharding::write_weights(const std::filesystem::path& path, const ModelLayout& layout,
                             const std::map<std::string, std::string>& metadata) {
  TRIDENT_CHECK(shards_weights() && shards_ != nullptr, "parallel.zero.stage 3 without the source of the weights");
  Communicator& group = *group_.host;
  const std::filesystem::path tmp = path.string() + ".tmp";
  on_all_or_none(group, fmt::format("begin '{}'", tmp.string()), [&] {
    if (rank_ == 0) begin_model_file(tmp, layout, metadata);
  });
  on_all_or_none(group, fmt::format("write their range of the weights into '{}'", tmp.string()), [&] {
    const std::vector<float> mine = shards_->weights_to_host();
    write_model_range(tmp, owned(), mine.data());
  });
  on_all_or_none(group, fmt::format("rename '{}' into place", tmp.string()), [&] {
    if (rank_ != 0) return;
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw_runtime_error("cannot rename '{}' to '{}': {}", tmp.string(), path.string(), ec.message());
    fsync_directory(path.parent_path());
  });
}

void Sharding::gather_parameters(GPT& model) {
  if (!sharded() || shards_weights()) return;
  const FlatRange mine = owned();
  Backend& backend = model.store_backend();
  float* send = owned_grads(model);
  if (mine.numel > 0) backend.copy_rows(send, mine.numel, model.params() + mine.offset, mine.numel, 1, mine.numel);
  std::vector<int64_t> counts, displs;
  for (const FlatRange& r : ranges_) {
    counts.push_back(r.numel);
    displs.push_back(r.offset);
  }
  group_.device->allgatherv(send, mine.numel, model.params(), counts, displs, CommType::f32);
}


std::vector<OptimizerShard> Sharding::write_optimizer(const std::filesystem::path& run_dir, int64_t step,
                                                      const AdamW& mine) {
  TRIDENT_CHECK(sharded() && holds_lead() && mine.owned() == owned(), "the optimizer does not own this rank's range "
                "of the lead's sharding group");
  return write_sharded_optimizer(*group_.host, run_dir, step, mine, ranges_);
}

std::vector<OptimizerShard> write_sharded_optimizer(Communicator& group, const std::filesystem::path& run_dir,
                                                    int64_t step, const AdamW& optimizer,
                                                    const std::vector<FlatRange>& ranges) {
  TRIDENT_CHECK(static_cast<int>(ranges.size()) == group.size(), "{} optimizer shards for a group of {} ranks",
                ranges.size(), group.size());
  const int rank = group.rank(), count = group.size();
  const std::filesystem::path dir = checkpoint_build_dir(run_dir, step);
  on_all_or_none(group, fmt::format("make the checkpoint's directory '{}'", dir.string()), [&] {
    if (rank == 0) begin_checkpoint(run_dir, step);
  });
  on_all_or_none(group, fmt::format("write their range of AdamW's moments into '{}'", dir.string()),
                 [&] { write_optimizer_shard(dir, rank, count, optimizer, ranges[static_cast<std::size_t>(rank)]); });
  std::vector<OptimizerShard> shards;
  for (int r = 0; r < count; ++r)
    shards.push_back({optimizer_shard_file(r, count), ranges[static_cast<std::size_t>(r)].offset,
                      ranges[static_cast<std::size_t>(r)].numel});
  return shards;
}

std::unique_ptr<Sharding> make_sharding(const Config& config, int zero_ranks, RunGroups& groups,
                                        int64_t num_params) {
  if (zero_ranks <= 1) return std::make_unique<Sharding>(num_params);
  const int stage = static_cast<int>(zero_config(config).stage);
  const RunGroups::RankGroup& group = groups.group(zero_ranks);
  Communicator* across = nullptr;
  if (stage >= 2 && group.replicas > 1)  // made now, collectively over every rank: the groups' same positions
    across = groups.gradients().split(group.device->rank(), groups.world().rank());
  return std::make_unique<Sharding>(stage, num_params, group, across);
}

}  // namespace trident
