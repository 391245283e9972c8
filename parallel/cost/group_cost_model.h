#pragma once
// The cost model of sequence-parallel training (docs/methods.md §3.3) on a cluster described by a profile: how long a
// group of d devices (Ulysses inside) takes for a set of sequences, and how many tokens fit it. Used by the FlexSP
// planners; the per-step strategy selector estimates whole steps with StepCostModel (step_cost.h), from the same
// profile.
//
//   time(group)   = sum_k (alpha1 s_k^2 + alpha2 s_k) / d + beta1                     compute, forward + backward
//                 + 8 L (latency(d) + (S/d) h b / bandwidth(d))                        Ulysses all-to-alls (d > 1)
//              or + 2 L (d - 1) (latency(d) + state / bandwidth(d))                    LASP-1 state chains (d > 1)
//              or + 2 L (latency(d) + (d - 1) state / bandwidth(d))                    LASP-2 state allgathers (d > 1)
//   a hybrid's LASP: its L_lin linear layers exchange states as above, its L_soft softmax layers run Ulysses'
//   8 L_soft all-to-alls where d divides the heads, else USP: 8 L_soft all-to-alls inside groups of u devices of a
//   node (u = gcd(d, heads, devices per node), none for u = 1) and Ring Attention's (3r - 2) L_soft passes of
//   (S/d) 2h b bytes over r = d/u of them (parallel/sp/shard.h, usp_ulysses_degree)
//   memory/device = model_states + (S/d) bytes_per_token  <=  device_memory - reserved
//
// S = sum_k s_k tokens on the group; 8 L all-to-alls per step (q, k, v, out; forward and backward; L layers), each
// moving a rank's S/d tokens of h values of b bytes. LASP moves one fp32 state of H D^2 values per layer and direction,
// whatever S is (parallel/lasp/README.md). bandwidth(d) and latency(d) come from the profile's measured all-to-all
// entry for d devices on the nodes a buddy-aligned group of d spans, else its intra- or inter-node link.
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "parallel/cost/profile.h"

namespace trident::cost {

// How the ranks of a group split attention between them.
struct GroupExchange {
  enum class Kind { ulysses, lasp_chain, lasp_allgather };
  Kind kind = Kind::ulysses;
  double state_bytes = 0;  // LASP: one layer's state, 4 H D^2 bytes
  // LASP in a hybrid model: the softmax layers beside the linear ones, which run Ulysses on groups whose degree
  // divides n_head and USP (Ulysses inside a node x Ring across; Ring alone where no Ulysses degree fits) on the
  // others.
  int64_t softmax_layers = 0;
  int64_t n_head = 0;
};
const char* exchange_name(GroupExchange::Kind kind);  // "Ulysses", "LASP-1", "LASP-2"

// A group of one degree: time = overhead + per_token2 * sum s^2 + per_token * sum s (0 when empty).
struct DegreeCost {
  double per_token2 = 0;
  double per_token = 0;
  double overhead = 0;
};

class GroupCostModel {
 public:
  // Needs the cluster, network, compute, memory and model sections; throws ConfigError naming the file and the
  // missing section or the impossible value (e.g. model states larger than the usable memory).
  static GroupCostModel from_profile(const Profile& profile);
  // For a training run: the profile's cluster, network, compute and model sections, and the activation capacity the
  // run computed from device.memory_gb (`tokens_per_device`) in place of the memory section.
  static GroupCostModel for_run(const Profile& profile, int64_t tokens_per_device);
  // The same cluster and model with another exchange inside groups (Ulysses unless set).
  GroupCostModel with_exchange(GroupExchange exchange) const;
  const GroupExchange& exchange() const { return exchange_; }
  // The same model with every time of a degree (its DegreeCost, so sequence_s, group_overhead_s and group_time_s)
  // multiplied by `factors[d]` (measured / estimated, as FlexSP learns them); a degree not in the map keeps 1.
  // Replaces any earlier factors. Memory is unchanged.
  GroupCostModel with_corrections(const std::map<int64_t, double>& factors) const;
  // The factor with_corrections gave degree d (1 when none).
  double correction(int64_t d) const;

  int64_t devices() const { return devices_; }
  int64_t devices_per_node() const { return devices_per_node_; }

  DegreeCost degree_cost(int64_t d) const;
  // Seconds one sequence of s tokens adds to a group of d devices (compute and all-to-all volume, not beta1).
  double sequence_s(int64_t s, int64_t d) const;
  // Seconds a non-empty group pays once, whatever it holds: beta1, the all-to-all latencies or LASP's state exchange.
  double group_overhead_s(int64_t d) const;
  // The whole group: overhead plus each sequence; 0 for no sequences.
  double group_time_s(std::span<const int64_t> lengths, int64_t d) const;
  // The part of group_time_s spent exchanging (all-to-alls, or LASP's states); 0 for d = 1.
  double group_exchange_s(std::span<const int64_t> lengths, int64_t d) const;

  // Most tokens a group of d devices holds within the memory budget.
  int64_t token_capacity(int64_t d) const { return tokens_per_device_ * d; }
  // Smallest power-of-two degree whose group holds s tokens; 0 when not even all devices' power of two does.
  int64_t min_degree(int64_t s) const;
  // Largest power of two <= devices(): the biggest group.
  int64_t max_degree() const { return max_degree_; }
  int64_t n_layer() const { return static_cast<int64_t>(alltoalls_ / 8); }
  // Nodes a buddy-aligned group of d devices spans.
  int64_t nodes_spanned(int64_t d) const { return (d + devices_per_node_ - 1) / devices_per_node_; }
  // The link a group of d devices exchanges over.
  Link alltoall_link(int64_t d) const;

 private:
  DegreeCost compute_cost(int64_t d) const;       // compute alone, before corrections
  DegreeCost model_degree_cost(int64_t d) const;  // compute and exchange, before corrections

  Profile profile_;
  int64_t devices_ = 0, devices_per_node_ = 0, max_degree_ = 0;
  int64_t tokens_per_device_ = 0;
  double alltoalls_ = 0;          // all-to-all calls per step: 8 L
  double bytes_per_token_moved_ = 0;  // h b per all-to-all
  GroupExchange exchange_;
  std::vector<double> corrections_;  // by log2 of the degree; empty: none
};

}  // namespace trident::cost
