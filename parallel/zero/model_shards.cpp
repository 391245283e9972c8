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

// The floats of each buffer, in the order the constructor allocates them: the shard, the four windows' gradients (the
// final norm's, the embeddings', two layers'), their receive buffers (this rank's part of a bucket is at most the
// bucket and at most the shard); at stage 3 then the weight shard and the four windows' weights.
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
  std::vector<Tensor*> buffers = {&shard_};
  for (Window& w : windows_) buffers.push_back(&w.grads);
  for (Window& w : windows_) buffers.push_back(&w.received);
  buffers.push_back(&weight_shard_);
  for (Window& w : windows_) buffers.push_back(&w.weights);
  for (std::size_t i = 0; i < floats.size(); ++i) *buffers[i] = Tensor::zeros(device, {floats[i]});
  if (weights && model.precision() == Precision::bf16)
    for (Window& w : windows_) w.weights16 = Tensor::empty(device, {w.weights.numel()}, DType::bf16);
}

ModelShards::~ModelShards() = default;

int ModelShards::window_of(std::size_t bucket) const {
  if (bucket == 0) return 0;
  if (bucket == buckets_.size() - 1) return 1;
  return 2 + (layers_ - static_cast<int>(bucket)) % 2;
}

void ModelShards::reduce(std::size_t bucket) {
  const auto [begin, numel] = buckets_[bucket];
  std::vector<int64_t> counts, displs;  // the ranges are consecutive: the bucket's parts follow one another in rank order
  parts(ranges_, begin, numel, counts, displs);
  Window& w = window_for(bucket);
  Pending& p = w.reduction;
  TRIDENT_CHECK(!p.request, "a gradient reduction's receive buffer is still in use");
  p.shard_at = std::max(begin, owned().offset) - owned().offset;
  p.numel = counts[static_cast<std::size_t>(rank_)];
  p.request = group_.ireduce_scatter_sum(w.grads.data<float>(), w.received.data<float>(), counts, CommType::f32);
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

void ModelShards::settle(Window& w) {
  Pending& p = w.reduction;
  if (!p.request) return;
  wait(*p.request);
  p.request.reset();
  if (p.numel > 0)
    model_.backend().add_rows(grads() + p.shard_at, p.numel, w.received.data<float>(), p.numel, 1, p.numel);
}

void ModelShards::zero(float* data, int64_t numel) {
  if (numel > 0) model_.backend().fill(data, numel, 0.0f);
}

void ModelShards::settle_all() {
  for (Window& w : windows_) settle(w);
}

RequestPtr ModelShards::gather(std::size_t bucket, float* to) {
  const auto [begin, numel] = buckets_[bucket];
  std::vector<int64_t> counts, displs;
  parts(ranges_, begin, numel, counts, displs);
  const int64_t mine = counts[static_cast<std::size_t>(rank_)];
  const float* from = weights() + (mine > 0 ? std::max(begin, owned().offset) - owned().offset : 0);
  return group_.iallgatherv(from, mine, to, counts, displs, CommType::f32);
}

void ModelShards::round(Window& w, int64_t numel) {
  if (w.weights16.defined() && numel > 0)
    model_.backend().convert(w.weights16.data<bf16>(), w.weights.data<float>(), numel);
}

void ModelShards::fetch_layer(int l) {
  const auto bucket = static_cast<std::size_t>(layers_ - l);
  Window& w = window_for(bucket);
  if (w.layer == l) return;
  TRIDENT_CHECK(!w.gathering, "layer {}'s weight window is still being gathered into", l);
  w.layer = l;
  w.gathering = gather(bucket, w.weights.data<float>());
}

void ModelShards::ready_layer(int l) {
  const auto bucket = static_cast<std::size_t>(layers_ - l);
  Window& w = window_for(bucket);
  fetch_layer(l);
  if (!w.gathering) return;
  wait(*w.gathering);
  w.gathering.reset();
  round(w, buckets_[bucket].second);
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
  const std::size_t final_norm = 0, embeddings = buckets_.size() - 1;
  if (train)
    for (std::size_t outer : {final_norm, embeddings}) {
      Window& w = window_for(outer);
      settle(w);
      zero(w.grads.data<float>(), w.grads.numel());
    }
  if (!weights_sharded_) {
    weights_ = model_.resident_weights();
  } else {  // the weights may have changed since the last pass: every window is gathered again
    for (Window& w : windows_) {
      TRIDENT_CHECK(!w.gathering, "a pass began with a weight gather in flight");
      w.layer = -1;
    }
    for (std::size_t outer : {final_norm, embeddings})
      window_for(outer).gathering = gather(outer, window_for(outer).weights.data<float>());
    for (std::size_t outer : {final_norm, embeddings}) {
      Window& w = window_for(outer);
      wait(*w.gathering);
      w.gathering.reset();
      round(w, buckets_[outer].second);
    }
  }
  return {.embeddings = window(buckets_.size() - 1), .final_norm = window(0)};
}

ParamWindow ModelShards::window(std::size_t bucket) {
  const int64_t begin = buckets_[bucket].first;
  Window& held = window_for(bucket);
  ParamWindow w{.begin = begin, .end = begin + buckets_[bucket].second, .grads = held.grads.data<float>()};
  if (!weights_sharded_) {
    w.params = weights_.params + begin;
    w.params16 = weights_.params16 ? weights_.params16 + begin : nullptr;
  } else {
    w.params = held.weights.data<float>();
    w.params16 = held.weights16.defined() ? held.weights16.data<bf16>() : nullptr;
  }
  return w;
}

ParamWindow ModelShards::acquire(int sub_model, bool backward) {
  const std::size_t bucket = static_cast<std::size_t>(layers_ - sub_model);
  if (backward) {
    if (sub_model == layers_ - 1 && train_pass_) reduce(0);  // the final norm's backward ran before the last layer's
    settle(window_for(bucket));  // the window's last reduction (two layers up) has read it
    zero(window_for(bucket).grads.data<float>(), buckets_[bucket].second);
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
