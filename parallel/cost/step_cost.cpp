#include "parallel/cost/step_cost.h"

#include "kernels/common/error.h"

namespace trident::cost {

Link group_link(const NetworkSection& network, int64_t group_size, int64_t nodes) {
  for (const AlltoallLink& a : network.alltoall)
    if (a.group_size == group_size && a.nodes == nodes) return a.link;
  return nodes == 1 ? network.intra_node : network.inter_node;
}

StepCostModel StepCostModel::from_profile(const Profile& p, const RunShape& run) {
  auto missing = [&](const char* section, const char* hint) {
    throw_config_error("{}: the profile has no '{}' section, which estimating a step needs ({})", p.source, section,
                       hint);
  };
  if (!p.cluster) missing("cluster", "nodes, devices_per_node, device_memory_gb");
  if (!p.network) missing("network", "written by `trident bench comm --profile FILE`, or described by hand");
  if (!p.compute) missing("compute", "written by `trident bench profile CONFIG --out FILE`");
  const ClusterSection& c = *p.cluster;
  if (c.nodes * c.devices_per_node != run.world || (run.ranks_per_node > 0 && c.devices_per_node != run.ranks_per_node))
    throw_config_error("{}: the profile describes {} node(s) x {} device(s), but this run has {} rank(s){}: measure "
                       "a profile on this layout, or leave parallel.select.profile empty to measure at start-up",
                       p.source, c.nodes, c.devices_per_node, run.world,
                       run.ranks_per_node > 0 ? fmt::format(" on {} node(s) x {}", run.nodes, run.ranks_per_node)
                                              : fmt::format(" on {} node(s)", run.nodes));
  if (p.model && (p.model->n_layer != run.n_layer || p.model->n_embd != run.n_embd ||
                  p.model->bytes_per_value != run.bytes_per_value))
    throw_config_error("{}: the profile was measured for a model of {} layers x {} wide with {}-byte values, but this "
                       "run trains {} layers x {} wide with {}-byte values (model.*, train.precision): measure a "
                       "profile of this model (`trident bench profile`)",
                       p.source, p.model->n_layer, p.model->n_embd, p.model->bytes_per_value, run.n_layer, run.n_embd,
                       run.bytes_per_value);
  StepCostModel m;
  m.run_ = run;
  m.source_ = p.source;
  m.network_ = *p.network;
  m.compute_ = *p.compute;
  return m;
}

double StepCostModel::compute_s(std::span<const int64_t> lengths, int64_t d) const {
  if (lengths.empty()) return 0;
  double per_token2 = 0, per_token = 0;
  for (int64_t s : lengths) {
    const double x = static_cast<double>(s);
    per_token2 += x * x;
    per_token += x;
  }
  return (compute_.alpha1_s_per_token2 * per_token2 + compute_.alpha2_s_per_token * per_token) /
             static_cast<double>(d) +
         compute_.beta1_s;
}

Link StepCostModel::link(int64_t d) const {
  const int64_t per_node = run_.ranks_per_node > 0 ? run_.ranks_per_node : run_.world;
  return group_link(network_, d, (d + per_node - 1) / per_node);
}

double transfer_s(const Link& link, double bytes) {
  return link.latency_us * 1e-6 + bytes / (link.bandwidth_gb_per_s * 1e9);
}

double allgather_s(const Link& link, double bytes, int64_t d) {
  return link.latency_us * 1e-6 + static_cast<double>(d - 1) * bytes / (link.bandwidth_gb_per_s * 1e9);
}

double StepCostModel::transfer_s(double bytes, int64_t d) const { return cost::transfer_s(link(d), bytes); }

double StepCostModel::allgather_s(double bytes, int64_t d) const { return cost::allgather_s(link(d), bytes, d); }

double StepCostModel::allreduce_s(double bytes) const {
  const int64_t W = run_.world;
  if (W == 1) return 0;
  return 2.0 * static_cast<double>(W - 1) * transfer_s(bytes / static_cast<double>(W), W);
}

namespace {

// The share of the parameters a stage-3 pass gathers: every layer in the forward, all but the last two again in the
// backward (the outer windows once, counted as a layer's share).
double gathered_per_pass(const RunShape& run) {
  const double L = static_cast<double>(run.n_layer);
  return std::max(1.0, 2.0 * L - 2.0) / L;
}

}  // namespace

double StepCostModel::sharding_bytes(int64_t passes) const {
  if (run_.zero_ranks <= 1) return 0;
  const double range = 4.0 * static_cast<double>(run_.owned_params);
  return run_.weight_shards ? static_cast<double>(passes) * gathered_per_pass(run_) * range : range;
}

double StepCostModel::sharding_s(int64_t passes) const {
  if (run_.zero_ranks <= 1) return 0;
  if (!run_.weight_shards) return allgather_s(sharding_bytes(passes), run_.zero_ranks);
  // a gather a layer, twice a pass, and the outer windows: each its latency, the bytes at the group's bandwidth
  const Link l = link(run_.zero_ranks);
  const double gathers = static_cast<double>(passes) * static_cast<double>(2 * run_.n_layer);
  return gathers * l.latency_us * 1e-6 +
         static_cast<double>(run_.zero_ranks - 1) * sharding_bytes(passes) / (l.bandwidth_gb_per_s * 1e9);
}

double StepCostModel::gradient_reduction_bytes(int64_t passes) const {
  if (!run_.gradient_shards) return gradient_bytes();
  const double across = run_.world > run_.zero_ranks ? 4.0 * static_cast<double>(run_.owned_params) : 0;
  return static_cast<double>(passes) * 4.0 * static_cast<double>(run_.num_params) + across;
}

double StepCostModel::gradient_reduction_s(int64_t passes) const {
  if (!run_.gradient_shards) return gradient_allreduce_s();
  const int64_t G = run_.zero_ranks, groups = run_.world / std::max<int64_t>(1, G);
  const double per_pass = allgather_s(4.0 * static_cast<double>(run_.num_params) / static_cast<double>(G), G);
  double across = 0;
  if (groups > 1) {  // a ring all-reduce of the range over one rank of each group, on the inter-group link
    const double range = 4.0 * static_cast<double>(run_.owned_params);
    across = 2.0 * static_cast<double>(groups - 1) *
             transfer_s(range / static_cast<double>(groups), run_.world);
  }
  return static_cast<double>(passes) * per_pass + across;
}

}  // namespace trident::cost
