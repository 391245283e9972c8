#include "parallel/atom/placement.h"

#include <unistd.h>

#include <limits>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "core/model/activations.h"
#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/atom/config.h"
#include "parallel/atom/swapper.h"
#include "parallel/placement/capacity.h"

namespace trident {

namespace {

int64_t placed_bytes(const Config& config, Precision precision, Device device, const std::vector<int>& starts,
                     int recomputed, int offloaded, int slots, int64_t tokens, int64_t round_tokens) {
  const Swapping swapping{
      .sub_model_starts = starts, .recomputed = recomputed, .offloaded = offloaded, .round_tokens = round_tokens};
  return SubModelRunner::memory_bytes(config.model, tokens, precision, device, swapping) +
         LayerSwapper::device_bytes(config.model, starts, slots, precision);
}

}  // namespace

bool swaps(const Config& config) {
  const std::string& strategy = config.parallel.strategy;
  bool swap = strategy == "atom";
  if (strategy == "auto") {
    const Precision precision = precision_named(config.train.precision);
    const int64_t resident = GPT::memory_bytes(config.model, 1, precision, device_named(config.device.backend)) +
                             AdamW::memory_bytes(model_layout(config.model).num_params);
    swap = resident > static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  }
  if (!swap) return false;
  const std::string why = strategy == "atom" ? "parallel.strategy: atom"
                                             : "parallel.strategy: auto (the model does not fit device.memory_gb "
                                               "resident, so it swaps)";
  if (config.device.backend != "cpu" && atom_config(config).emulate_copy_gb_per_s > 0)
    throw_config_error("{}: parallel.atom.emulate_copy_gb_per_s = {} emulates a host <-> device link on the cpu "
                       "backend; device.backend '{}' copies over its real one (remove the key)",
                       why, atom_config(config).emulate_copy_gb_per_s, config.device.backend);
  return true;
}

std::vector<int> balanced_starts(int64_t layers, int64_t count) {
  std::vector<int> starts;
  int64_t at = 0;
  for (int64_t i = 0; i < count; ++i) {
    starts.push_back(static_cast<int>(at));
    at += layers / count + (i >= count - layers % count ? 1 : 0);  // the remainder goes to the last ones
  }
  return starts;
}

int64_t host_budget_bytes(const Config& config) {
  if (atom_config(config).host_memory_gb > 0)
    return static_cast<int64_t>(gib_to_bytes(atom_config(config).host_memory_gb));
  return host_memory_bytes();
}

void check_host_store(const Config& config, int64_t num_params, int peers_per_host, int64_t offload_bytes) {
  const int64_t store = 16 * num_params + offload_bytes, budget = host_budget_bytes(config);
  if (store * peers_per_host <= budget) return;
  throw_config_error("parallel.atom.host_memory_gb = {}{}: the host store of {} (16 bytes for each of {} parameters: "
                     "fp32 weights, gradients, AdamW m and v{}){} does not fit",
                     atom_config(config).host_memory_gb,
                     atom_config(config).host_memory_gb > 0
                         ? ""
                         : fmt::format(" (this machine: {})", format_bytes(static_cast<std::size_t>(budget))),
                     format_bytes(static_cast<std::size_t>(store)), num_params,
                     offload_bytes > 0 ? fmt::format("; {} of offloaded activations",
                                                     format_bytes(static_cast<std::size_t>(offload_bytes)))
                                       : "",
                     peers_per_host > 1 ? fmt::format(", once for each of {} peers on this host", peers_per_host) : "");
}

namespace {

int64_t activations_of(const ModelConfig& m, int64_t tokens, Precision precision) {
  return precision == Precision::bf16 ? activation_bytes<bf16>(m, tokens) : activation_bytes<float>(m, tokens);
}

// The seconds of a pass of `tokens` tokens, in documents of at most max_seq_len, by a fit of one sequence's time
// (alpha1 s^2 + alpha2 s a document; beta1, a call's fixed cost, once a pass when `with_fixed`).
double pass_seconds(const cost::ComputeSection& fit, int64_t tokens, int64_t max_seq_len, bool with_fixed) {
  double seconds = with_fixed ? fit.beta1_s : 0.0;
  for (int64_t left = tokens; left > 0; left -= max_seq_len) {
    const auto s = static_cast<double>(std::min(left, max_seq_len));
    seconds += fit.alpha1_s_per_token2 * s * s + fit.alpha2_s_per_token * s;
  }
  return seconds;
}

// The swap planner's view of this model and device for a pass of `tokens` tokens: identical layers, each with the
// forward and backward of one block measured inside the model (the profile's `layers` section), the rest (embeddings,
// LM head, loss) resident compute; without that section, the whole model's compute fit shared evenly by the layers
// (a forward a third). Layers below `recompute_below` are in recomputed sub-models (-1: every sub-model but the last,
// wherever the split falls), or with `offload` in sub-models that offload their activations.
void planner_inputs(const Config& config, Precision precision, Device device, const cost::Profile& profile,
                    int64_t tokens, int recompute_below, bool offload, AtomPlacement& placed) {
  const ModelConfig& m = config.model;
  const int64_t L = m.n_layer, value = activation_value_bytes(precision);
  ModelConfig one = m, two = m;
  one.n_layer = 1, two.n_layer = 2;
  const int64_t layer_params = model_layout(two).num_params - model_layout(one).num_params;
  const int64_t layer_acts = activations_of(two, tokens, precision) - activations_of(one, tokens, precision);
  const int64_t outside_params = model_layout(m).num_params - L * layer_params;  // embeddings, final norm
  double forward_s = 0, backward_s = 0, outside_s = 0;
  if (const std::optional<cost::LayersSection>& measured = profile.layers) {
    forward_s = pass_seconds(measured->block_forward, tokens, m.max_seq_len, true);
    backward_s = pass_seconds(measured->block_backward, tokens, m.max_seq_len, true);
    outside_s = pass_seconds(measured->outside, tokens, m.max_seq_len, true);
  } else {
    const double per_layer = pass_seconds(*profile.compute, tokens, m.max_seq_len, false) / static_cast<double>(L);
    forward_s = per_layer / 3, backward_s = per_layer * 2 / 3;
  }
  const int64_t recomputed_layers = recompute_below < 0 ? L : recompute_below;  // a bound when < 0
  placed.layers.clear();
  for (int64_t l = 0; l < L; ++l)
    placed.layers.push_back({.weight_bytes = layer_params * 4,  // the fp32 masters move
                             .grad_bytes = layer_params * 4,
                             .activation_bytes = l < recomputed_layers ? layer_acts : 0,
                             .forward_s = forward_s,
                             .backward_s = backward_s});
  const cost::Link h2d = *profile.network->host_to_device;
  const cost::Link d2h = profile.network->device_to_host.value_or(h2d);
  placed.device = {
      .budget_bytes = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb)),
      // always resident: embeddings and final norm with their gradients, the activations outside the layers
      // (embedding output, LM head chunk, backward scratch), the kept layers' activations and at most one boundary
      // checkpoint a recomputed layer
      .resident_bytes = outside_params * (8 + (precision == Precision::bf16 ? 2 : 0)) +
                        activations_of(one, tokens, precision) - layer_acts + (L - recomputed_layers) * layer_acts +
                        recomputed_layers * tokens * m.n_embd * value,
      .resident_compute_s = outside_s,
      .h2d_bytes_per_s = h2d.bandwidth_gb_per_s * 1e9,
      .d2h_bytes_per_s = d2h.bandwidth_gb_per_s * 1e9,
      .shared_copy_engine = true,  // the CPU's copy thread, and the CUDA backend's one copy stream
      .recompute_below = recompute_below,
      .offload = offload};
}

bool plans_with(const cost::Profile* profile) {
  return profile && profile->compute && profile->network && profile->network->host_to_device;
}

}  // namespace

AtomPlacement place_atom(const Config& config, Precision precision, Device device, const cost::Profile* profile,
                         int peers_per_host) {
  const ModelConfig& m = config.model;
  const int64_t L = m.n_layer, budget = static_cast<int64_t>(gib_to_bytes(config.device.memory_gb));
  const int64_t asked = atom_config(config).sub_models;
  if (asked > L)
    throw_config_error("parallel.atom.sub_models = {}: the model has only {} layers to split", asked, L);
  const int slots = static_cast<int>(atom_config(config).prefetch) + 1;
  check_host_store(config, model_layout(m).num_params, peers_per_host);
  if (plans_with(profile) && profile->model &&
      (profile->model->n_layer != m.n_layer || profile->model->n_embd != m.n_embd))
    throw_config_error("{}: the profile measured a model of {} layers of width {} (its 'model' section), this run's "
                       "has {} of width {} (model.n_layer, model.n_embd): its compute times do not describe this "
                       "model; measure one with trident bench profile",
                       profile->source, profile->model->n_layer, profile->model->n_embd, m.n_layer, m.n_embd);
  AtomPlacement placed;
  placed.slots = slots;
  const std::string& activations = atom_config(config).activations;
  // The leading sub-models that give up their activations: `count` of them, recomputed or offloaded.
  struct Stash {
    int count = 0;
    bool offload = false;
    // A batch in several passes (every sub-model but the last stashed) runs them sub-model by sub-model in rounds of
    // this many passes, each sub-model loading once a round (0: one round of the whole batch; 1: pass by pass, each
    // pass loading every sub-model again). The checkpoints hold a round.
    int64_t round_passes = 0;
    int recomputed() const { return offload ? 0 : count; }
    int offloaded() const { return offload ? count : 0; }
  };
  const int64_t N = config.train.batch_tokens;
  // Swapping::round_tokens for a pass of `tokens`: 0 when a pass holds the batch, the sub-models are not all stashed
  // but the last, or pass by pass.
  auto round_tokens = [&](const std::vector<int>& starts, Stash stash, int64_t tokens) -> int64_t {
    const bool all_but_last = starts.size() >= 2 && stash.count == static_cast<int>(starts.size()) - 1;
    if (tokens >= N || !all_but_last || stash.round_passes == 1) return 0;
    return stash.round_passes == 0 ? N : std::min(N, stash.round_passes * tokens);
  };
  auto bytes = [&](const std::vector<int>& starts, Stash stash, int64_t tokens) {
    return placed_bytes(config, precision, device, starts, stash.recomputed(), stash.offloaded(), slots, tokens,
                        round_tokens(starts, stash, tokens));
  };
  auto below = [](const std::vector<int>& starts, Stash stash) {
    return stash.count > 0 ? starts[static_cast<std::size_t>(stash.count)] : 0;
  };
  // The passes a batch takes when a pass holds `tokens`: whole documents, of the longest there can be
  // tokens / max_seq_len a pass, and at least train.micro_batches.
  auto passes_for = [&](int64_t tokens) {
    const int64_t whole = tokens < N && tokens >= m.max_seq_len ? tokens / m.max_seq_len * m.max_seq_len : tokens;
    return std::max(config.train.micro_batches, (N + whole - 1) / whole);
  };
  // The runs of the model a batch takes: rounds of passes run sub-model by sub-model, else passes.
  auto runs_for = [&](const std::vector<int>& starts, Stash stash, int64_t tokens) -> int64_t {
    const int64_t passes = passes_for(tokens);
    if (round_tokens(starts, stash, tokens) == 0) return passes;
    return stash.round_passes == 0 ? 1 : (passes + stash.round_passes - 1) / stash.round_passes;
  };
  // With a profile: the swap schedule of a batch's first run and of a later one (which also loads the gradients
  // accumulated so far), the batch spread over the runs; a round as one pass of its tokens, every sub-model but the
  // last stashed and, offloading, moving. Leaves placed.layers and placed.device those of a run.
  struct Prediction {
    cost::SwapPlan first, later;
    int64_t runs = 1;
    double batch_s() const { return first.step_s() + static_cast<double>(runs - 1) * later.step_s(); }
  };
  auto predict = [&](const std::vector<int>& starts, Stash stash, int64_t tokens) {
    Prediction p;
    p.runs = runs_for(starts, stash, tokens);
    const bool rounds = round_tokens(starts, stash, tokens) > 0;
    planner_inputs(config, precision, device, *profile, (N + p.runs - 1) / p.runs, rounds ? -1 : below(starts, stash),
                   stash.offload, placed);
    p.first = cost::evaluate_swaps(placed.layers, placed.device, starts);
    cost::SwapDevice later = placed.device;
    later.accumulating = true;
    p.later = cost::evaluate_swaps(placed.layers, later, starts);
    return p;
  };
  // The most tokens a pass of this placement holds, up to a batch (0: not one).
  auto capacity = [&](const std::vector<int>& starts, Stash stash) -> int64_t {
    if (bytes(starts, stash, N) <= budget) return N;
    if (bytes(starts, stash, 1) > budget) return 0;
    int64_t lo = 1, hi = N;  // lo fits, hi does not
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (bytes(starts, stash, mid) <= budget ? lo : hi) = mid;
    }
    return lo;
  };
  // With a profile, the fastest predicted, in one pass or several (run sub-model by sub-model, a batch's passes load
  // each sub-model once, as one pass does). Without, of the candidates that hold a whole batch in a pass the one that
  // stashes the fewest layers, then has the fewest sub-models.
  struct PlacementCandidate {
    std::vector<int> starts;
    Stash stash;
    int64_t tokens = 0;
    double score = std::numeric_limits<double>::infinity();
  };
  PlacementCandidate whole, partial;
  auto consider = [&](const std::vector<int>& starts, Stash stash, int64_t fit) {
    double score = static_cast<double>(below(starts, stash) * (L + 1) + static_cast<int64_t>(starts.size()));
    if (plans_with(profile)) score = predict(starts, stash, fit).batch_s();
    PlacementCandidate& best = fit == N ? whole : partial;
    if (score < best.score) best = {starts, stash, fit, score};
  };
  // The fewest stashed sub-models that hold a whole batch (device bytes need not fall with each one more when
  // offloading: the two workspaces hold the widest of them twice), if any do.
  auto fewest = [&](const std::vector<int>& starts, bool offload) {
    for (int count = 0; count < static_cast<int>(starts.size()); ++count)
      if (bytes(starts, {count, offload}, N) <= budget) return consider(starts, {count, offload}, N);
  };
  // A batch in several passes: every pass in one round, pass by pass, and rounds of 2, 4, ... passes.
  std::vector<int64_t> round_sizes = {0, 1};
  for (int64_t r = 2; r < N / m.max_seq_len; r *= 2) round_sizes.push_back(r);
  const bool may_offload = activations == "offload" || (activations == "auto" && plans_with(profile));
  const bool may_recompute = activations == "recompute" || activations == "auto";
  for (int64_t count = asked > 0 ? asked : 1; count <= (asked > 0 ? asked : L); ++count) {
    const std::vector<int> starts = balanced_starts(L, count);
    const int all_but_last = static_cast<int>(count) - 1;
    if (activations == "keep") {
      if (bytes(starts, {}, N) <= budget) consider(starts, {}, N);
      continue;
    }
    if (activations == "recompute") {
      if (bytes(starts, {all_but_last, false}, N) <= budget) consider(starts, {all_but_last, false}, N);
    } else {  // auto: the fewest recomputed, and with a profile the fewest offloaded; offload: the fewest offloaded
      if (may_recompute) fewest(starts, false);
      if (may_offload) fewest(starts, true);
    }
    // With a profile, the split in several passes too, stashing all but the last sub-model for the most tokens a
    // pass, in each of the round sizes.
    if (plans_with(profile))
      for (bool offload : {false, true}) {
        if (!(offload ? may_offload : may_recompute)) continue;
        for (int64_t passes : round_sizes) {
          const Stash most{all_but_last, offload, passes};
          // a pass must hold the longest document there can be
          if (const int64_t fit = capacity(starts, most); fit >= std::min(N, m.max_seq_len) && fit < N)
            consider(starts, most, fit);
        }
      }
  }
  if (plans_with(profile) && may_recompute) {  // the planner's own split, recomputing all but the last
    planner_inputs(config, precision, device, *profile, N, -1, false, placed);
    if (const std::optional<cost::SwapPlan> plan =
            cost::plan_swaps(placed.layers, placed.device, static_cast<int>(asked));
        plan && bytes(plan->starts, {plan->sub_models() - 1, false}, N) <= budget)
      consider(plan->starts, {plan->sub_models() - 1, false}, N);
  }
  const PlacementCandidate& best = whole.tokens > 0 && whole.score <= partial.score ? whole : partial;
  placed.sub_model_starts = best.starts;
  Stash chosen = best.stash;
  int64_t tokens = best.tokens;
  if (placed.sub_model_starts.empty() && activations == "keep")
    throw_config_error("parallel.atom.activations: keep: every layer's activations for a pass of {} tokens "
                       "(train.batch_tokens) beside {} device slot(s) do not fit device.memory_gb = {}; use auto, "
                       "recompute or offload, or lower train.batch_tokens",
                       N, std::min<int64_t>(slots, asked > 0 ? asked : L), config.device.memory_gb);
  if (placed.sub_model_starts.empty()) {  // not even the finest split holds a batch: fewer tokens a pass
    const int64_t count = asked > 0 ? asked : L;
    const std::vector<int> starts = balanced_starts(L, count);
    Stash stash{static_cast<int>(count) - 1, activations == "offload"};
    // sub-model by sub-model in as few rounds as hold a pass of the longest document, else pass by pass
    for (int64_t round_passes = N / std::min(N, m.max_seq_len); round_passes > 1; round_passes /= 2) {
      stash.round_passes = round_passes;
      if (bytes(starts, stash, std::min(N, m.max_seq_len)) <= budget) break;
    }
    if (bytes(starts, stash, std::min(N, m.max_seq_len)) > budget) stash.round_passes = 1;
    if (bytes(starts, stash, 1) > budget)
      throw_config_error("device.memory_gb = {}{}: {} sub-model(s) of up to {} layer(s) need {} on the device ({} "
                         "slot(s) of weights and gradients, the embeddings, one token's activations) and only {} is "
                         "there; raise device.memory_gb{}",
                         config.device.memory_gb,
                         asked > 0 ? fmt::format(" with parallel.atom.sub_models = {}", asked) : "", count,
                         (L + count - 1) / count, format_bytes(static_cast<std::size_t>(bytes(starts, stash, 1))),
                         std::min<int64_t>(slots, count), format_bytes(static_cast<std::size_t>(budget)),
                         count < L    ? " or parallel.atom.sub_models"
                         : slots > 2  ? " or lower parallel.atom.prefetch"
                                      : "");
    placed.sub_model_starts = starts;
    chosen = stash;
    tokens = capacity(starts, stash);
  }
  placed.recomputed = chosen.recomputed();
  placed.offloaded = chosen.offloaded();
  placed.tokens = tokens;
  placed.round_tokens = round_tokens(placed.sub_model_starts, chosen, tokens);
  const Swapping swapping{
      .sub_model_starts = placed.sub_model_starts, .offloaded = placed.offloaded, .round_tokens = placed.round_tokens};
  const int64_t offload_bytes = SubModelRunner::offload_bytes(m, tokens, precision, swapping);
  check_host_store(config, model_layout(m).num_params, peers_per_host, offload_bytes);
  placed.host_bytes = 16 * model_layout(m).num_params + offload_bytes;
  placed.passes = passes_for(tokens);
  placed.pass_tokens = (N + placed.passes - 1) / placed.passes;
  placed.device_bytes = bytes(placed.sub_model_starts, chosen, tokens);
  placed.runs = runs_for(placed.sub_model_starts, chosen, tokens);
  if (plans_with(profile)) {
    const Prediction p = predict(placed.sub_model_starts, chosen, tokens);
    placed.predicted = p.first;
    if (p.runs > 1) placed.predicted_later = p.later;
  }
  return placed;
}

void log_placement(const AtomPlacement& placement, const Config& config, const Allocator& device,
                   const Allocator& store) {
  const std::vector<int>& starts = placement.sub_model_starts;
  const bool sub_model_major = placement.round_tokens > 0;  // every sub-model but the last stashed
  const int moving = placement.moving_sub_models();
  spdlog::info("atom: {} sub-model(s) {} in {} device slot(s), {} tokens a pass{}, activations {}; device {} of {} "
               "(device.memory_gb), host store {} of {}",
               starts.size(), cost::describe_swaps(starts, static_cast<int>(config.model.n_layer)),
               std::min<std::size_t>(starts.size(), placement.slots), placement.tokens,
               sub_model_major ? fmt::format(" (a batch's {} passes run sub-model by sub-model in {} round(s), each "
                                           "sub-model loading once a round)", placement.passes, placement.runs)
                             : "",
               placement.recomputed > 0
                   ? fmt::format("recomputed in the first {} sub-model(s), kept in the rest", placement.recomputed)
               : moving > 0
                   ? fmt::format("offloaded to the host in the first {} sub-model(s) and back for their backward, "
                                 "kept in the rest", moving)
                   : std::string("kept"),
               format_bytes(static_cast<std::size_t>(placement.device_bytes)), format_bytes(device.budget()),
               format_bytes(store.in_use()), format_bytes(store.budget()));
  if (const std::optional<cost::SwapPlan>& p = placement.predicted)
    spdlog::info("atom: predicted from {}: {} {:.3f} s, {:.3f} s of it copies left exposed",
                 config.parallel.select_profile, placement.runs == 1 ? "step" : sub_model_major ? "first round"
                                                                                              : "first pass",
                 p->step_s(), p->exposed_copy_s);
}

}  // namespace trident
