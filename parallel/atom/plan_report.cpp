#include "parallel/atom/plan_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "parallel/atom/config.h"
#include "parallel/atom/placement.h"
#include "parallel/cost/profile.h"
#include "parallel/cost/swap_plan.h"
#include "parallel/placement/run_shape.h"

namespace trident {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// ATOM's peers against GPipe over the same devices of the profile's cluster (docs/methods.md §4.4-4.5, ATOM), for
// one global batch of train.batch_tokens.
struct PeersComparison {
  int peers = 1;              // 1: no peers to compare
  cost::Link link;            // the link a group of every device talks over
  double peer_step_s = 0;     // a peer's swapped step on its share of the batch
  double round_s = 0;         // averaging the fp32 parameters over all peers (an all-reduce)
  double atom_step_s = 0;     // the slower of the step and a round spread over parallel.atom.average_every steps
  int64_t hiding_every = 0;   // the fewest steps a round hides under (an interval as large keeps it off the path)
  cost::StepEstimate pipeline;
  int64_t micro_batches = 0;
  double stage_state_gib = 0;  // a pipeline stage's own weights, gradients and AdamW state
};

// A batch of `tokens` tokens in documents of `max_len` (the last one shorter), as training packs long documents.
Batch packed_batch(int64_t tokens, int64_t max_len) {
  Batch b;
  for (int64_t left = tokens; left > 0; left -= max_len)
    b.append_sequence(std::vector<int32_t>(static_cast<std::size_t>(std::min(left, max_len)) + 1, 0));
  return b;
}

// ATOM: every average_every steps a round averages the parameters on a thread of its own, hidden unless it takes
// longer than those steps; average_every 0 (exact peers) sums the gradients on every step's path instead. GPipe: the
// pipeline family's own estimate (asked through the registry), one stage a device, max(train.micro_batches, 4 a
// stage) micro-batches of whole documents; a stage is taken to hold its own layers' state and a micro-batch's
// activations, as a pipeline built for memory does (Trident's own pipeline keeps every parameter).
PeersComparison compare_peers(const Config& config, const cost::Profile& profile, double peer_step_s,
                              const PlanRequest& request, Device device) {
  const cost::ClusterSection& cluster = *profile.cluster;
  PeersComparison c;
  c.peers = static_cast<int>(cluster.nodes * cluster.devices_per_node);
  const cost::RunShape shape = run_shape(config, c.peers, cluster.nodes, cluster.devices_per_node);
  const cost::StepCostModel cost = cost::StepCostModel::from_profile(profile, shape);
  c.link = cost.link(c.peers);
  c.peer_step_s = peer_step_s;
  const int every = static_cast<int>(atom_config(config).average_every);
  c.round_s = cost.allreduce_s(4.0 * static_cast<double>(shape.num_params));
  c.atom_step_s = every > 0 ? std::max(peer_step_s, c.round_s / every) : peer_step_s + c.round_s;
  c.hiding_every = static_cast<int64_t>(std::ceil(c.round_s / peer_step_s));
  if (c.peers > config.model.n_layer)
    throw_config_error("{}: GPipe over its {} devices, ATOM's baseline, needs at least one layer a stage; "
                       "model.n_layer is {}", profile.source, c.peers, config.model.n_layer);
  // GPipe keeps its bubble small with at least 4 micro-batches a stage (as many as the batch has documents)
  const Batch batch = packed_batch(config.train.batch_tokens, config.model.max_seq_len);
  const int64_t m = std::max(config.train.micro_batches, std::min<int64_t>(batch.num_sequences(), 4 * c.peers));
  c.micro_batches = std::min<int64_t>(m, batch.num_sequences());  // split_micro_batches leaves none empty
  const StrategyEntry* gpipe = request.family ? request.family("pipeline") : nullptr;
  TRIDENT_CHECK(gpipe && gpipe->plan, "ATOM's plan sets its peers against the pipeline, which is not registered");
  Config staged = config;
  staged.train.micro_batches = m;
  const std::vector<std::unique_ptr<Candidate>> pipeline =
      gpipe->plan(staged, {.method = "pipeline", .degree = 1, .family = gpipe}, c.peers,
                  std::numeric_limits<int64_t>::max(), device);
  c.pipeline = pipeline.front()->estimate(batch, cost);
  c.stage_state_gib = 16.0 * static_cast<double>(shape.num_params) / c.peers / kGiB;
  return c;
}

}  // namespace

void print_atom_plan(const Config& config, const PlanRequest& request) {
  const std::string& profile_file = request.profile.empty() ? config.parallel.select_profile : request.profile;
  const bool json = request.json;
  if (profile_file.empty())
    throw_config_error("trident plan with parallel.strategy: atom needs a profile with the device's copy bandwidth: "
                       "--cluster FILE or parallel.select.profile (network.host_to_device, parallel/cost/README.md)");
  const cost::Profile profile = cost::read_profile(profile_file);
  if (!profile.compute)
    throw_config_error("{}: the profile has no 'compute' section (swap planning needs it)", profile_file);
  if (!profile.network || !profile.network->host_to_device)
    throw_config_error("{}: the profile has no network.host_to_device link (swap planning copies layers over it)",
                       profile_file);
  const ModelConfig& m = config.model;
  const Precision precision = precision_named(config.train.precision);
  const Device device = device_named(config.device.backend);
  // What training would do: the same placement (parallel/atom/placement.h), for one peer's share of the batch when
  // the cluster's devices are peers.
  const int64_t peers = profile.cluster ? profile.cluster->nodes * profile.cluster->devices_per_node : 1;
  Config peer = config;
  peer.train.batch_tokens = (config.train.batch_tokens + peers - 1) / peers;
  const AtomPlacement placed = place_atom(peer, precision, device, &profile);
  const cost::SwapPlan& plan = *placed.predicted;
  // The tokens the plan computes: a run's (a pass, or a round of passes run sub-model by sub-model).
  const int64_t L = m.n_layer, N = (peer.train.batch_tokens + placed.runs - 1) / placed.runs;
  const cost::LayerCost& layer = placed.layers.front();
  const double host_gib = static_cast<double>(host_budget_bytes(config)) / kGiB;
  // The overlap rule: a layer's load hides under its forward once a pass has n >= b R / (2 BW) tokens, R the FLOP/s
  // the profile implies (2 flops a parameter a token, forward), b the bytes a parameter moves.
  const double layer_params = static_cast<double>(layer.weight_bytes) / 4;
  const double flops_per_s = 2.0 * layer_params * static_cast<double>(N) / layer.forward_s;
  const double threshold = 4.0 * flops_per_s / (2 * placed.device.h2d_bytes_per_s);
  // no copies, no recompute
  const double resident_s =
      static_cast<double>(L) * (layer.forward_s + layer.backward_s) + placed.device.resident_compute_s;
  // A whole batch: the first run, then the later ones, which also load the gradients accumulated so far.
  const auto later_runs = static_cast<double>(placed.runs - 1);
  const double batch_s = plan.step_s() + (placed.predicted_later ? later_runs * placed.predicted_later->step_s() : 0);
  const double batch_exposed_s =
      plan.exposed_copy_s + (placed.predicted_later ? later_runs * placed.predicted_later->exposed_copy_s : 0);
  const PeersComparison vs = peers > 1 ? compare_peers(config, profile, batch_s, request, device) : PeersComparison{};
  const auto tokens_per_s = [&](double seconds) { return static_cast<double>(config.train.batch_tokens) / seconds; };
  if (json) {
    nlohmann::ordered_json j = {{"layers", L},
                                {"sub_models", plan.sub_models()},
                                {"partition", plan.starts},
                                {"tokens_per_pass", placed.pass_tokens},
                                {"pass_capacity_tokens", placed.tokens},
                                {"passes", placed.passes},
                                {"round_tokens", placed.round_tokens},
                                {"runs", placed.runs},
                                {"batch_step_s", batch_s},
                                {"batch_exposed_copy_s", batch_exposed_s},
                                {"recomputed_sub_models", placed.recomputed},
                                {"offloaded_sub_models", placed.moving_sub_models()},
                                {"forward_s", plan.forward_s},
                                {"backward_s", plan.backward_s},
                                {"step_s", plan.step_s()},
                                {"hidden_copies_step_s", plan.compute_s},
                                {"resident_step_s", resident_s},
                                {"exposed_copy_s", plan.exposed_copy_s},
                                {"peak_bytes", placed.device_bytes},
                                {"budget_bytes", placed.device.budget_bytes},
                                {"host_store_bytes", placed.host_bytes},
                                {"overlap_threshold_tokens", threshold},
                                {"layer_costs", profile.layers ? "measured" : "shared"},
                                {"layer_forward_s", layer.forward_s},
                                {"layer_backward_s", layer.backward_s},
                                {"outside_layers_s", placed.device.resident_compute_s}};
    if (vs.peers > 1)
      j["peers"] = {{"count", vs.peers},
                    {"link_gb_per_s", vs.link.bandwidth_gb_per_s},
                    {"average_every", atom_config(config).average_every},
                    {"atom", {{"peer_step_s", vs.peer_step_s}, {"round_s", vs.round_s}, {"step_s", vs.atom_step_s},
                              {"tokens_per_s", tokens_per_s(vs.atom_step_s)}, {"hiding_every", vs.hiding_every},
                              {"hidden_tokens_per_s", tokens_per_s(vs.peer_step_s)}}},
                    {"pipeline", {{"stages", vs.peers}, {"micro_batches", vs.micro_batches},
                                  {"step_s", vs.pipeline.seconds}, {"compute_s", vs.pipeline.compute_s},
                                  {"comm_s", vs.pipeline.comm_s}, {"stage_state_gib", vs.stage_state_gib},
                                  {"tokens_per_s", tokens_per_s(vs.pipeline.seconds)}}},
                    {"atom_over_pipeline", vs.pipeline.seconds / vs.atom_step_s},
                    {"hidden_atom_over_pipeline", vs.pipeline.seconds / vs.peer_step_s}};
    fmt::print("{}\n", j.dump());
    return;
  }
  const double model_gib =
      static_cast<double>(L * (layer.weight_bytes + layer.grad_bytes + layer.activation_bytes)) / kGiB;
  fmt::print("ATOM swap plan: {} layers ({:.3f} GiB of weights, gradients and activations) on {} GiB of device memory; "
             "{} GB/s host to device, {} GB/s back, {} copy engine(s); {}\n",
             L, model_gib, config.device.memory_gb, placed.device.h2d_bytes_per_s / 1e9,
             placed.device.d2h_bytes_per_s / 1e9, placed.device.shared_copy_engine ? 1 : 2,
             placed.round_tokens > 0 ? fmt::format("a round of {} tokens in passes of up to {}", N, placed.tokens)
             : placed.tokens > N    ? fmt::format("a pass of {} tokens (activations for up to {})", N, placed.tokens)
                                    : fmt::format("a pass of {} tokens", N));
  fmt::print("  sub-models: {} {} in {} device slot(s)\n", plan.sub_models(),
             cost::describe_swaps(plan.starts, static_cast<int>(L)), std::min(placed.slots, plan.sub_models()));
  fmt::print("  a layer's forward {:.2f} ms, backward {:.2f} ms{}\n", layer.forward_s * 1e3, layer.backward_s * 1e3,
             profile.layers ? fmt::format(", {:.2f} ms outside the layers (embeddings, LM head, loss; measured in the "
                                          "model: the profile's layers section)",
                                          placed.device.resident_compute_s * 1e3)
                            : std::string(" (the profile's compute fit shared by the layers, a forward a third; "
                                          "trident bench profile measures each)"));
  fmt::print("  predicted step {:.3f} s (forward {:.3f} s, backward {:.3f} s{}): {:.3f} s of copies "
             "exposed, {:.2f}x the throughput of the same schedule with every copy hidden; every layer resident (no "
             "copies, no recompute) would take {:.3f} s ({:.2f}x)\n",
             plan.step_s(), plan.forward_s, plan.backward_s,
             placed.recomputed > 0 ? fmt::format(", the first {} sub-model(s) recomputed", placed.recomputed)
             : placed.moving_sub_models() > 0
                 ? fmt::format(", the first {} sub-model(s)' activations offloaded to the host",
                               placed.moving_sub_models())
                 : ", every layer's activations kept",
             plan.exposed_copy_s, plan.compute_s / plan.step_s(),
             resident_s, resident_s / plan.step_s());
  if (placed.passes > 1)
    fmt::print("  a batch of {} tokens takes {} passes, {}: {:.3f} s, {:.3f} s of copies exposed{}\n",
               peer.train.batch_tokens, placed.passes,
               placed.round_tokens > 0 ? fmt::format("run sub-model by sub-model in {} round(s) (each sub-model loads "
                                                     "once a round)", placed.runs)
                                       : std::string("one after another (each loads every sub-model)"),
               batch_s, batch_exposed_s,
               placed.runs > 1 ? " (the later runs also load the gradients accumulated so far)" : "");
  fmt::print("  host store {:.2f} GiB of {:.1f} GiB host memory (fp32 weights, gradients, AdamW m and v{})\n",
             static_cast<double>(placed.host_bytes) / kGiB, host_gib,
             placed.moving_sub_models() > 0 ? ", offloaded activations" : "");
  fmt::print("  device memory {:.3f} of {:.3f} GiB; loads hide under compute from about {:.0f} tokens a pass "
             "(overlap rule, {:.1f} TFLOP/s implied by the profile)\n",
             static_cast<double>(placed.device_bytes) / kGiB, static_cast<double>(placed.device.budget_bytes) / kGiB,
             threshold, flops_per_s / 1e12);
  if (vs.peers == 1) return;
  fmt::print("{} peers over {} GB/s (the link of all {} devices), a global batch of {} tokens:\n", vs.peers,
             vs.link.bandwidth_gb_per_s, vs.peers, config.train.batch_tokens);
  fmt::print("  ATOM     {:>10.0f} tokens/s: a peer's step {:.3f} s; averaging the parameters takes {:.3f} s, {}\n",
             tokens_per_s(vs.atom_step_s), vs.peer_step_s, vs.round_s,
             atom_config(config).average_every > 0
                 ? fmt::format("one round every {} steps on its own thread{}", atom_config(config).average_every,
                               vs.atom_step_s > vs.peer_step_s ? ", longer than those steps: it paces them" : "")
                 : std::string("on every step's path (parallel.atom.average_every: 0)"));
  fmt::print("  pipeline {:>10.0f} tokens/s: GPipe over {} stages, {} micro-batches, {:.3f} s a step ({:.3f} s compute "
             "on the slowest path, {:.3f} s more from the links); a stage's own layers take {:.1f} GiB of state\n",
             tokens_per_s(vs.pipeline.seconds), vs.peers, vs.micro_batches, vs.pipeline.seconds,
             vs.pipeline.compute_s, vs.pipeline.comm_s, vs.stage_state_gib);
  fmt::print("  ATOM / pipeline: {:.2f}x; averaging every {} steps or more keeps the round off the step's path: "
             "{:.0f} tokens/s, {:.2f}x\n", vs.pipeline.seconds / vs.atom_step_s, vs.hiding_every,
             tokens_per_s(vs.peer_step_s), vs.pipeline.seconds / vs.peer_step_s);
}

}  // namespace trident
