#include "parallel/pipeline/strategy.h"

#include <algorithm>

#include "kernels/common/error.h"
#include "parallel/static_sp/group_batch.h"
#include "parallel/zero/sharding.h"

namespace trident {

namespace {

constexpr int kForwardTag = 21;   // a stage's output, to the next stage
constexpr int kBackwardTag = 22;  // the gradient at a stage's input, to the previous stage
constexpr int kSettleTag = 23;    // a stage's parameters, to rank 0

// MPI moves a non-blocking send inside MPI calls: asking after the pending ones lets them progress between
// micro-batches.
void progress(std::vector<RequestPtr>& sends) {
  for (RequestPtr& r : sends)
    if (r) r->test();
}

}  // namespace

PipelineStrategy::PipelineStrategy(const StrategyEnv& env)
    : world_(env.groups.world()),
      config_(env.config),
      stage_(world_.rank()),
      stages_(world_.size()),
      candidate_(env.config, stages_, env.capacity_tokens) {
  check_pipeline(env.config, stages_);
  layers_ = pipeline_stage(env.config.model, stages_, stage_);
  const ModelLayout layout = model_layout(env.config.model);
  updates_ = stage_updates(layout, layers_);
  owns_ = stage_owns(layout, layers_);
  const Precision precision = precision_named(env.config.train.precision);
  value_type_ = precision == Precision::bf16 ? CommType::bf16 : CommType::f32;
  value_bytes_ = activation_value_bytes(precision);
}

void PipelineStrategy::check_model(const GPT& model) const {
  TRIDENT_CHECK(model.activation_layers() >= layers_.layers(), "pipeline stage {} computes layers [{}, {}); its model "
                "holds the activations of {} layers", stage_, layers_.first_layer, layers_.end_layer,
                model.activation_layers());
}

StepSums PipelineStrategy::train(GPT& model, const Batch& batch, float loss_weight) {
  check_model(model);  // before any message: every stage stops here together
  std::vector<GroupBatch> micro;
  for (Batch& b : candidate_.micro_batches(batch)) micro.push_back(group_batch(std::move(b), nullptr, nullptr));
  const std::size_t M = micro.size();
  const int64_t C = config_.model.n_embd;
  auto bytes = [&](std::size_t m) { return static_cast<std::size_t>(micro[m].tokens.num_tokens() * C * value_bytes_); };
  for (auto* buffers : {&inputs_, &outputs_, &grads_in_, &grads_out_}) buffers->resize(M);
  const bool first = stage_ == 0, last = stage_ == stages_ - 1;
  double totals[3] = {0, 0, 0};  // the last stage's loss sum, tokens and flops
  std::vector<RequestPtr> sends;
  auto receive = [&](std::vector<std::vector<std::byte>>& into, std::size_t m, int peer, int tag) {
    into[m].resize(bytes(m));
    world_.recv(into[m].data(), micro[m].tokens.num_tokens() * C, value_type_, peer, tag);
  };
  auto send = [&](std::vector<std::byte>& from, std::size_t m, int peer, int tag) {
    sends.push_back(world_.isend(from.data(), micro[m].tokens.num_tokens() * C, value_type_, peer, tag));
    progress(sends);
  };
  // forward and backward of micro-batch m on this stage, its input and the gradient at its output in hand
  auto forward_backward = [&](std::size_t m) {
    grads_out_[m].resize(bytes(m));
    const StageIO io{.input = first ? nullptr : inputs_[m].data(),
                     .output_grad = last ? nullptr : grads_in_[m].data(),
                     .input_grad = first ? nullptr : grads_out_[m].data()};
    const TokenBatch view = micro[m].view();
    const double loss = stage_pass(model, layers_, view, true, loss_weight, io);
    if (last) {
      totals[0] += loss;
      totals[1] += static_cast<double>(view.num_tokens);
      totals[2] += model.flops(view);
    }
    if (!first) send(grads_out_[m], m, stage_ - 1, kBackwardTag);
  };
  if (last) {
    for (std::size_t m = 0; m < M; ++m) {
      if (!first) receive(inputs_, m, stage_ - 1, kForwardTag);
      forward_backward(m);
    }
  } else {
    for (std::size_t m = 0; m < M; ++m) {
      if (!first) receive(inputs_, m, stage_ - 1, kForwardTag);
      outputs_[m].resize(bytes(m));
      const StageIO io{.input = first ? nullptr : inputs_[m].data(), .output = outputs_[m].data()};
      stage_pass(model, layers_, micro[m].view(), false, 0.0f, io);
      send(outputs_[m], m, stage_ + 1, kForwardTag);
    }
    for (std::size_t m = 0; m < M; ++m) {
      receive(grads_in_, m, stage_ + 1, kBackwardTag);
      forward_backward(m);
    }
  }
  wait_all(sends);
  sum_tied_embedding(model);
  world_.allreduce_sum(totals, 3, CommType::f64);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], totals[2]};
}

StepSums PipelineStrategy::evaluate(GPT& model, const Batch& batch) {
  check_model(model);
  const int64_t C = config_.model.n_embd;
  const bool first = stage_ == 0, last = stage_ == stages_ - 1;
  std::vector<Batch> parts = candidate_.micro_batches(batch);
  inputs_.resize(parts.size());
  outputs_.resize(parts.size());
  double totals[2] = {0, 0};  // the last stage's loss sum and tokens
  std::vector<RequestPtr> sends;
  for (std::size_t m = 0; m < parts.size(); ++m) {
    GroupBatch micro = group_batch(std::move(parts[m]), nullptr, nullptr);
    const TokenBatch view = micro.view();
    const int64_t values = view.num_tokens * C;
    const auto bytes = static_cast<std::size_t>(values * value_bytes_);
    if (!first) {
      inputs_[m].resize(bytes);
      world_.recv(inputs_[m].data(), values, value_type_, stage_ - 1, kForwardTag);
    }
    if (!last) outputs_[m].resize(bytes);
    const StageIO io{.input = first ? nullptr : inputs_[m].data(), .output = last ? nullptr : outputs_[m].data()};
    const double loss = stage_pass(model, layers_, view, false, 0.0f, io);
    if (last) {
      totals[0] += loss;
      totals[1] += static_cast<double>(view.num_tokens);
    } else {
      sends.push_back(world_.isend(outputs_[m].data(), values, value_type_, stage_ + 1, kForwardTag));
      progress(sends);
    }
  }
  wait_all(sends);
  world_.allreduce_sum(totals, 2, CommType::f64);
  return {totals[0], static_cast<double>(batch.num_targets()), totals[1], 0};
}

void PipelineStrategy::sum_tied_embedding(GPT& model) {
  const bool first = stage_ == 0, last = stage_ == stages_ - 1;
  if (stages_ == 1 || !(first || last)) return;
  const ModelLayout& layout = model.layout();
  const int64_t n = layout.params.front().numel;  // wte
  float* grad = model.grads() + layout.wte;
  std::vector<float> theirs(static_cast<std::size_t>(n));
  const int peer = first ? stages_ - 1 : 0;
  world_.isendrecv(grad, n, peer, theirs.data(), n, peer, CommType::f32, kBackwardTag)->wait();
  model.store_backend().residual_forward(grad, grad, theirs.data(), n);  // a + b = b + a: the same on both
}

double PipelineStrategy::squared_grad_norm(const GPT& model) {
  double sum = 0;
  for (const auto& [offset, numel] : owns_) sum += model.store_backend().squared_norm(model.grads() + offset, numel);
  world_.allreduce_sum(&sum, 1, CommType::f64);
  return sum;
}

void PipelineStrategy::after_update(GPT& model) {
  (void)model;
  stale_ = stages_ > 1;
}

void PipelineStrategy::settle(GPT& model, AdamW&) {
  if (!stale_) return;
  const ModelLayout& layout = model.layout();
  for (int s = 1; s < stages_; ++s) {
    if (stage_ != 0 && stage_ != s) continue;
    for (const auto& [offset, numel] : stage_owns(layout, pipeline_stage(config_.model, stages_, s))) {
      if (stage_ == s)
        world_.send(model.params() + offset, numel, CommType::f32, 0, kSettleTag);
      else
        world_.recv(model.params() + offset, numel, CommType::f32, s, kSettleTag);
    }
  }
  stale_ = false;
}

std::vector<OptimizerShard> PipelineStrategy::write_optimizer_shards(const AdamW& optimizer,
                                                                     const std::filesystem::path& run_dir,
                                                                     int64_t step) {
  if (stages_ == 1) return {};
  const ModelLayout layout = model_layout(config_.model);
  std::vector<FlatRange> ranges;
  for (int s = 0; s < stages_; ++s) {
    const ParamRanges owns = stage_owns(layout, pipeline_stage(config_.model, stages_, s));
    TRIDENT_CHECK(owns.size() == 1, "pipeline stage {} owns {} ranges of the parameters, not one", s, owns.size());
    ranges.push_back({owns.front().first, owns.front().second});
  }
  return write_sharded_optimizer(world_, run_dir, step, optimizer, ranges);
}

}  // namespace trident
