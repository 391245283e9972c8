#include "app/plan/atom_plan.h"

#include <algorithm>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "parallel/atom/placement.h"
#include "parallel/cost/profile.h"
#include "parallel/cost/swap_plan.h"

namespace trident::app::plan {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
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
  const Device device = device_named(config.device.backend);
  // What training would do: the same placement (parallel/atom/placement.h).
  const AtomPlacement placed = place_atom(config, precision, device, &profile);
  const cost::SwapPlan& plan = *placed.predicted;
  const int64_t L = m.n_layer, N = placed.tokens;
  const cost::LayerCost& layer = placed.layers.front();
  const double host_gib = static_cast<double>(host_budget_bytes(config)) / kGiB;
  // The overlap rule: a layer's load hides under its forward once a pass has n >= b R / (2 BW) tokens, R the FLOP/s
  // the profile implies (2 flops a parameter a token, forward), b the bytes a parameter moves.
  const double layer_params = static_cast<double>(layer.weight_bytes) / 4;
  const double flops_per_s = 2.0 * layer_params * static_cast<double>(N) / layer.forward_s;
  const double threshold = 4.0 * flops_per_s / (2 * placed.device.h2d_bytes_per_s);
  const double resident_s = static_cast<double>(L) * (layer.forward_s + layer.backward_s);  // no copies, no recompute
  // A whole batch: the first pass, then the later ones, which also load the gradients accumulated so far.
  const auto later_passes = static_cast<double>(placed.passes - 1);
  const double batch_s = plan.step_s() + later_passes * placed.predicted_later->step_s();
  const double batch_exposed_s = plan.exposed_copy_s + later_passes * placed.predicted_later->exposed_copy_s;
  if (json) {
    nlohmann::ordered_json j = {{"layers", L},
                                {"sub_models", plan.sub_models()},
                                {"partition", plan.starts},
                                {"tokens_per_pass", N},
                                {"passes", placed.passes},
                                {"batch_step_s", batch_s},
                                {"batch_exposed_copy_s", batch_exposed_s},
                                {"recomputed_sub_models", placed.recomputed},
                                {"forward_s", plan.forward_s},
                                {"backward_s", plan.backward_s},
                                {"step_s", plan.step_s()},
                                {"hidden_copies_step_s", plan.compute_s},
                                {"resident_step_s", resident_s},
                                {"exposed_copy_s", plan.exposed_copy_s},
                                {"peak_bytes", placed.device_bytes},
                                {"budget_bytes", placed.device.budget_bytes},
                                {"host_store_bytes", placed.host_bytes},
                                {"overlap_threshold_tokens", threshold}};
    fmt::print("{}\n", j.dump());
    return;
  }
  const double model_gib =
      static_cast<double>(L * (layer.weight_bytes + layer.grad_bytes + layer.activation_bytes)) / kGiB;
  fmt::print("ATOM swap plan: {} layers ({:.3f} GiB of weights, gradients and activations) on {} GiB of device memory; "
             "{} GB/s host to device, {} GB/s back, {} copy engine(s); a pass of {} tokens\n",
             L, model_gib, config.device.memory_gb, placed.device.h2d_bytes_per_s / 1e9,
             placed.device.d2h_bytes_per_s / 1e9, placed.device.shared_copy_engine ? 1 : 2, N);
  fmt::print("  sub-models: {} {} in {} device slot(s)\n", plan.sub_models(),
             cost::describe_swaps(plan.starts, static_cast<int>(L)), std::min(placed.slots, plan.sub_models()));
  fmt::print("  predicted step {:.3f} s (forward {:.3f} s, backward {:.3f} s{}): {:.3f} s of copies "
             "exposed, {:.2f}x the throughput of the same schedule with every copy hidden; every layer resident (no "
             "copies, no recompute) would take {:.3f} s ({:.2f}x)\n",
             plan.step_s(), plan.forward_s, plan.backward_s,
             placed.recomputed > 0 ? fmt::format(", the first {} sub-model(s) recomputed", placed.recomputed)
                                   : ", every layer's activations kept",
             plan.exposed_copy_s, plan.compute_s / plan.step_s(),
             resident_s, resident_s / plan.step_s());
  if (placed.passes > 1)
    fmt::print("  a batch of {} tokens takes {} passes: {:.3f} s, {:.3f} s of copies exposed (the later passes also "
               "load the gradients accumulated so far)\n",
               config.train.batch_tokens, placed.passes, batch_s, batch_exposed_s);
  fmt::print("  host store {:.2f} GiB of {:.1f} GiB host memory (fp32 weights, gradients, AdamW m and v)\n",
             static_cast<double>(placed.host_bytes) / kGiB, host_gib);
  fmt::print("  device memory {:.3f} of {:.3f} GiB; loads hide under compute from about {:.0f} tokens a pass "
             "(overlap rule, {:.1f} TFLOP/s implied by the profile)\n",
             static_cast<double>(placed.device_bytes) / kGiB, static_cast<double>(placed.device.budget_bytes) / kGiB,
             threshold, flops_per_s / 1e12);
}

}  // namespace trident::app::plan
