#pragma once
// What one training step costs on this run, from a cluster profile: the pieces every strategy's estimate is made of
// (each strategy adds them up for its own layout: parallel/static_sp/candidate.cpp, FlexSP's plan, ATOM's passes).
// FlexSP's planner costs one group at a time with GroupCostModel (group_cost_model.h).
//
//   compute(sequences s_k on a group of d ranks) = sum_k (alpha1 s_k^2 + alpha2 s_k) / d + beta1     per rank
//   transfer(bytes, d)                           = latency(d) + bytes / bandwidth(d)                  one message
//   allgather(bytes a rank, d)                   = latency(d) + (d - 1) bytes / bandwidth(d)
//   allreduce(bytes)                             = 2 (W - 1) transfer(bytes / W, W)                   ring, W ranks
//   sharding                                     = allgather(4 bytes x the rank's range, G)   parallel.zero over G
//   reduce_scatter(bytes, G)                     = allgather(bytes / G, G)                            ring, G ranks
//   gradients, stage 2                           = passes x reduce_scatter(4 P, G)
//                                                  (+ allreduce of the range across the W / G groups)
//   weights, stage 3                             = passes x gathers of (2 L - 2) / L x 4 P over G: the
//                                                  forward's L layers, the backward's L - 2 (instead of sharding)
//
// latency(d) and bandwidth(d) are the link of a group of d consecutive node-major ranks: the profile's measured
// all-to-all entry for d ranks on the nodes such a group spans, else its intra- or inter-node link
// (parallel/cost/README.md). Pure functions, no MPI.
#include <cstdint>
#include <span>
#include <string>

#include "parallel/cost/profile.h"

namespace trident::cost {

// The run the estimates are for: its ranks and the model's shape.
struct RunShape {
  int64_t world = 1;
  int64_t nodes = 1;
  int64_t ranks_per_node = 1;
  int64_t n_layer = 1;
  int64_t n_embd = 1;
  int64_t n_head = 1;
  int64_t num_params = 0;
  int64_t bytes_per_value = 4;  // activations as they travel: 4 (fp32) or 2 (bf16)
  int64_t zero_ranks = 1;       // the ranks parallel.zero shards the optimizer state over (1: none)
  int64_t owned_params = 0;     // the parameters of the longest range one of them updates (0: num_params)
  bool gradient_shards = false; // parallel.zero.stage 2 and 3: gradients reduce-scattered each pass, a range a rank
  bool weight_shards = false;    // parallel.zero.stage 3: and the weights gathered layer by layer each pass
  int64_t gradient_shard_bytes = 0;  // then: the bytes of a rank's shards and the windows they move through
  // train.recompute; with auto, the bytes of activations a rank's passes fit in, recomputing the layers they need
  // (SubModelRunner::layers_recomputed): a pass recomputes the forward of those layers, about a third of their
  // forward and backward.
  std::string recompute = "none";
  int64_t recompute_room_bytes = 0;
};

// One strategy's estimate of one step.
struct StepEstimate {
  double seconds = 0;      // compute_s + comm_s
  double compute_s = 0;    // the slowest rank's forward and backward
  double comm_s = 0;       // communication on that rank's path, not hidden behind compute
  int64_t comm_bytes = 0;  // bytes one rank hands to its communicators (the convention of CommCounters)
  int64_t peak_bytes = 0;  // device bytes per rank: model, gradients, optimizer state and activations (0: not
                           // estimated, as GPipe's estimate does not)
};

class StepCostModel {
 public:
  // Needs the profile's cluster, network and compute sections; the cluster must be this run's (nodes x
  // devices_per_node = its ranks) and a model section, when present, this model (n_layer, n_embd,
  // bytes_per_value). A ConfigError naming the file and the mismatch otherwise.
  static StepCostModel from_profile(const Profile& profile, const RunShape& run);

  const RunShape& run() const { return run_; }
  const std::string& source() const { return source_; }

  // Forward and backward of the sequences `lengths` on a group of d ranks, per rank; 0 for none.
  double compute_s(std::span<const int64_t> lengths, int64_t d) const;
  // The link a group of d consecutive node-major ranks talks over.
  Link link(int64_t d) const;
  // One message of `bytes` inside a group of d ranks.
  double transfer_s(double bytes, int64_t d) const;
  // An allgather of `bytes` from each of d ranks.
  double allgather_s(double bytes, int64_t d) const;
  // A ring all-reduce of `bytes` over the whole run.
  double allreduce_s(double bytes) const;
  // The fp32 gradients every layout sums over all ranks each step: bytes a rank hands to the all-reduce (0 alone),
  // and its time.
  double gradient_bytes() const { return run_.world > 1 ? 4.0 * static_cast<double>(run_.num_params) : 0; }
  double gradient_allreduce_s() const { return allreduce_s(gradient_bytes()); }
  // The same as the layout sums them over a step of `passes` training passes (the most a rank runs): the all-reduce,
  // or at parallel.zero.stage 2 and 3 a reduce-scatter over the sharding group each pass (and the range's all-reduce
  // across the groups once).
  double gradient_reduction_bytes(int64_t passes) const;
  double gradient_reduction_s(int64_t passes) const;
  // Device bytes a rank's sharded states take beyond its model's: its shards and windows at stages 2 and 3, else
  // none (the model holds them).
  int64_t gradient_shard_bytes() const { return run_.gradient_shards ? run_.gradient_shard_bytes : 0; }
  // parallel.zero.stage 1 and 2: after the update each rank sends its range of the parameters to its group (an
  // allgather over zero_ranks); stage 3: each of a step's `passes` gathers the layers' weights (2 L - 2 layers and the
  // embeddings and final norm, taken as (2 L - 2) / L of the parameters). Bytes a rank hands to them (0 without
  // sharding), and their time.
  double sharding_bytes(int64_t passes) const;
  double sharding_s(int64_t passes) const;
  // The parameters a rank's AdamW holds moments for.
  int64_t optimizer_params() const { return run_.owned_params > 0 ? run_.owned_params : run_.num_params; }

 private:
  RunShape run_;
  std::string source_;
  NetworkSection network_;
  ComputeSection compute_;
};

// The link a group of `group_size` ranks over `nodes` nodes uses: the measured all-to-all entry, else the intra-
// or inter-node link.
Link group_link(const NetworkSection& network, int64_t group_size, int64_t nodes);

// One message of `bytes` over `link`, and an allgather of `bytes` from each of d ranks over it (the formulas above;
// StepCostModel and the FlexSP cost model both use them).
double transfer_s(const Link& link, double bytes);
double allgather_s(const Link& link, double bytes, int64_t d);

}  // namespace trident::cost
