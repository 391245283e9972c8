#include "parallel/static_sp/candidate.h"

#include <algorithm>
#include <numeric>
#include <span>

#include <fmt/core.h>

#include "core/model/recompute.h"
#include "parallel/placement/run_shape.h"
#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/sp/model_op.h"

namespace trident {

LayerMethods layer_methods(const std::string& method) {
  const std::size_t plus = method.find('+');
  if (plus == std::string::npos) return {method, method};
  return {method.substr(0, plus), method.substr(plus + 1)};
}

namespace {

bool is_lasp(const std::string& method) { return method == "lasp" || method == "lasp1" || method == "lasp2"; }

// `method` on the softmax layers of a hybrid, which parallel.sp.softmax_method names.
void check_hybrid_softmax_method(const ModelConfig& m, const std::string& method, int degree) {
  if (method != "ulysses" && method != "ring" && method != "usp")
    throw_config_error("parallel.sp.softmax_method: '{}': a hybrid's softmax layers run ulysses, ring or usp",
                       method);
  if (method == "ulysses" && m.n_head % degree != 0)
    throw_config_error("parallel.sp.softmax_method: 'ulysses' splits the heads over the group, but model.n_head = {} "
                       "does not divide by parallel.sp.size = {} (parallel.sp.softmax_method: ring or usp takes any "
                       "size)",
                       m.n_head, degree);
}

}  // namespace

void check_static_candidate(const ModelConfig& m, const std::string& method, int degree, int world) {
  if (degree < 1) throw_config_error("parallel.sp.size = {}: a group has at least one rank", degree);
  const LayerMethods methods = layer_methods(method);
  if (methods.linear != methods.softmax) {  // a hybrid's pair: LASP on the linear layers
    if (m.attention != "hybrid")
      throw_config_error("parallel.sp.softmax_method: a method for softmax layers beside LASP's is for a hybrid "
                         "model (model.attention: hybrid), but model.attention is '{}'",
                         m.attention);
    if (!is_lasp(methods.linear))
      throw_config_error("parallel.sp.method: '{}' on a hybrid's linear layers beside '{}' on its softmax layers: "
                         "only LASP is paired with another method (or parallel.sp.method: ulysses for every layer)",
                         methods.linear, methods.softmax);
    check_hybrid_softmax_method(m, methods.softmax, degree);
  }
  const bool lasp = is_lasp(methods.linear) && methods.linear == methods.softmax;
  if (lasp && m.attention != "linear")
    throw_config_error("parallel.strategy: 'lasp' with parallel.sp.method: 'lasp' parallelises linear attention, "
                       "but model.attention is '{}' (use model.attention: linear, parallel.sp.method: ulysses or "
                       "ring, or parallel.strategy: auto)",
                       m.attention);
  if ((method == "ring" || method == "usp") && m.attention != "softmax")
    throw_config_error("parallel.sp.method: '{}': {} here is softmax-only, but model.attention is '{}' (use "
                       "parallel.sp.method: lasp or ulysses{})",
                       method, method == "ring" ? "Ring Attention" : "USP", m.attention,
                       m.attention == "hybrid" ? fmt::format("; parallel.sp.softmax_method: {} runs it on a hybrid's "
                                                             "softmax layers beside LASP", method)
                                               : "");
  if (method == "ulysses" && m.n_head % degree != 0)
    throw_config_error("parallel.sp.method: 'ulysses' splits the heads over the group, but model.n_head = {} "
                       "does not divide by parallel.sp.size = {}",
                       m.n_head, degree);
  if (method == "dp" && degree != 1)
    throw_config_error("parallel.strategy: 'dp' has groups of one rank, not parallel.sp.size = {}", degree);
  if (world % degree != 0)
    throw_config_error("parallel.sp.size = {} does not divide the {} ranks of this run", degree, world);
}

StaticCandidate::StaticCandidate(const Config& config, const std::string& method, int degree, int world,
                                 int64_t capacity, Device device)
    : method_(method),
      degree_(degree),
      replicas_(world / degree),
      micro_batches_(config.train.micro_batches),
      capacity_(capacity),
      model_(config.model),
      precision_(precision_named(config.train.precision)),
      device_(device),
      recompute_(config.train.recompute) {
  TRIDENT_CHECK(layer_methods(method).linear != "lasp", "a static candidate runs a resolved LASP variant (lasp1 or "
                "lasp2)");
  check_static_candidate(model_, method, degree, world);
}

std::string StaticCandidate::name() const {
  return method_ == "dp" ? "dp" : method_ + " sp=" + std::to_string(degree_);
}

std::vector<std::vector<Batch>> StaticCandidate::replica_micro_batches(const Batch& batch) const {
  std::vector<std::vector<Batch>> out;
  for (const Batch& share : split_micro_batches(batch, replicas_))
    out.push_back(split_micro_batches(share, static_cast<int>(micro_batches_)));
  return out;
}

std::vector<std::vector<std::vector<int64_t>>> StaticCandidate::replica_micro_lengths(const Batch& batch) const {
  const std::vector<int64_t> lengths = batch.sequence_lengths();
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (const auto& [first, last] : micro_batch_bounds(lengths, replicas_)) {
    const std::span<const int64_t> share = std::span(lengths).subspan(first, last - first);
    std::vector<std::vector<int64_t>>& replica = out.emplace_back();
    for (const auto& [a, b] : micro_batch_bounds(share, static_cast<int>(micro_batches_)))
      replica.emplace_back(share.begin() + a, share.begin() + b);
  }
  return out;
}

Feasibility StaticCandidate::feasible(const Batch& batch) const {
  // The same answer on every rank: every replica's largest micro-batch, sliced over the group.
  int64_t largest = 0;
  for (const std::vector<std::vector<int64_t>>& replica : replica_micro_lengths(batch))
    for (const std::vector<int64_t>& micro : replica)
      largest = std::max(largest, std::accumulate(micro.begin(), micro.end(), int64_t{0}));
  const int64_t longest_document = batch.longest_sequence();
  const int64_t per_rank = (largest + degree_ - 1) / degree_;
  if (per_rank <= capacity_) return {};
  return {false, fmt::format("{}: a micro-batch of {} tokens (longest document {}) puts {} tokens on a rank, above "
                             "its activation capacity of {} tokens",
                             name(), largest, longest_document, per_rank, capacity_)};
}

std::pair<double, int64_t> StaticCandidate::exchange(int64_t tokens, const cost::StepCostModel& cost) const {
  if (degree_ == 1 || tokens == 0) return {0, 0};
  const LayerMethods methods = layer_methods(method_);
  const double linear = static_cast<double>(model_.linear_layers());
  const double softmax = static_cast<double>(model_.n_layer) - linear;
  const auto [linear_s, linear_bytes] = layer_exchange(methods.linear, tokens, cost);
  const auto [softmax_s, softmax_bytes] = layer_exchange(methods.softmax, tokens, cost);
  return {linear * linear_s + softmax * softmax_s,
          static_cast<int64_t>(linear * linear_bytes + softmax * softmax_bytes)};
}

// Per layer, what each method sends for a micro-batch of S tokens on a group of d ranks, n = S / d tokens a rank,
// C = n_embd values of b bytes a token, states of H D^2 fp32 values:
//   ulysses  4 all-to-alls (qkv and out forward, their gradients backward) moving 8 n C b bytes
//   ring     d - 1 passes of a K,V block (2 n C b) forward; d - 1 of K,V and d of dK,dV backward
//   usp      ulysses inside groups of u ranks, ring across the d / u groups (blocks of u n tokens, C / u wide)
//   lasp1    d - 1 hops of a state forward and of its gradient backward, one after another along the chain
//   lasp2    one allgather of a state (and decays) forward, one of state gradients backward
std::pair<double, double> StaticCandidate::layer_exchange(const std::string& method, int64_t tokens,
                                                          const cost::StepCostModel& cost) const {
  const int64_t d = degree_;
  const double n = static_cast<double>((tokens + d - 1) / d), C = static_cast<double>(model_.n_embd);
  const double b = static_cast<double>(cost.run().bytes_per_value);
  const double H = static_cast<double>(model_.n_head), D = C / H, state = H * D * D * 4;
  if (method == "ulysses") return {4 * cost.transfer_s(2 * n * C * b, d), 8 * n * C * b};
  if (method == "ring") {
    const double passes = 3.0 * static_cast<double>(d) - 2;
    return {passes * cost.transfer_s(2 * n * C * b, d), passes * 2 * n * C * b};
  }
  if (method == "usp") {  // Ulysses' four all-to-alls inside u ranks, then a ring of r = d / u Ulysses groups
    const int64_t u = usp_ulysses_degree(d, model_.n_head, cost.run().ranks_per_node);
    const double passes = 3.0 * static_cast<double>(d / u) - 2;  // blocks of u n tokens, C / u wide
    const double ulysses = u > 1 ? 4 * cost.transfer_s(2 * n * C * b, u) : 0;
    const double ring = d / u > 1 ? passes * cost.transfer_s(2 * n * C * b, d) : 0;
    return {ulysses + ring, (u > 1 ? 8 * n * C * b : 0) + (d / u > 1 ? passes * 2 * n * C * b : 0)};
  }
  // each rank sends its state forward and its gradient back once
  if (method == "lasp1") return {2.0 * static_cast<double>(d - 1) * cost.transfer_s(state, d), 2 * state};
  if (method == "lasp2") return {2 * cost.allgather_s(state, d), 2 * state};
  return {0, 0};
}

int StaticCandidate::recomputed_layers(const cost::RunShape& run, int64_t tokens) const {
  const int all_but_last = static_cast<int>(model_.n_layer) - 1;
  if (run.recompute == "full") return all_but_last;
  if (run.recompute != "auto") return 0;
  if (tokens > capacity_) return all_but_last;  // infeasible anyway
  return SubModelRunner::layers_recomputed(model_, precision_, run.recompute_room_bytes, tokens);
}

cost::StepEstimate StaticCandidate::estimate(const Batch& batch, const cost::StepCostModel& cost) const {
  cost::StepEstimate e;
  int64_t largest = 0, passes = 0;
  for (const std::vector<std::vector<int64_t>>& replica : replica_micro_lengths(batch)) {  // the slowest sets the pace
    double compute = 0, comm = 0;
    int64_t bytes = 0, replica_passes = 0;
    for (const std::vector<int64_t>& micro : replica) {
      const int64_t tokens = std::accumulate(micro.begin(), micro.end(), int64_t{0});
      if (tokens == 0) continue;
      passes = std::max(passes, ++replica_passes);
      // the recomputed layers' forward again: a third of their forward and backward
      const int recomputed = recomputed_layers(cost.run(), (tokens + degree_ - 1) / degree_);
      compute += cost.compute_s(micro, degree_) *
                 (1 + static_cast<double>(recomputed) / (3.0 * static_cast<double>(model_.n_layer)));
      const auto [seconds, sent] = exchange(tokens, cost);
      comm += seconds;
      bytes += sent;
      largest = std::max(largest, tokens);
    }
    if (compute + comm > e.compute_s + e.comm_s) {
      e.compute_s = compute;
      e.comm_s = comm;
    }
    e.comm_bytes = std::max(e.comm_bytes, bytes);
  }
  // The gradients: summed over every rank whatever the candidate.
  e.comm_s += cost.gradient_reduction_s(passes) + cost.sharding_s(passes);
  e.comm_bytes += static_cast<int64_t>(cost.gradient_reduction_bytes(passes) + cost.sharding_bytes(passes));
  e.seconds = e.compute_s + e.comm_s;
  const int64_t per_rank = (largest + degree_ - 1) / degree_;
  e.peak_bytes = resident_memory_bytes(model_, per_rank, precision_, device_, recompute_, source_keeps(cost.run())) +
                 AdamW::memory_bytes(cost.optimizer_params()) + cost.gradient_shard_bytes();
  return e;
}

}  // namespace trident
