#include "parallel/cost/testbed_scale.h"

#include <cmath>

#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident::cost {

namespace {

// The side's model and its seconds a token, validated.
ScaledSide side_of(const Profile& p, double slowdown) {
  if (!p.compute) throw_config_error("{}: the profile has no 'compute' section (alpha2_s_per_token)", p.source);
  if (!p.model)
    throw_config_error("{}: the profile has no 'model' section (n_layer, n_embd, bytes_per_value)", p.source);
  const ModelSection& m = *p.model;
  // beta1 is paid once a step, not a token.
  const double per_token =
      p.compute->alpha2_s_per_token + p.compute->alpha1_s_per_token2 * static_cast<double>(m.max_seq_len);
  if (per_token <= 0)
    throw_config_error("{}: compute.alpha2_s_per_token {} + alpha1_s_per_token2 {} x model.max_seq_len {}: no time a "
                       "token to scale links to", p.source, p.compute->alpha2_s_per_token,
                       p.compute->alpha1_s_per_token2, m.max_seq_len);
  ScaledSide side;
  side.source = p.source;
  side.model = m.name;
  side.max_seq_len = m.max_seq_len;
  side.seconds_per_token = per_token * slowdown;
  side.bytes_per_token = 8.0 * static_cast<double>(m.n_layer * m.n_embd * m.bytes_per_value);
  return side;
}

double ratio(const ScaledSide& side, double link_bytes_per_s) {
  return side.bytes_per_token / link_bytes_per_s / side.seconds_per_token;
}

}  // namespace

ScaledLinks scale_links_to_testbed(const Profile& testbed, const Profile& here, double slowdown) {
  if (!(slowdown >= 1)) throw_config_error("slowdown {}: ranks cannot compute faster than one rank alone", slowdown);
  if (!testbed.network)
    throw_config_error("{}: the profile has no 'network' section (intra_node, inter_node)", testbed.source);
  ScaledLinks links{side_of(testbed, 1), side_of(here, slowdown)};
  ScaledSide& tb = links.testbed;
  tb.intra_bytes_per_s = testbed.network->intra_node.bandwidth_gb_per_s * 1e9;
  tb.inter_bytes_per_s = testbed.network->inter_node.bandwidth_gb_per_s * 1e9;
  if (tb.intra_bytes_per_s <= 0 || tb.inter_bytes_per_s <= 0)
    throw_config_error("{}: network: intra_node and inter_node need bandwidth_gb_per_s > 0", testbed.source);
  tb.intra_ratio = ratio(tb, tb.intra_bytes_per_s);
  tb.inter_ratio = ratio(tb, tb.inter_bytes_per_s);
  // Equal ratios: link = bytes_per_token / (ratio * seconds_per_token).
  ScaledSide& h = links.here;
  h.intra_bytes_per_s = h.bytes_per_token / (tb.intra_ratio * h.seconds_per_token);
  h.inter_bytes_per_s = h.bytes_per_token / (tb.inter_ratio * h.seconds_per_token);
  h.intra_ratio = ratio(h, h.intra_bytes_per_s);
  h.inter_ratio = ratio(h, h.inter_bytes_per_s);
  return links;
}

std::string tc_rate(double bytes_per_s) {
  return fmt::format("{}kbit", static_cast<int64_t>(std::floor(bytes_per_s * 8 / 1e3)));
}

}  // namespace trident::cost
