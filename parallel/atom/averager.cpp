#include "parallel/atom/averager.h"

#include <chrono>

#include "kernels/common/error.h"

namespace trident {

ParameterAverager::ParameterAverager(Communicator& peers, int64_t num_params, int64_t every, int64_t max_staleness)
    : peers_(peers), num_params_(num_params), every_(every), max_staleness_(max_staleness) {
  TRIDENT_CHECK(every >= 1 && max_staleness >= 0, "averaging every {} steps, staleness {}: not a schedule", every,
                max_staleness);
}

ParameterAverager::~ParameterAverager() {
  if (pending_) pending_->wait();  // no collective left behind in flight
}

void ParameterAverager::start(const float* params) {
  offered_.assign(params, params + num_params_);
  sum_.resize(static_cast<std::size_t>(num_params_) + 1);
  for (int64_t i = 0; i < num_params_; ++i) sum_[i] = tokens_since_ * static_cast<double>(params[i]);
  sum_.back() = tokens_since_;
  tokens_since_ = 0;
  started_at_ = steps_;
  pending_ = peers_.iallreduce_sum(sum_.data(), num_params_ + 1, CommType::f64);
}

double ParameterAverager::finish(float* params) {
  const auto begin = std::chrono::steady_clock::now();
  pending_->wait();
  pending_.reset();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const double tokens = sum_.back();
  if (tokens <= 0) return waited;  // nobody trained on anything since the last round: nothing to average
  for (int64_t i = 0; i < num_params_; ++i)
    params[i] += static_cast<float>(sum_[i] / tokens - static_cast<double>(offered_[i]));
  return waited;
}

void ParameterAverager::settle(float* params) {
  if (pending_) finish(params);
}

AveragingStats ParameterAverager::after_update(float* params, double tokens) {
  ++steps_;
  tokens_since_ += tokens;
  AveragingStats stats;
  auto apply = [&] {
    stats.staleness = steps_ - started_at_;
    stats.wait_s += finish(params);
    stats.applied = true;
  };
  // A pending round lands when it is done, when it reaches max_staleness, or before the next one starts.
  const bool starting = steps_ % every_ == 0;
  if (pending_ && (starting || steps_ - started_at_ >= max_staleness_ || pending_->test())) apply();
  if (starting) {
    start(params);
    ++stats.started;
    if (max_staleness_ == 0) apply();
  }
  return stats;
}

}  // namespace trident
