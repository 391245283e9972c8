#include "parallel/cost/group_cost_model.h"

#include "parallel/sp/shard.h"

#include <bit>
#include <cmath>

#include "kernels/common/error.h"
#include "parallel/cost/step_cost.h"

namespace trident::cost {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Seconds of a group holding `lengths` at one degree's costs: its overhead, then each sequence's terms.
double group_seconds(const DegreeCost& k, std::span<const int64_t> lengths) {
  double t = k.overhead;
  for (int64_t s : lengths) {
    const double x = static_cast<double>(s);
    t += k.per_token2 * x * x + k.per_token * x;
  }
  return t;
}

template <class T>
const T& require(const std::optional<T>& section, const Profile& p, const char* name, const char* hint) {
  if (!section) throw_config_error("{}: the profile has no '{}' section ({})", p.source, name, hint);
  return *section;
}
}  // namespace

GroupCostModel GroupCostModel::from_profile(const Profile& p) {
  const ClusterSection& cluster = require(p.cluster, p, "cluster", "nodes, devices_per_node, device_memory_gb");
  const MemorySection& memory = require(p.memory, p, "memory", "written by `trident bench profile CONFIG --out FILE`");
  if (cluster.device_memory_gb <= 0)
    throw_config_error("{}: cluster.device_memory_gb: must be > 0 to plan (0 means unknown)", p.source);
  if (!memory.model_states_gb)
    throw_config_error("{}: memory: no model_states_gb (`trident plan` computes it from the config's model, precision "
                       "and parallel.zero; elsewhere give the GiB of model states a device holds)", p.source);
  const double usable = (cluster.device_memory_gb - memory.reserved_gb - *memory.model_states_gb) * kGiB;
  const auto tokens = static_cast<int64_t>(std::floor(usable / memory.bytes_per_token));
  if (tokens < 1)
    throw_config_error("{}: memory: model_states_gb {} + reserved_gb {} leave no room for one token of {} bytes in "
                       "cluster.device_memory_gb {}", p.source, *memory.model_states_gb, memory.reserved_gb,
                       memory.bytes_per_token, cluster.device_memory_gb);
  return for_run(p, tokens);
}

GroupCostModel GroupCostModel::for_run(const Profile& p, int64_t tokens_per_device) {
  const ClusterSection& cluster = require(p.cluster, p, "cluster", "nodes, devices_per_node, device_memory_gb");
  require(p.network, p, "network", "written by `trident bench comm --profile FILE`, or described by hand");
  require(p.compute, p, "compute", "written by `trident bench profile CONFIG --out FILE`");
  const ModelSection& model = require(p.model, p, "model", "written by `trident bench profile CONFIG --out FILE`");
  GroupCostModel m;
  m.profile_ = p;
  m.devices_ = cluster.nodes * cluster.devices_per_node;
  m.devices_per_node_ = cluster.devices_per_node;
  m.max_degree_ = 1;
  while (m.max_degree_ * 2 <= m.devices_) m.max_degree_ *= 2;
  m.tokens_per_device_ = tokens_per_device;
  m.alltoalls_ = 8.0 * static_cast<double>(model.n_layer);
  m.bytes_per_token_moved_ = static_cast<double>(model.n_embd * model.bytes_per_value);
  return m;
}

const char* exchange_name(GroupExchange::Kind kind) {
  switch (kind) {
    case GroupExchange::Kind::lasp_chain: return "LASP-1";
    case GroupExchange::Kind::lasp_allgather: return "LASP-2";
    case GroupExchange::Kind::ulysses: break;
  }
  return "Ulysses";
}

GroupCostModel GroupCostModel::with_exchange(GroupExchange exchange) const {
  GroupCostModel m = *this;
  m.exchange_ = exchange;
  return m;
}

GroupCostModel GroupCostModel::with_corrections(const std::map<int64_t, double>& factors) const {
  GroupCostModel m = *this;
  m.corrections_.clear();
  for (const auto& [d, factor] : factors) {
    if (d < 1 || d > max_degree_ || !std::has_single_bit(static_cast<uint64_t>(d))) continue;  // no such group here
    const auto slot = static_cast<std::size_t>(std::countr_zero(static_cast<uint64_t>(d)));
    if (m.corrections_.size() <= slot) m.corrections_.resize(slot + 1, 1.0);
    m.corrections_[slot] = factor;
  }
  return m;
}

double GroupCostModel::correction(int64_t d) const {
  if (d < 1) return 1;
  const auto slot = static_cast<std::size_t>(std::countr_zero(static_cast<uint64_t>(d)));
  return slot < corrections_.size() ? corrections_[slot] : 1.0;
}

Link GroupCostModel::alltoall_link(int64_t d) const { return group_link(*profile_.network, d, nodes_spanned(d)); }

DegreeCost GroupCostModel::degree_cost(int64_t d) const {
  DegreeCost k = model_degree_cost(d);
  const double factor = correction(d);
  return {k.per_token2 * factor, k.per_token * factor, k.overhead * factor};
}

DegreeCost GroupCostModel::compute_cost(int64_t d) const {
  const ComputeSection& c = *profile_.compute;
  const double dd = static_cast<double>(d);
  return {c.alpha1_s_per_token2 / dd, c.alpha2_s_per_token / dd, c.beta1_s};
}

DegreeCost GroupCostModel::model_degree_cost(int64_t d) const {
  DegreeCost k = compute_cost(d);
  if (d == 1) return k;  // one device runs attention whole: no exchange
  const double dd = static_cast<double>(d);
  const Link link = alltoall_link(d);
  const double latency = link.latency_us * 1e-6, bandwidth = link.bandwidth_gb_per_s * 1e9;
  const double per_token_moved = bytes_per_token_moved_ / dd / bandwidth;  // one all-to-all's share of a token
  if (exchange_.kind == GroupExchange::Kind::ulysses) {
    k.per_token += alltoalls_ * per_token_moved;
    k.overhead += alltoalls_ * latency;
    return k;
  }
  const double softmax = static_cast<double>(exchange_.softmax_layers);
  // a state forward and its gradient backward, in each linear layer
  const double directions = 2.0 * (static_cast<double>(n_layer()) - softmax);
  if (exchange_.kind == GroupExchange::Kind::lasp_chain)
    k.overhead += directions * (dd - 1) * transfer_s(link, exchange_.state_bytes);
  else
    k.overhead += directions * allgather_s(link, exchange_.state_bytes, d);
  if (softmax == 0) return k;
  // Ulysses' 8 all-to-alls a layer inside groups of u devices, then Ring Attention's passes of K and V blocks (and
  // their gradients) across the d / u of them: u = d where the heads divide by d
  const int64_t u = exchange_.n_head % d == 0 ? d : usp_ulysses_degree(d, exchange_.n_head, devices_per_node_);
  if (u > 1) {
    const Link inner = alltoall_link(u);
    k.per_token += 8 * softmax * bytes_per_token_moved_ / dd / (inner.bandwidth_gb_per_s * 1e9);
    k.overhead += 8 * softmax * inner.latency_us * 1e-6;
  }
  if (u < d) {
    const double passes = softmax * (3 * static_cast<double>(d / u) - 2);
    k.per_token += passes * 2 * per_token_moved;
    k.overhead += passes * latency;
  }
  return k;
}

double GroupCostModel::sequence_s(int64_t s, int64_t d) const {
  const DegreeCost k = degree_cost(d);
  const double x = static_cast<double>(s);
  return k.per_token2 * x * x + k.per_token * x;
}

double GroupCostModel::group_overhead_s(int64_t d) const { return degree_cost(d).overhead; }

double GroupCostModel::group_time_s(std::span<const int64_t> lengths, int64_t d) const {
  return lengths.empty() ? 0 : group_seconds(degree_cost(d), lengths);
}

double GroupCostModel::group_exchange_s(std::span<const int64_t> lengths, int64_t d) const {
  if (lengths.empty() || d == 1) return 0;
  return group_time_s(lengths, d) - group_seconds(compute_cost(d), lengths) * correction(d);
}

int64_t GroupCostModel::min_degree(int64_t s) const {
  for (int64_t d = 1; d <= max_degree_; d *= 2)
    if (s <= token_capacity(d)) return d;
  return 0;
}

}  // namespace trident::cost
