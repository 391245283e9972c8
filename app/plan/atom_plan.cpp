#include "app/plan/atom_plan.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/model/activations.h"
#include "core/model/gpt.h"
#include "core/model/layout.h"
#include "kernels/common/error.h"
#include "parallel/cost/profile.h"
#include "parallel/cost/swap_plan.h"

namespace trident::app::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double physical_memory_gib() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE)) / kGiB;
}

int64_t activations_of(const ModelConfig& m, int64_t tokens, Precision precision) {
  return precision == Precision::bf16 ? activation_bytes<bf16>(m, tokens) : activation_bytes<float>(m, tokens);
}

}  // namespace

void print_atom_plan(const Config& config, const std::string& profile_file, bool json) {
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
  const int64_t N = config.train.batch_tokens, L = m.n_layer;

  // The host store: fp32 weights, gradients and AdamW m and v of the whole model.
  const int64_t num_params = model_layout(m).num_params;
  const double store_gib = 16.0 * static_cast<double>(num_params) / kGiB;
  const double host_gib = config.parallel.atom_host_memory_gb > 0 ? config.parallel.atom_host_memory_gb
                                                                  : physical_memory_gib();
  if (store_gib > host_gib)
    throw_config_error("parallel.atom.host_memory_gb = {}{}: the host store of {:.2f} GiB (16 bytes for each of {} "
                       "parameters: fp32 weights, gradients, AdamW m and v) does not fit",
                       config.parallel.atom_host_memory_gb,
                       config.parallel.atom_host_memory_gb > 0
                           ? ""
                           : fmt::format(" (this machine: {:.1f} GiB)", host_gib),
                       store_gib, num_params);

  // One layer, exactly: the difference between the model with two layers and with one.
  ModelConfig one = m, two = m;
  one.n_layer = 1, two.n_layer = 2;
  const int64_t layer_params = model_layout(two).num_params - model_layout(one).num_params;
  const int64_t layer_acts = activations_of(two, N, precision) - activations_of(one, N, precision);
  const int64_t value = activation_value_bytes(precision);
  const int64_t outside_params = num_params - L * layer_params;  // embeddings, final norm

  // Forward and backward of the pass on one device from the profile's fit of the whole model, shared evenly by the
  // layers: a forward is a third of forward + backward.
  const cost::ComputeSection& c = *profile.compute;
  double pass_s = 0;
  for (int64_t left = N; left > 0; left -= m.max_seq_len) {
    const auto s = static_cast<double>(std::min(left, m.max_seq_len));
    pass_s += c.alpha1_s_per_token2 * s * s + c.alpha2_s_per_token * s;
  }
  const double per_layer = pass_s / static_cast<double>(L);
  const cost::LayerCost layer{.weight_bytes = layer_params * value,
                              .grad_bytes = layer_params * 4,  // gradients are fp32
                              .activation_bytes = layer_acts,
                              .forward_s = per_layer / 3,
                              .backward_s = per_layer * 2 / 3};
  const std::vector<cost::LayerCost> layers(static_cast<std::size_t>(L), layer);
  const cost::Link h2d = *profile.network->host_to_device;
  const cost::Link d2h = profile.network->device_to_host.value_or(h2d);
  const cost::SwapDevice device{
      .budget_bytes = static_cast<int64_t>(config.device.memory_gb * kGiB),
      // always resident: embeddings and final norm with their gradients, the activations outside the layers
      // (embedding output, LM head chunk, backward scratch) and each layer's boundary checkpoint
      .resident_bytes = outside_params * (value + 4) + activations_of(one, N, precision) - layer_acts +
                        L * N * m.n_embd * value,
      .h2d_bytes_per_s = h2d.bandwidth_gb_per_s * 1e9,
      .d2h_bytes_per_s = d2h.bandwidth_gb_per_s * 1e9,
      .shared_copy_engine = config.device.backend == "cpu"};
  const int sub_models = static_cast<int>(config.parallel.atom_sub_models);
  if (sub_models > L)
    throw_config_error("parallel.atom.sub_models = {}: the model has only {} layers to split", sub_models, L);
  const std::optional<cost::SwapPlan> plan = cost::plan_swaps(layers, device, sub_models);
  // The finest split a count allows: its largest sub-models hold ceil(L / count) layers.
  const int64_t widest = sub_models > 0 ? (L + sub_models - 1) / sub_models : 1;
  if (!plan)
    throw_config_error("device.memory_gb = {}: no split of the {} layers fits{}: two neighbouring sub-models of {} "
                       "layer(s) need {:.3f} GiB beside {:.3f} GiB always resident (a pass of {} tokens); raise "
                       "device.memory_gb{} or lower train.batch_tokens",
                       config.device.memory_gb, L,
                       sub_models > 0 ? fmt::format(" in parallel.atom.sub_models = {} sub-models", sub_models) : "",
                       widest,
                       static_cast<double>(widest * (2 * (layer.weight_bytes + layer.grad_bytes) + layer_acts)) / kGiB,
                       static_cast<double>(device.resident_bytes) / kGiB, N,
                       sub_models > 0 ? ", raise parallel.atom.sub_models" : "");
  // The overlap rule: a layer's load hides under its forward once a pass has n >= b R / (2 BW) tokens, R the FLOP/s
  // the profile implies (2 flops a parameter a token, forward).
  const double flops_per_s = 2.0 * static_cast<double>(layer_params) * static_cast<double>(N) / layer.forward_s;
  const double threshold = static_cast<double>(value) * flops_per_s / (2 * device.h2d_bytes_per_s);
  const double resident_s = pass_s;  // every layer on the device: no copies, no recompute
  if (json) {
    nlohmann::ordered_json j = {{"layers", L},
                                {"sub_models", plan->sub_models()},
                                {"partition", plan->starts},
                                {"tokens_per_pass", N},
                                {"forward_s", plan->forward_s},
                                {"backward_s", plan->backward_s},
                                {"step_s", plan->step_s()},
                                {"hidden_copies_step_s", plan->compute_s},
                                {"resident_step_s", resident_s},
                                {"exposed_copy_s", plan->exposed_copy_s},
                                {"peak_bytes", plan->peak_bytes},
                                {"budget_bytes", device.budget_bytes},
                                {"host_store_bytes", 16 * num_params},
                                {"overlap_threshold_tokens", threshold}};
    fmt::print("{}\n", j.dump());
    return;
  }
  const double model_gib = static_cast<double>(L * (layer.weight_bytes + layer.grad_bytes + layer_acts)) / kGiB;
  fmt::print("ATOM swap plan: {} layers ({:.3f} GiB of weights, gradients and activations) on {} GiB of device memory; "
             "{} GB/s host to device, {} GB/s back, {} copy engine(s); a pass of {} tokens\n",
             L, model_gib, config.device.memory_gb, h2d.bandwidth_gb_per_s, d2h.bandwidth_gb_per_s,
             device.shared_copy_engine ? 1 : 2, N);
  fmt::print("  sub-models: {} {}\n", plan->sub_models(), cost::describe_swaps(*plan, static_cast<int>(L)));
  fmt::print("  predicted step {:.3f} s (forward {:.3f} s, backward {:.3f} s with recompute): {:.3f} s of copies "
             "exposed, {:.2f}x the throughput of the same schedule with every copy hidden; every layer resident (no "
             "copies, no recompute) would take {:.3f} s ({:.2f}x)\n",
             plan->step_s(), plan->forward_s, plan->backward_s, plan->exposed_copy_s,
             plan->compute_s / plan->step_s(), resident_s, resident_s / plan->step_s());
  fmt::print("  host store {:.2f} GiB of {:.1f} GiB host memory (fp32 weights, gradients, AdamW m and v)\n", store_gib,
             host_gib);
  fmt::print("  peak device memory {:.3f} of {:.3f} GiB; loads hide under compute from about {:.0f} tokens a pass "
             "(overlap rule, {:.1f} TFLOP/s implied by the profile)\n",
             static_cast<double>(plan->peak_bytes) / kGiB, static_cast<double>(device.budget_bytes) / kGiB, threshold,
             flops_per_s / 1e12);
}

}  // namespace trident::app::plan
