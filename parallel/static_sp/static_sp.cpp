#include "parallel/static_sp/static_sp.h"

#include <algorithm>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "parallel/lasp/auto_variant.h"
#include "parallel/lasp/config.h"
#include "parallel/lasp/model_op.h"
#include "parallel/sp/model_op.h"

namespace trident {

namespace {

// parallel.lasp.variant; `auto` times both state exchanges on this group (parallel/lasp/auto_variant.h) and takes
// the faster, which every rank of the group agrees on.
LaspVariant lasp_variant(const Config& c, Communicator& group) {
  if (lasp_config(c).variant == "lasp1") return LaspVariant::lasp1;
  if (lasp_config(c).variant == "lasp2") return LaspVariant::lasp2;
  const int64_t D = c.model.n_embd / c.model.n_head, state_floats = c.model.n_head * D * D;
  const LaspVariantTimes times = measure_lasp_variants(group, state_floats);
  spdlog::info("parallel.lasp.variant: auto chose {}: one forward's state exchange of {} KiB states, measured on "
               "this group: LASP-1's chain {:.3f} ms, LASP-2's allgather {:.3f} ms",
               lasp_variant_name(times.faster()), state_floats * 4 / 1024, times.lasp1_s * 1e3,
               times.lasp2_s * 1e3);
  return times.faster();
}


}  // namespace

StaticSequenceParallel::StaticSequenceParallel(const StrategyEnv& env, const std::string& method, int degree)
    : dp_(env.groups.world(), env.groups.gradients(), env.shards) {
  const ModelConfig& m = env.config.model;
  const int world = env.groups.world().size();
  check_static_candidate(m, method, degree, world);
  const RunGroups::RankGroup& group = env.groups.group(degree);
  replica_ = group.replica;
  LayerMethods methods = layer_methods(method);
  if (methods.linear == "lasp") {
    methods.linear = lasp_variant(env.config, *group.host) == LaspVariant::lasp1 ? "lasp1" : "lasp2";
    if (methods.softmax == "lasp") methods.softmax = methods.linear;
  }
  const std::string resolved =
      methods.linear == methods.softmax ? methods.linear : methods.linear + "+" + methods.softmax;
  layout_ = std::make_unique<StaticCandidate>(env.config, resolved, degree, world, env.capacity_tokens,
                                           env.backend.device());
  if (resolved == "dp") return;  // no group: the local kernels
  group_ = group.host;
  // Ulysses and Ring Attention exchange activations, which live in the backend's memory: on the GPU their group
  // talks NCCL. LASP's states are small and combined on the host, so LASP keeps the MPI group.
  Communicator& activations = *group.device;
  const int H = static_cast<int>(m.n_head), D = static_cast<int>(m.n_embd / H);
  // Ring Attention keeps nothing between calls: its layers share one set of scratch buffers.
  const bool ring = methods.softmax == "ring" || methods.softmax == "usp";
  const auto ring_scratch = ring ? std::make_shared<RingCache>(env.backend) : nullptr;
  const int usp_degree = static_cast<int>(usp_ulysses_degree(degree, H, env.groups.ranks_per_node()));
  auto make_op = [&](const std::string& layer_method, AttentionType type) -> std::unique_ptr<AttentionOp> {
    if (layer_method == "ulysses") return make_ulysses_op(activations, env.backend, type, H, D);
    if (layer_method == "ring") return make_ring_op(activations, ring_scratch, type, H, D);
    if (layer_method == "usp") return make_usp_op(activations, env.backend, ring_scratch, H, D, usp_degree);
    return make_lasp_op(*group_, env.backend, layer_method == "lasp1" ? LaspVariant::lasp1 : LaspVariant::lasp2, H, D);
  };
  for (int l = 0; l < m.n_layer; ++l) {
    ops_.push_back(make_op(methods.of(m, l), m.linear_layer(l) ? AttentionType::linear : AttentionType::softmax));
    layer_ops_.push_back(ops_.back().get());
  }
  spdlog::info("{}: {} replica(s) x sequence-parallel groups of {} ranks; this rank's group: ranks {}", name(),
               layout_->replicas(), degree, group_->members());
  if (methods.softmax == "usp")
    spdlog::info("{}: USP in the softmax layers: Ulysses over {} ranks x Ring Attention over {} Ulysses groups", name(),
                 usp_degree, degree / usp_degree);
}

StaticSequenceParallel::~StaticSequenceParallel() = default;

// This rank's share of a global batch: its replica's share (contiguous sequences, token counts balanced across the
// replicas) cut into micro-batches, empty ones dropped; under sequence parallelism each micro-batch is then cut into
// the group's token slices. Every rank of a group gets the same micro-batches, so they run their ops together.
std::vector<GroupBatch> StaticSequenceParallel::local_micro_batches(const Batch& batch, int* most_passes) const {
  std::vector<std::vector<Batch>> replicas = layout_->replica_micro_batches(batch);
  if (most_passes) {
    *most_passes = 0;
    for (const std::vector<Batch>& replica : replicas)
      *most_passes = std::max(*most_passes, static_cast<int>(std::count_if(
                                                replica.begin(), replica.end(),
                                                [](const Batch& b) { return b.num_tokens() > 0; })));
  }
  std::vector<GroupBatch> out;
  for (Batch& micro : replicas[replica_])
    if (micro.num_tokens() > 0) out.push_back(group_batch(std::move(micro), group_, layer_ops_.data()));
  return out;
}

StepSums StaticSequenceParallel::train(GPT& model, const Batch& batch, float loss_weight) {
  int most_passes = 0;
  std::vector<GroupBatch> micro = local_micro_batches(batch, &most_passes);
  dp_.begin(most_passes);
  StepSums sums;
  for (std::size_t i = 0; i < micro.size(); ++i) {
    if (i + 1 == micro.size()) dp_.reduce_during_backward(model);  // earlier ones only accumulate
    const TokenBatch mb = micro[i].view();
    sums.loss_sum += model.forward_backward(mb, loss_weight);
    sums.tokens += static_cast<double>(mb.num_tokens);
    sums.flops += model.flops(mb);
  }
  if (micro.empty()) dp_.reduce_all(model);
  dp_.finish(model);
  double totals[3] = {sums.loss_sum, sums.tokens, sums.flops};  // one small allreduce for the three
  dp_.sum(totals, 3);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], totals[2]};
}

StepSums StaticSequenceParallel::evaluate(GPT& model, const Batch& batch) {
  double totals[2] = {0, 0};  // loss sum, tokens
  int most_passes = 0;
  std::vector<GroupBatch> micro = local_micro_batches(batch, &most_passes);  // as training cuts it: within capacity
  dp_.begin(most_passes, false);
  for (GroupBatch& local : micro) {
    const TokenBatch mb = local.view();
    totals[0] += model.forward_loss(mb);
    totals[1] += static_cast<double>(mb.num_tokens);
  }
  dp_.finish(model);
  dp_.sum(totals, 2);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], 0};
}

}  // namespace trident
