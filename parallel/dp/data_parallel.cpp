#include "parallel/dp/data_parallel.h"

namespace trident {

void DataParallel::start(float* data, int64_t numel) {
  // MPI progresses non-blocking collectives inside MPI calls: testing the earlier buckets here moves them along
  // while this rank computes the next layer's backward.
  for (RequestPtr& r : pending_)
    if (r) r->test();
  pending_.push_back(gradients_.iallreduce_sum(data, numel, CommType::f32));
}

void DataParallel::begin(int passes, bool train) {
  if (shards_) shards_->begin_step(passes, train);
}

void DataParallel::skip_pass() {
  if (shards_) shards_->skip_pass();
}

void DataParallel::reduce_during_backward(GPT& model) {
  if (size() == 1 || shards_) return;
  float* grads = model.grads();
  model.set_grad_ready_hook([this, grads](int64_t offset, int64_t numel) { start(grads + offset, numel); });
}

void DataParallel::reduce_all(GPT& model) {
  if (size() == 1 || shards_) return;
  for (auto [offset, numel] : gradient_buckets(model.layout())) start(model.grads() + offset, numel);
}

void DataParallel::finish(GPT& model) {
  if (shards_) shards_->finish_step();
  model.set_grad_ready_hook({});
  wait_all(pending_);
  pending_.clear();
}

void DataParallel::sum(double* values, int n) {
  if (size() > 1) comm_.allreduce_sum(values, n, CommType::f64);
}

bool DataParallel::any(bool flag) {
  int32_t v = flag ? 1 : 0;
  if (size() > 1) comm_.allreduce_sum(&v, 1, CommType::i32);
  return v > 0;
}

}  // namespace trident
