#include "parallel/atom/strategy.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "parallel/atom/config.h"
#include "parallel/atom/swapped_model.h"
#include "parallel/static_sp/group_batch.h"

namespace trident {

namespace {

void log_butterfly(const ParameterAverager& averager) {
  const std::vector<int64_t>& parts = averager.butterfly()->parts();
  const double total = static_cast<double>(std::reduce(parts.begin(), parts.end()));
  std::string split;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    split += fmt::format("{}rank {} {:.1f}%", r ? ", " : "", r, 100.0 * static_cast<double>(parts[r]) / total);
    if (!averager.bandwidth().empty()) split += fmt::format(" ({:.3g} GB/s)", averager.bandwidth()[r] / 1e9);
  }
  spdlog::info("atom: averaging rounds are butterfly all-reduces, parts {}: {}",
               averager.bandwidth().empty() ? "even" : "by measured bandwidth", split);
}

// The swapper of a swapped model (the placement's run, parallel/atom/swapped_model.h); none for a resident one.
LayerSwapper* swapper_of(PlacedRun* placed) {
  auto* swapped = dynamic_cast<SwappedRun*>(placed);
  return swapped ? &swapped->swapper : nullptr;
}

}  // namespace

AtomStrategy::AtomStrategy(const StrategyEnv& env)
    : swapper_(swapper_of(env.placed)),
      // A swapped model's gradients live in the host store (page-locked on cuda): summed over MPI, not NCCL.
      peers_(env.groups.world(), swapper_ ? env.groups.world() : env.groups.gradients()),
      micro_batches_(env.config.train.micro_batches),
      capacity_(env.capacity_tokens) {
  const AtomConfig& p = atom_config(env.config);
  if (p.emulate_slow_rank >= peers_.size())
    throw_config_error("parallel.atom.emulate_slow_rank = {} is not a rank of this {}-rank run",
                       p.emulate_slow_rank, peers_.size());
  const bool diloco = p.averaging == "diloco";  // its outer step means something on one peer too
  if (p.average_every > 0 && (peers_.size() > 1 || diloco))
    averager_ = std::make_unique<ParameterAverager>(
        env.groups.world(), model_layout(env.config.model).num_params, p.average_every, p.max_staleness,
        OuterStep{.diloco = diloco, .lr = p.outer_lr, .momentum = p.outer_momentum},
        p.round_deadline_ms / 1e3, p.average_split == "bandwidth");
  if (averager_ && averager_->butterfly()) log_butterfly(*averager_);
  if (p.emulate_slow_rank == peers_.rank()) slowdown_ = p.emulate_slowdown;
  independent_ = averager_ && p.round_deadline_ms > 0;
  if (swapper_)
    recomputed_share_ =
        static_cast<double>(swapper_->runner().recomputed_layers()) / static_cast<double>(env.config.model.n_layer);
  every_ = averager_ ? p.average_every : 0;
}

std::vector<Batch> AtomStrategy::my_passes(const Batch& batch) const {
  const int parts = static_cast<int>(micro_batches_);
  if (peers_.size() == 1) return split_within(batch, parts, capacity_);
  return split_within(split_micro_batches(batch, peers_.size())[static_cast<std::size_t>(peers_.rank())], parts,
                      capacity_);
}

Feasibility AtomStrategy::feasible(const Batch& batch) const {
  if (const int64_t n = batch.longest_sequence(); n > capacity_)
    return {false, fmt::format("atom: a document of {} tokens is longer than the {} tokens a pass holds", n,
                               capacity_)};
  return {};
}

cost::StepEstimate AtomStrategy::estimate(const Batch& batch, const cost::StepCostModel& cost) const {
  cost::StepEstimate e;
  for (const Batch& pass : my_passes(batch))
    e.compute_s += cost.compute_s(pass.sequence_lengths(), 1);
  e.compute_s *= 1 + recomputed_share_ / 3;
  const double param_bytes = 4.0 * static_cast<double>(cost.run().num_params);
  if (every_ > 0) {  // a round's allreduce of the parameters every `every_` steps, as if not hidden
    e.comm_s = cost.allreduce_s(param_bytes) / static_cast<double>(every_);
    e.comm_bytes = static_cast<int64_t>(param_bytes / static_cast<double>(every_));
  } else if (peers_.size() > 1) {  // exact: the gradients summed every step, as data parallelism does
    e.comm_s = cost.gradient_allreduce_s();
    e.comm_bytes = static_cast<int64_t>(cost.gradient_bytes());
  }
  e.seconds = e.compute_s + e.comm_s;
  return e;
}

StepSums AtomStrategy::train(GPT& model, const Batch& batch, float loss_weight) {
  if (swapper_) swapper_->take_stats();  // what evaluation or an earlier step moved is not this step's
  std::vector<Batch> mine = my_passes(batch);
  const int64_t targets = my_targets(mine);
  if (averager_) {  // each peer's own mean gradient
    averager_->begin(model.params());
    loss_weight = targets > 0 ? 1.0f / static_cast<float>(targets) : 0.0f;
  }
  double totals[3] = {0, 0, 0};  // loss sum, tokens, flops
  const auto begin = std::chrono::steady_clock::now();
  std::vector<GroupBatch> passes;
  for (Batch& pass : mine) passes.push_back(group_batch(std::move(pass), nullptr, nullptr));
  // A swapped model runs the passes in rounds of at most round_tokens() tokens, each sub-model by sub-model (0: one
  // call, pass by pass).
  const int64_t round = swapper_ ? swapper_->runner().round_tokens() : 0;
  std::vector<TokenBatch> views;  // into `passes`, which no longer move
  int64_t in_round = 0;
  for (GroupBatch& pass : passes) {
    const TokenBatch view = pass.view();
    if (round > 0 && !views.empty() && in_round + view.num_tokens > round) {
      totals[0] += model.forward_backward(views, loss_weight);
      views.clear();
      in_round = 0;
    }
    views.push_back(view);
    in_round += view.num_tokens;
    totals[1] += static_cast<double>(view.num_tokens);
    totals[2] += model.flops(view);
  }
  totals[0] += model.forward_backward(views, loss_weight);
  if (slowdown_ > 1)  // an emulated slow peer (parallel.atom.emulate_slow_rank)
    std::this_thread::sleep_for((slowdown_ - 1) * (std::chrono::steady_clock::now() - begin));
  tokens_ = totals[1];
  report_.swap.reset();
  report_.averaging.reset();
  if (swapper_) report_.swap = swapper_->take_stats();
  if (independent_) return {totals[0], static_cast<double>(targets), totals[1], totals[2]};
  if (!averager_) {  // exact: the whole batch's gradient on every peer
    peers_.reduce_all(model);
    peers_.finish(model);
  }
  peers_.sum(totals, 3);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], totals[2]};
}

StepSums AtomStrategy::evaluate(GPT& model, const Batch& batch) {
  double totals[2] = {0, 0};  // loss sum, tokens
  std::vector<Batch> mine = my_passes(batch);
  const int64_t targets = my_targets(mine);
  for (Batch& pass : mine) {
    GroupBatch whole = group_batch(std::move(pass), nullptr, nullptr);
    const TokenBatch view = whole.view();
    totals[0] += model.forward_loss(view);
    totals[1] += static_cast<double>(view.num_tokens);
  }
  if (independent_) return {totals[0], static_cast<double>(targets), totals[1], 0};
  peers_.sum(totals, 2);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], 0};
}

void AtomStrategy::after_update(GPT& model) {
  if (averager_) report_.averaging = averager_->after_update(model.params(), tokens_);
}

void AtomStrategy::settle(GPT& model, AdamW& optimizer) {
  if (!averager_) return;
  if (independent_) averager_->settle(model.params());  // a checkpoint is rank 0's replica
  else averager_->synchronize(model.params(), optimizer.m(), optimizer.v());
}

void AtomStrategy::add_step_metrics(nlohmann::ordered_json& record) const {
  if (const std::optional<SwapStats>& swap = report_.swap) {
    record["sub_models"] = swap->sub_models;
    record["passes"] = swap->passes;  // the step's batch in passes of what the activations hold
    record["h2d_bytes"] = swap->h2d_bytes;
    record["d2h_bytes"] = swap->d2h_bytes;
    record["activation_bytes"] = swap->activation_bytes;  // of those, offloaded activations both ways
    record["copy_ms"] = swap->copy_s * 1e3;               // the copy engine busy
    record["copy_cpu_ms"] = swap->copy_cpu_s * 1e3;       // its thread's CPU time (the CPU backend's memcpy)
    record["exposed_copy_ms"] = swap->exposed_s * 1e3;    // the compute waiting for it
  }
  if (const std::optional<AveragingStats>& avg = report_.averaging) {
    record["comm_bytes"] = record.value("comm_bytes", int64_t{0}) + avg->thread_bytes;  // not in the run's counters
    record["average_started"] = avg->started > 0;  // this step's parameters offered to a round
    record["average_applied"] = avg->applied;
    record["staleness"] = avg->applied ? nlohmann::ordered_json(avg->staleness) : nullptr;  // steps in flight
    record["average_peers"] = avg->applied ? nlohmann::ordered_json(avg->peers) : nullptr;  // the round's peers
    record["average_wait_ms"] = avg->wait_s * 1e3;
    record["peers_alive"] = avg->peers_alive;
  }
}

bool AtomStrategy::on_every_rank(bool flag) {
  if (independent_ || !averager_) return flag;
  return !peers_.any(!flag);
}

int64_t AtomStrategy::my_targets(const std::vector<Batch>& passes) {
  int64_t targets = 0;
  for (const Batch& pass : passes) targets += pass.num_targets();
  return targets;
}

}  // namespace trident
