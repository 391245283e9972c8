#include "parallel/zero/gradient_shards.h"

#include <algorithm>

#include "kernels/common/error.h"

namespace trident {

namespace {

int64_t widest_layer(const std::vector<std::pair<int64_t, int64_t>>& buckets) {
  int64_t widest = 0;
  for (std::size_t b = 1; b + 1 < buckets.size(); ++b) widest = std::max(widest, buckets[b].second);
  return widest;
}

// The floats of each buffer, in the order the constructor allocates them: the shard, the final norm's and the
// embeddings' windows, the two layer slots, the four receive buffers (this rank's part of a bucket is at most the
// bucket and at most the shard).
std::vector<int64_t> buffer_floats(const std::vector<std::pair<int64_t, int64_t>>& buckets, int64_t owned) {
  const int64_t final_norm = buckets.front().second, embeddings = buckets.back().second;
  const int64_t widest = widest_layer(buckets);
  return {owned,  final_norm, embeddings, widest, widest, std::min(final_norm, owned), std::min(embeddings, owned),
          std::min(widest, owned), std::min(widest, owned)};
}

}  // namespace

int64_t GradientShards::memory_bytes(const ModelConfig& config, int64_t owned) {
  int64_t floats = 0;
  for (int64_t n : buffer_floats(gradient_buckets(model_layout(config)), owned)) floats += n;
  return 4 * floats;
}

GradientShards::GradientShards(GPT& model, Allocator& device, Communicator& group, std::vector<FlatRange> ranges,
                               Communicator* across)
    : model_(model),
      group_(group),
      across_(across),
      rank_(group.rank()),
      ranges_(std::move(ranges)),
      buckets_(gradient_buckets(model.layout())),
      layers_(static_cast<int>(model.config().n_layer)) {
  TRIDENT_CHECK(static_cast<int>(ranges_.size()) == group.size(), "{} ranges for a group of {} ranks", ranges_.size(),
                group.size());
  TRIDENT_CHECK(model.grads() == nullptr && !model.weights_on_host(), "a model whose gradients are sharded keeps its "
                "weights and no gradient buffer (ModelMemory::grads_in_source)");
  const std::vector<int64_t> floats = buffer_floats(buckets_, owned().numel);
  Tensor* buffers[] = {&shard_,          &final_norm_,     &embeddings_,     &layer_slots_[0], &layer_slots_[1],
                       &received_[0],    &received_[1],    &received_[2],    &received_[3]};
  for (std::size_t i = 0; i < floats.size(); ++i) *buffers[i] = Tensor::zeros(device, {floats[i]});
}

GradientShards::~GradientShards() = default;

int GradientShards::slot_of(std::size_t bucket) const {
  if (bucket == 0) return 0;
  if (bucket == buckets_.size() - 1) return 1;
  return 2 + (layers_ - static_cast<int>(bucket)) % 2;
}

float* GradientShards::bucket_grads(std::size_t bucket) {
  if (bucket == 0) return final_norm_.data<float>();
  if (bucket == buckets_.size() - 1) return embeddings_.data<float>();
  return layer_slots_[(layers_ - static_cast<int>(bucket)) % 2].data<float>();
}

void GradientShards::reduce(std::size_t bucket) {
  const auto [begin, numel] = buckets_[bucket];
  std::vector<int64_t> counts;  // the ranges are consecutive: the bucket's parts follow one another in rank order
  for (const FlatRange& r : ranges_)
    counts.push_back(std::max<int64_t>(0, std::min(begin + numel, r.offset + r.numel) - std::max(begin, r.offset)));
  Pending& p = pending_[slot_of(bucket)];
  TRIDENT_CHECK(!p.request, "a gradient reduction's receive buffer is still in use");
  p.shard_at = std::max(begin, owned().offset) - owned().offset;
  p.numel = counts[static_cast<std::size_t>(rank_)];
  p.request = group_.ireduce_scatter_sum(bucket_grads(bucket), received_[slot_of(bucket)].data<float>(), counts,
                                         CommType::f32);
}

void GradientShards::settle(int slot) {
  Pending& p = pending_[slot];
  if (!p.request) return;
  p.request->wait();
  p.request.reset();
  if (p.numel > 0)
    model_.backend().add_rows(grads() + p.shard_at, p.numel, received_[slot].data<float>(), p.numel, 1, p.numel);
}

void GradientShards::zero(float* data, int64_t numel) {
  if (numel > 0) model_.backend().fill(data, numel, 0.0f);
}

void GradientShards::settle_all() {
  for (int slot = 0; slot < 4; ++slot) settle(slot);
}

void GradientShards::begin_step(int passes) {
  TRIDENT_CHECK(!in_step_ && passes >= 0, "a step of {} passes begun inside another", passes);
  in_step_ = true;
  step_passes_ = passes;
  passes_run_ = 0;
}

void GradientShards::finish_step() {
  TRIDENT_CHECK(in_step_, "a step finished that did not begin");
  TRIDENT_CHECK(passes_run_ <= step_passes_, "this rank ran {} training passes in a step said to have at most {}",
                passes_run_, step_passes_);
  for (; passes_run_ < step_passes_; ++passes_run_)
    for (std::size_t bucket = 0; bucket < buckets_.size(); ++bucket) {  // a pass's reductions, in its order
      settle(slot_of(bucket));
      zero(bucket_grads(bucket), buckets_[bucket].second);
      reduce(bucket);
    }
  settle_all();
  if (across_ && shard_.numel() > 0) across_->allreduce_sum(grads(), shard_.numel(), CommType::f32);
  in_step_ = false;
}

LayerSource::Outer GradientShards::begin_pass(bool train, int) {
  weights_ = model_.resident_weights();
  train_pass_ = train && in_step_;
  if (train_pass_) ++passes_run_;
  if (train) {
    settle(0);
    settle(1);
    zero(final_norm_.data<float>(), final_norm_.numel());
    zero(embeddings_.data<float>(), embeddings_.numel());
  }
  return {.embeddings = window(buckets_.size() - 1), .final_norm = window(0)};
}

ParamWindow GradientShards::window(std::size_t bucket) {
  const int64_t begin = buckets_[bucket].first;
  return {.begin = begin,
          .end = begin + buckets_[bucket].second,
          .params = weights_.params + begin,
          .params16 = weights_.params16 ? weights_.params16 + begin : nullptr,
          .grads = bucket_grads(bucket)};
}

ParamWindow GradientShards::acquire(int sub_model, bool backward) {
  const std::size_t bucket = static_cast<std::size_t>(layers_ - sub_model);
  if (backward) {
    if (sub_model == layers_ - 1 && train_pass_) reduce(0);  // the final norm's backward ran before the last layer's
    settle(slot_of(bucket));  // the slot's last reduction (two layers up) has read it
    zero(bucket_grads(bucket), buckets_[bucket].second);
  }
  return window(bucket);
}

void GradientShards::release(int sub_model, bool backward) {
  if (backward && train_pass_) reduce(static_cast<std::size_t>(layers_ - sub_model));
}

void GradientShards::end_pass(bool train) {
  if (train && train_pass_) reduce(buckets_.size() - 1);
  train_pass_ = false;
}

void GradientShards::grads_zeroed() {
  settle_all();
  zero(grads(), shard_.numel());
}

int64_t GradientShards::copy_activations(std::string label, std::vector<Copy>, bool) {
  throw_runtime_error("a model whose gradients are sharded does not offload activations ({})", label);
}

void GradientShards::wait_copies(int64_t) {}

}  // namespace trident
