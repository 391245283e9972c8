#include "parallel/cost/testbed_scale.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/common/error.h"

namespace trident::cost {

namespace {

// The side's model and its seconds a token, validated, at its model.max_seq_len or at `length` when >= 0; a pipeline's
// per stage of `stages`.
ScaledSide side_of(const Profile& p, double slowdown, Exchange exchange, int64_t stages, int64_t length = -1) {
  if (!p.compute) throw_config_error("{}: the profile has no 'compute' section (alpha2_s_per_token)", p.source);
  if (!p.model)
    throw_config_error("{}: the profile has no 'model' section (n_layer, n_embd, bytes_per_value)", p.source);
  const ModelSection& m = *p.model;
  const int64_t at = length >= 0 ? length : m.max_seq_len;
  // beta1 is paid once a step, not a token.
  const double per_token =
      p.compute->alpha2_s_per_token + p.compute->alpha1_s_per_token2 * static_cast<double>(at);
  if (per_token <= 0)
    throw_config_error("{}: compute.alpha2_s_per_token {} + alpha1_s_per_token2 {} x model.max_seq_len {}: no time a "
                       "token to scale links to", p.source, p.compute->alpha2_s_per_token,
                       p.compute->alpha1_s_per_token2, m.max_seq_len);
  ScaledSide side;
  side.source = p.source;
  side.model = m.name;
  side.max_seq_len = at;
  side.seconds_per_token = per_token * slowdown;
  side.bytes_per_token = 8.0 * static_cast<double>(m.n_layer * m.n_embd * m.bytes_per_value);
  if (exchange == Exchange::pipeline) {
    side.stages = stages;
    side.parameters = m.parameters;
    side.seconds_per_token /= static_cast<double>(stages);
    side.bytes_per_token = static_cast<double>(m.n_embd * m.bytes_per_value);
  }
  return side;
}

double ratio(const ScaledSide& side, double link_bytes_per_s) {
  return side.bytes_per_token / link_bytes_per_s / side.seconds_per_token;
}

// Seconds the inter link takes for a round of fp32 parameters over seconds a token of the whole model (0 when P is not
// stated).
double round_tokens(const ScaledSide& side) {
  if (side.parameters <= 0) return 0;
  const double round_s = 4.0 * static_cast<double>(side.parameters) / side.inter_bytes_per_s;
  return round_s / (side.seconds_per_token * static_cast<double>(side.stages));
}

// L0 = alpha2 / alpha1: the length at which a token's attention costs as much as the rest of it.
double crossover_length(const Profile& p) {
  if (!p.compute) throw_config_error("{}: the profile has no 'compute' section (alpha2_s_per_token)", p.source);
  if (!(p.compute->alpha1_s_per_token2 > 0) || !(p.compute->alpha2_s_per_token > 0))
    throw_config_error("{}: compute.alpha1_s_per_token2 {} and alpha2_s_per_token {}: scaling lengths needs both > 0",
                       p.source, p.compute->alpha1_s_per_token2, p.compute->alpha2_s_per_token);
  return p.compute->alpha2_s_per_token / p.compute->alpha1_s_per_token2;
}

// The testbed's inter link in bytes/s: inter_node, or its all-to-all over `group` devices.
double testbed_inter_link(const NetworkSection& network, const std::string& source, int64_t group) {
  if (group <= 0) return network.inter_node.bandwidth_gb_per_s * 1e9;
  for (const AlltoallLink& row : network.alltoall)
    if (row.group_size == group) return row.link.bandwidth_gb_per_s * 1e9;
  std::vector<int64_t> sizes;
  for (const AlltoallLink& row : network.alltoall) sizes.push_back(row.group_size);
  throw_config_error("{}: network.alltoall has no row of group_size {} (it has: {})", source, group,
                     sizes.empty() ? "none" : fmt::format("{}", fmt::join(sizes, ", ")));
}

}  // namespace

ScaledLinks scale_links_to_testbed(const Profile& testbed, const Profile& here, double slowdown, Exchange exchange,
                                   int64_t stages_here, int64_t alltoall_group, bool scale_lengths) {
  if (!(slowdown >= 1)) throw_config_error("slowdown {}: ranks cannot compute faster than one rank alone", slowdown);
  if (alltoall_group > 0 && exchange == Exchange::pipeline)
    throw_config_error("alltoall group {}: a pipeline's stage boundary is not an all-to-all", alltoall_group);
  if (scale_lengths && exchange == Exchange::pipeline)
    throw_config_error("scaling lengths: a pipeline's stage boundary moves a token whatever its sequence's length");
  if (!testbed.network)
    throw_config_error("{}: the profile has no 'network' section (intra_node, inter_node)", testbed.source);
  int64_t stages_testbed = 1;
  if (exchange == Exchange::pipeline) {
    if (!testbed.cluster)
      throw_config_error("{}: the profile has no 'cluster' section: a pipeline's stages are its devices",
                         testbed.source);
    stages_testbed = testbed.cluster->nodes * testbed.cluster->devices_per_node;
    if (stages_testbed < 2)
      throw_config_error("{}: cluster: {} device(s): a pipeline needs at least 2 stages", testbed.source,
                         stages_testbed);
    if (stages_here < 2) throw_config_error("stages {}: a pipeline needs at least 2 stages here", stages_here);
  }
  double length_scale = 1;
  int64_t here_length = -1;  // here's own model.max_seq_len
  if (scale_lengths) {
    length_scale = crossover_length(here) / crossover_length(testbed);
    const int64_t longest = testbed.model ? testbed.model->max_seq_len : 0;
    if (longest <= 0)
      throw_config_error("{}: scaling lengths needs the testbed's model.max_seq_len (its longest sequence)",
                         testbed.source);
    here_length = std::max<int64_t>(1, std::llround(static_cast<double>(longest) * length_scale));
  }
  ScaledLinks links{side_of(testbed, 1, exchange, stages_testbed),
                    side_of(here, slowdown, exchange, stages_here, here_length)};
  links.length_scale = length_scale;
  ScaledSide& tb = links.testbed;
  tb.intra_bytes_per_s = testbed.network->intra_node.bandwidth_gb_per_s * 1e9;
  tb.inter_bytes_per_s = testbed_inter_link(*testbed.network, testbed.source, alltoall_group);
  links.alltoall_group = alltoall_group;
  if (tb.intra_bytes_per_s <= 0 || tb.inter_bytes_per_s <= 0)
    throw_config_error("{}: network: intra_node and {} need bandwidth_gb_per_s > 0", testbed.source,
                       alltoall_group > 0 ? fmt::format("alltoall group_size {}", alltoall_group) : "inter_node");
  tb.intra_ratio = ratio(tb, tb.intra_bytes_per_s);
  tb.inter_ratio = ratio(tb, tb.inter_bytes_per_s);
  // Equal ratios: link = bytes_per_token / (ratio * seconds_per_token).
  ScaledSide& h = links.here;
  h.intra_bytes_per_s = h.bytes_per_token / (tb.intra_ratio * h.seconds_per_token);
  h.inter_bytes_per_s = h.bytes_per_token / (tb.inter_ratio * h.seconds_per_token);
  h.intra_ratio = ratio(h, h.intra_bytes_per_s);
  h.inter_ratio = ratio(h, h.inter_bytes_per_s);
  tb.round_tokens = round_tokens(tb);
  h.round_tokens = round_tokens(h);
  return links;
}

std::string tc_rate(double bytes_per_s) {
  return fmt::format("{}kbit", static_cast<int64_t>(std::floor(bytes_per_s * 8 / 1e3)));
}

}  // namespace trident::cost
