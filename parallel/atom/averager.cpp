#include "parallel/atom/averager.h"

#include <chrono>
#include <exception>

#include "kernels/common/error.h"

namespace trident {

namespace {
// A bandwidth probe: 335 ms at 100 Mbit/s, 34 ms at 1 Gbit/s: long past a rate limiter's burst.
constexpr int64_t kProbeBytes = int64_t{4} << 20;
}  // namespace

ParameterAverager::ParameterAverager(Communicator& peers, int64_t num_params, int64_t every, int64_t max_staleness,
                                     OuterStep outer, double round_deadline_s, bool split_by_bandwidth)
    : peers_(peers), num_params_(num_params), every_(every), max_staleness_(max_staleness), outer_(outer) {
  TRIDENT_CHECK(every >= 1 && max_staleness >= 0, "averaging every {} steps, staleness {}: not a schedule", every,
                max_staleness);
  TRIDENT_CHECK(outer.lr > 0 && outer.momentum >= 0 && outer.momentum < 1, "outer step lr {}, momentum {}", outer.lr,
                outer.momentum);
  if (round_deadline_s > 0) {
    if (!mpi_thread_multiple())
      throw_config_error("parallel.atom.round_deadline_ms: rounds of the peers ready in time run on a thread of their "
                         "own, and this MPI does not grant MPI_THREAD_MULTIPLE");
    rounds_ = std::make_unique<RoundMaker>(*peers.split(0, peers.rank()), round_deadline_s);
    return;
  }
  // A communicator of the peers for the averaging thread alone (collective: every peer builds its averager).
  if (peers.size() == 1 || !mpi_thread_multiple()) return;
  background_ = peers.split(0, peers.rank());
  if (split_by_bandwidth) bandwidth_ = measure_peer_bandwidth(*background_, kProbeBytes);
  const std::vector<double> even(static_cast<std::size_t>(peers.size()), 1.0);
  butterfly_ = std::make_unique<ButterflyAllreduce>(
      *background_, butterfly_parts(bandwidth_.empty() ? even : bandwidth_, num_params + 1));
}

void ParameterAverager::begin(const float* params) {
  if (!outer_.diloco || !global_.empty()) return;
  global_.assign(params, params + num_params_);
  if (momentum_.empty()) momentum_.assign(static_cast<std::size_t>(num_params_), 0.0f);  // else a checkpoint's
}

StrategyTensors ParameterAverager::outer_state() const {
  if (!outer_.diloco || momentum_.empty()) return {};
  return {{"diloco.outer_momentum", momentum_}};
}

void ParameterAverager::restore_outer(const StrategyTensors& tensors) {
  const auto found = tensors.find("diloco.outer_momentum");
  if (!outer_.diloco || found == tensors.end()) return;
  if (found->second.size() != static_cast<std::size_t>(num_params_))
    throw_runtime_error("the checkpoint's DiLoCo outer momentum has {} values, the model {} parameters",
                        found->second.size(), num_params_);
  momentum_ = found->second;
}

ParameterAverager::~ParameterAverager() {
  // no collective left behind in flight
  if (pending_) pending_->wait();
  if (worker_.joinable()) worker_.join();
  if (submitted_ && std::uncaught_exceptions() == 0) rounds_->wait();
}

void ParameterAverager::start(const float* params) {
  offered_.assign(params, params + num_params_);
  sum_.resize(static_cast<std::size_t>(num_params_) + 1);
  const auto weight = static_cast<float>(tokens_since_);
  for (int64_t i = 0; i < num_params_; ++i) sum_[i] = weight * params[i];
  sum_.back() = weight;
  tokens_since_ = 0;
  started_at_ = steps_;
  if (rounds_) {
    rounds_->submit(sum_.data(), num_params_ + 1);
    submitted_ = true;
    return;
  }
  if (!background_) {
    pending_ = peers_.iallreduce_sum(sum_.data(), num_params_ + 1, CommType::f32);
    return;
  }
  worker_done_ = false;
  worker_ = std::thread([this] {
    butterfly_->sum(sum_.data());  // throws only on an MPI failure, which ends the job
    worker_done_ = true;
  });
}

bool ParameterAverager::done() {
  if (rounds_) return rounds_->done();
  return pending_ ? pending_->test() : worker_done_.load();
}

double ParameterAverager::finish(float* params) {
  const auto begin = std::chrono::steady_clock::now();
  if (pending_) pending_->wait();
  pending_.reset();
  if (worker_.joinable()) worker_.join();
  members_ = peers_.size();
  if (submitted_) members_ = rounds_->wait();
  submitted_ = false;
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (members_ == 0) return waited;  // a round that lost a member: dropped, this peer's parameters kept
  const double tokens = sum_.back();
  if (tokens <= 0) return waited;  // nobody trained on anything since the last round: nothing to average
  if (!outer_.diloco) {
    for (int64_t i = 0; i < num_params_; ++i)
      params[i] += static_cast<float>(static_cast<double>(sum_[i]) / tokens - static_cast<double>(offered_[i]));
    return waited;
  }
  TRIDENT_CHECK(!global_.empty(), "DiLoCo's round before begin()");
  const double lr = outer_.lr, mu = outer_.momentum;
  for (int64_t i = 0; i < num_params_; ++i) {
    const double d = static_cast<double>(global_[i]) - static_cast<double>(sum_[i]) / tokens;  // outer gradient
    const double m = mu * static_cast<double>(momentum_[i]) + d;
    momentum_[i] = static_cast<float>(m);
    global_[i] = static_cast<float>(static_cast<double>(global_[i]) - lr * (d + mu * m));
    params[i] += global_[i] - offered_[i];
  }
  return waited;
}

void ParameterAverager::settle(float* params) {
  if (in_flight()) finish(params);
}

void ParameterAverager::synchronize(float* params, float* m, float* v) {
  TRIDENT_CHECK(!rounds_, "rounds with a deadline do not synchronize every peer");
  if (synchronized_) return;  // no step since the last: the end of a run right after its last checkpoint
  settle(params);
  const int W = peers_.size();
  for (float* values : {params, m, v}) {
    peers_.allreduce_sum(values, num_params_, CommType::f32);
    for (int64_t i = 0; i < num_params_; ++i) values[i] /= static_cast<float>(W);
  }
  steps_ = 0;  // the schedule starts again, as it does for a run resumed from here
  tokens_since_ = 0;
  if (outer_.diloco) global_.assign(params, params + num_params_);
  synchronized_ = true;
}

AveragingStats ParameterAverager::after_update(float* params, double tokens) {
  synchronized_ = false;
  ++steps_;
  tokens_since_ += tokens;
  AveragingStats stats;
  auto apply = [&] {
    stats.staleness = steps_ - started_at_;
    stats.wait_s += finish(params);
    stats.applied = members_ > 0;
    stats.peers = members_;
  };
  // A pending round lands max_staleness steps after it started, or before the next one starts: at a step fixed by
  // the schedule, so a run is reproducible (and resumes bit for bit). Rounds with a deadline are not reproducible
  // anyway (who joins depends on timing): they land as soon as they are done.
  const bool starting = steps_ % every_ == 0;
  if (in_flight() && (starting || steps_ - started_at_ >= max_staleness_ || (rounds_ && done()))) apply();
  if (starting) {
    start(params);
    ++stats.started;
    if (butterfly_) stats.thread_bytes = butterfly_->bytes_sent();
    if (max_staleness_ == 0) apply();
  }
  stats.peers_alive = rounds_ ? rounds_->alive() : peers_.size();
  return stats;
}

}  // namespace trident
