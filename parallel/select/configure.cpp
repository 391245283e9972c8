#include "parallel/select/configure.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "parallel/select/calibrate.h"
#include "parallel/select/registry.h"

namespace trident {

cost::RunShape run_shape(const Config& config, const RunGroups& groups) {
  const ModelConfig& m = config.model;
  return {.world = groups.world_size(),
          .nodes = groups.nodes(),
          .ranks_per_node = groups.ranks_per_node(),
          .n_layer = m.n_layer,
          .n_embd = m.n_embd,
          .n_head = m.n_head,
          .num_params = model_layout(m).num_params,
          .bytes_per_value = config.train.precision == "bf16" ? 2 : 4};
}

std::optional<cost::StepCostModel> check_selection(const Config& config, const RunGroups& groups, int64_t capacity) {
  const ParallelConfig& p = config.parallel;
  const int world = static_cast<int>(groups.world_size());
  const std::vector<LayoutSpec> layouts = candidate_layouts(config, world);
  int largest = 1;
  for (const LayoutSpec& l : layouts) largest = std::max(largest, l.sp_size);
  const int64_t per_rank = (config.model.max_seq_len + largest - 1) / largest;
  if (per_rank > capacity)
    throw_config_error("model.max_seq_len = {}: a document that long puts {} tokens on each rank of the largest group "
                       "parallel.strategy: {} can use here ({} rank(s)), above the activation capacity of {} tokens "
                       "a rank (device.memory_gb = {}): raise device.memory_gb, lower model.max_seq_len, or run on "
                       "more ranks",
                       config.model.max_seq_len, per_rank, p.strategy, largest, capacity, config.device.memory_gb);
  if (p.select_mode == "model" && p.select_profile.empty() && layouts.size() > 1)
    throw_config_error("parallel.select.mode: model makes each choice a pure function of the batch and the profile, "
                       "so it needs parallel.select.profile (a file: a measured run writes RUN_DIR/profile.yaml)");
  if (p.select_profile.empty()) return std::nullopt;
  return cost::StepCostModel::from_profile(cost::read_profile(p.select_profile), run_shape(config, groups));
}

std::unique_ptr<Selector> make_selector(const StrategyEnv& env, std::optional<cost::StepCostModel> profile,
                                        GPT& model, const std::filesystem::path& run_dir) {
  std::vector<std::unique_ptr<Strategy>> strategies = make_strategies(env);
  const Selector::Mode mode =
      env.config.parallel.select_mode == "model" ? Selector::Mode::model : Selector::Mode::measured;
  if (!profile && strategies.size() > 1) {
    cost::Profile measured = measure_run_profile(model, env.groups, env.config, env.capacity_tokens);
    profile = cost::StepCostModel::from_profile(measured, run_shape(env.config, env.groups));
    if (env.groups.world().rank() == 0) {
      const std::filesystem::path file = run_dir / "profile.yaml";
      cost::merge_profile_into(file, measured);
      spdlog::info("parallel.strategy: auto: measured this run's profile at start-up ({}; {}), written to {}",
                   measured.compute->fitted_from, describe_links(*measured.network), file.string());
    }
  }
  std::string names;
  for (const auto& s : strategies) names += (names.empty() ? "" : ", ") + s->name();
  spdlog::info("parallel.strategy: {}: {} candidate(s): {}{}", env.config.parallel.strategy, strategies.size(), names,
               profile ? ", estimated from " + profile->source() : "");
  return std::make_unique<Selector>(std::move(strategies), std::move(profile), mode, env.groups.world());
}

}  // namespace trident
