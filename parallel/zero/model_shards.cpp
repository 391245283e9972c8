#include "parallel/zero/model_shards.h"

#include <algorithm>
#include <chrono>

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
// bucket and at most the shard); at stage 3 then the weight shard, the outer weights and the two layer weight slots.
std::vector<int64_t> buffer_floats(const std::vector<std::pair<int64_t, int64_t>>& buckets, int64_t owned,
                                   bool weights) {
  const int64_t final_norm = buckets.front().second, embeddings = buckets.back().second;
  const int64_t widest = widest_layer(buckets);
  std::vector<int64_t> floats = {owned,  final_norm, embeddings, widest, widest, std::min(final_norm, owned),
                                 std::min(embeddings, owned), std::min(widest, owned), std::min(widest, owned)};
  if (weights) floats.insert(floats.end(), {owned, final_norm, embeddings, widest, widest});
  return floats;
}

// The part of [begin, begin + numel) each of `ranges` owns: its count, and where it starts in the bucket.
void parts(const std::vector<FlatRange>& ranges, int64_t begin, int64_t numel, std::vector<int64_t>& counts,
           std::vector<int64_t>& displs) {
  for (const FlatRange& r : ranges) {
    const int64_t from = std::max(begin, r.offset), to = std::min(begin + numel, r.offset + r.numel);
    counts.push_back(std::max<int64_t>(0, to - from));
    displs.push_back(to > from ? from - begin : 0);
  }
}

}  // namespace

int64_t ModelShards::memory_bytes(const ModelConfig& config, int64_t owned, bool weights, Precision precision) {
  const std::vector<std::pair<int64_t, int64_t>> buckets = gradient_buckets(model_layout(config));
  int64_t floats = 0;
  for (int64_t n : buffer_floats(buckets, owned, weights)) floats += n;
  int64_t bytes = 4 * floats;
  if (weights && precision == Precision::bf16)  // the bf16 copies of the gathered weights, whole floats each
    for (int64_t n : {buckets.front().second, buckets.back().second, widest_layer(buckets), widest_layer(buckets)})
      bytes += (2 * n + 3) / 4 * 4;
  return bytes;
}

ModelShards::ModelShards(GPT& model, Allocator& device, Communicator& group, std::vector<FlatRange> ranges,
                         Communicator* across, bool weights)
    : model_(model),
      group_(group),
      across_(across),
      rank_(group.rank()),
      ranges_(std::move(ranges)),
      buckets_(gradient_buckets(model.layout())),
      layers_(static_cast<int>(model.config().n_layer)),
      weights_sharded_(weights) {
  TRIDENT_CHECK(static_cast<int>(ranges_.size()) == group.size(), "{} ranges for a group of {} ranks", ranges_.size(),
                group.size());
  TRIDENT_CHECK(model.grads() == nullptr && !model.weights_on_host() && model.holds_weights() != weights,
                "a model whose states are sharded keeps no gradient buffer, and its weights unless they are sharded "
                "too (ModelMemory::in_source)");
  const std::vector<int64_t> floats = buffer_floats(buckets_, owned().numel, weights);
  Tensor* buffers[] = {&shard_,          &final_norm_,         &embeddings_,        &layer_slots_[0],
                       &layer_slots_[1], &received_[0],        &received_[1],       &received_[2],
                       &received_[3],    &weight_shard_,       &final_norm_weights_, &embedding_weights_,
                       &layer_weights_[0], &layer_weights_[1]};
  for (std::size_t i = 0; i < floats.size(); ++i) *buffers[i] = Tensor::zeros(device, {floats[i]});
  if (weights && model.precision() == Precision::bf16) {
    Tensor* copies[] = {&final_norm16_, &embeddings16_, &layers16_[0], &layers16_[1]};
    const Tensor* of[] = {&final_norm_weights_, &embedding_weights_, &layer_weights_[0], &layer_weights_[1]};
    for (int i = 0; i < 4; ++i) *copies[i] = Tensor::empty(device, {of[i]->numel()}, DType::bf16);
  }
}

ModelShards::~ModelShards() = default;

int ModelShards::slot_of(std::size_t bucket) const {
  if (bucket == 0) return 0;
  if (bucket == buckets_.size() - 1) return 1;
  return 2 + (layers_ - static_cast<int>(bucket)) % 2;
}

float* ModelShards::bucket_grads(std::size_t bucket) {
  if (bucket == 0) return final_norm_.data<float>();
  if (bucket == buckets_.size() - 1) return embeddings_.data<float>();
  return layer_slots_[(layers_ - static_cast<int>(bucket)) % 2].data<float>();
}

void ModelShards::reduce(std::size_t bucket) {
  const auto [begin, numel] = buckets_[bucket];
  std::vector<int64_t> counts, displs;  // the ranges are consecutive: the bucket's parts follow one another in rank order
  parts(ranges_, begin, numel, counts, displs);
  Pending& p = pending_[slot_of(bucket)];
  TRIDENT_CHECK(!p.request, "a gradient reduction's receive buffer is still in use");
  p.shard_at = std::max(begin, owned().offset) - owned().offset;
  p.numel = counts[static_cast<std::size_t>(rank_)];
  p.request = group_.ireduce_scatter_sum(bucket_grads(bucket), received_[slot_of(bucket)].data<float>(), counts,
                                         CommType::f32);
}

void ModelShards::wait(Request& request) {
  const auto start = std::chrono::steady_clock::now();
  request.wait();
  waited_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double ModelShards::take_wait_seconds() {
  const double waited = waited_s_;
  waited_s_ = 0;
  return waited;
}

void ModelShards::settle(int slot) {
  Pending& p = pending_[slot];
  if (!p.request) return;
  wait(*p.request);
  p.request.reset();
  if (p.numel > 0)
    model_.backend().add_rows(grads() + p.shard_at, p.numel, received_[slot].data<float>(), p.numel, 1, p.numel);
}

void ModelShards::zero(float* data, int64_t numel) {
  if (numel > 0) model_.backend().fill(data, numel, 0.0f);
}

void ModelShards::settle_all() {
  for (int slot = 0; slot < 4; ++slot) settle(slot);
}

RequestPtr ModelShards::gather(std::size_t bucket, float* to) {
  const auto [begin, numel] = buckets_[bucket];
  std::vector<int64_t> counts, displs;
  parts(ranges_, begin, numel, counts, displs);
  const int64_t mine = counts[static_cast<std::size_t>(rank_)];
  const float* from = weights() + (mine > 0 ? std::max(begin, owned().offset) - owned().offset : 0);
  return group_.iallgatherv(from, mine, to, counts, displs, CommType::f32);
}

void ModelShards::round(const Tensor& from, Tensor& to, int64_t numel) {
  if (to.defined() && numel > 0) model_.backend().convert(to.data<bf16>(), from.data<float>(), numel);
}

void ModelShards::fetch_layer(int l) {
  const int slot = l % 2;
  if (held_[slot] == l) return;
  TRIDENT_CHECK(!gathering_[slot], "layer {}'s weight slot is still being gathered into", l);
  held_[slot] = l;
  gathering_[slot] = gather(static_cast<std::size_t>(layers_ - l), layer_weights_[slot].data<float>());
}

void ModelShards::ready_layer(int l) {
  const int slot = l % 2;
  fetch_layer(l);
  if (!gathering_[slot]) return;
  wait(*gathering_[slot]);
  gathering_[slot].reset();
  round(layer_weights_[slot], layers16_[slot], buckets_[static_cast<std::size_t>(layers_ - l)].second);
}

void ModelShards::set_weights(const float* host_owned) {
  TRIDENT_CHECK(weights_sharded_, "the weights are not sharded");
  if (owned().numel > 0)
    model_.backend().upload(weights(), host_owned, sizeof(float) * static_cast<std::size_t>(owned().numel));
}

std::vector<float> ModelShards::weights_to_host() {
  TRIDENT_CHECK(weights_sharded_, "the weights are not sharded");
  std::vector<float> host(static_cast<std::size_t>(owned().numel));
  if (!host.empty()) model_.backend().download(host.data(), weights(), sizeof(float) * host.size());
  return host;
}

void ModelShards::begin_step(int passes, bool train) {
  TRIDENT_CHECK(!in_step_ && passes >= 0, "a step of {} passes begun inside another", passes);
  in_step_ = true;
  step_train_ = train;
  step_passes_ = passes;
  passes_run_ = 0;
}

void ModelShards::finish_step() {
  TRIDENT_CHECK(in_step_, "a step finished that did not begin");
  TRIDENT_CHECK(passes_run_ <= step_passes_, "this rank ran {} passes in a step said to have at most {}", passes_run_,
                step_passes_);
  while (passes_run_ < step_passes_) idle_pass(step_train_);
  in_step_ = false;
  if (!step_train_) return;
  settle_all();
  if (across_ && shard_.numel() > 0) across_->allreduce_sum(grads(), shard_.numel(), CommType::f32);
}

void ModelShards::skip_pass() {
  TRIDENT_CHECK(in_step_, "a pass skipped outside a step");
  idle_pass(step_train_);
}

void ModelShards::idle_pass(bool train) {
  begin_pass(train, 1);
  for (int l = 0; l < layers_; ++l) {
    acquire(l, false);
    release(l, false);
  }
  if (train)
    for (int l = layers_ - 1; l >= 0; --l) {
      acquire(l, true);
      release(l, true);
    }
  end_pass(train);
}

LayerSource::Outer ModelShards::begin_pass(bool train, int) {
  if (in_step_) {
    TRIDENT_CHECK(train == step_train_, "a {} pass inside a {} step", train ? "training" : "forward-only",
                  step_train_ ? "training" : "evaluation");
    ++passes_run_;
  }
  train_pass_ = train && in_step_;
  if (train) {
    settle(0);
    settle(1);
    zero(final_norm_.data<float>(), final_norm_.numel());
    zero(embeddings_.data<float>(), embeddings_.numel());
  }
  if (!weights_sharded_) {
    weights_ = model_.resident_weights();
  } else {  // the weights may have changed since the last pass: every window is gathered again
    TRIDENT_CHECK(!gathering_[0] && !gathering_[1], "a pass began with a weight gather in flight");
    held_[0] = held_[1] = -1;
    RequestPtr final_norm = gather(0, final_norm_weights_.data<float>());
    RequestPtr embeddings = gather(buckets_.size() - 1, embedding_weights_.data<float>());
    wait(*final_norm);
    wait(*embeddings);
    round(final_norm_weights_, final_norm16_, buckets_.front().second);
    round(embedding_weights_, embeddings16_, buckets_.back().second);
  }
  return {.embeddings = window(buckets_.size() - 1), .final_norm = window(0)};
}

ParamWindow ModelShards::window(std::size_t bucket) {
  const int64_t begin = buckets_[bucket].first;
  ParamWindow w{.begin = begin, .end = begin + buckets_[bucket].second, .grads = bucket_grads(bucket)};
  if (!weights_sharded_) {
    w.params = weights_.params + begin;
    w.params16 = weights_.params16 ? weights_.params16 + begin : nullptr;
  } else {
    const bool outer = bucket == 0 || bucket == buckets_.size() - 1;
    const int slot = (layers_ - static_cast<int>(bucket)) % 2;
    const Tensor& fp32 = bucket == 0 ? final_norm_weights_ : outer ? embedding_weights_ : layer_weights_[slot];
    const Tensor& copy = bucket == 0 ? final_norm16_ : outer ? embeddings16_ : layers16_[slot];
    w.params = fp32.data<float>();
    w.params16 = copy.defined() ? copy.data<bf16>() : nullptr;
  }
  return w;
}

ParamWindow ModelShards::acquire(int sub_model, bool backward) {
  const std::size_t bucket = static_cast<std::size_t>(layers_ - sub_model);
  if (backward) {
    if (sub_model == layers_ - 1 && train_pass_) reduce(0);  // the final norm's backward ran before the last layer's
    settle(slot_of(bucket));  // the slot's last reduction (two layers up) has read it
    zero(bucket_grads(bucket), buckets_[bucket].second);
  }
  if (weights_sharded_) {
    ready_layer(sub_model);
    const int next = backward ? sub_model - 1 : sub_model + 1;  // its slot holds a layer the pass is done with
    if (next >= 0 && next < layers_) fetch_layer(next);
  }
  return window(bucket);
}

void ModelShards::release(int sub_model, bool backward) {
  if (backward && train_pass_) reduce(static_cast<std::size_t>(layers_ - sub_model));
}

void ModelShards::end_pass(bool train) {
  if (train && train_pass_) reduce(buckets_.size() - 1);
  train_pass_ = false;
}

void ModelShards::grads_zeroed() {
  settle_all();
  zero(grads(), shard_.numel());
}

int64_t ModelShards::copy_activations(std::string label, std::vector<Copy>, bool) {
  throw_runtime_error("a model whose states are sharded does not offload activations ({})", label);
}

void ModelShards::wait_copies(int64_t) {}

}  // namespace trident
