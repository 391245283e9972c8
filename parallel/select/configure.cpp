#include "parallel/select/configure.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "parallel/select/calibrate.h"
#include "parallel/select/registry.h"

namespace trident {

cost::RunShape run_shape(const Config& config, const RunGroups& groups) {
  return run_shape(config, groups.world_size(), groups.nodes(), groups.ranks_per_node());
}

std::optional<cost::Profile> check_selection(const Config& config, const RunGroups& groups, int64_t capacity) {
  const ParallelConfig& p = config.parallel;
  const int world = static_cast<int>(groups.world_size());
  const std::vector<CandidateSpec> candidates = run_candidates(config, world);
  int largest = 1;
  for (const CandidateSpec& l : candidates) largest = std::max(largest, l.degree == 0 ? world : l.degree);
  const int64_t per_rank = (config.model.max_seq_len + largest - 1) / largest;
  if (per_rank > capacity)
    throw_config_error("model.max_seq_len = {}: a document that long puts {} tokens on each rank of the largest group "
                       "parallel.strategy: {} can use here ({} rank(s)), above the activation capacity of {} tokens "
                       "a rank (device.memory_gb = {}): raise device.memory_gb, lower model.max_seq_len, or run on "
                       "more ranks",
                       config.model.max_seq_len, per_rank, p.strategy, largest, capacity, config.device.memory_gb);
  if (p.select_mode == "model" && p.select_profile.empty() && candidates.size() > 1)
    throw_config_error("parallel.select.mode: model makes each choice a pure function of the batch and the profile, "
                       "so it needs parallel.select.profile (a file: a measured run writes RUN_DIR/profile.yaml)");
  if (p.select_profile.empty()) return std::nullopt;
  cost::Profile profile = cost::read_profile(p.select_profile);
  cost::StepCostModel::from_profile(profile, run_shape(config, groups));  // its checks
  return profile;
}

std::unique_ptr<Selector> make_selector(StrategyEnv env, std::optional<cost::Profile> profile, GPT& model,
                                        const std::filesystem::path& run_dir) {
  const std::vector<CandidateSpec> candidates = run_candidates(env.config, env.groups.world().size());
  const bool plans =
      std::any_of(candidates.begin(), candidates.end(), [](const CandidateSpec& l) { return l.degree == 0; });
  if (!profile && (candidates.size() > 1 || plans)) {
    profile = measure_run_profile(model, env.groups, env.config, env.capacity_tokens);
    if (env.groups.world().rank() == 0) {
      const std::filesystem::path file = run_dir / "profile.yaml";
      cost::merge_profile_into(file, *profile);
      spdlog::info("parallel.strategy: {}: measured this run's profile at start-up ({}; {}), written to {}",
                   env.config.parallel.strategy, profile->compute->fitted_from, describe_links(*profile->network),
                   file.string());
    }
  }
  env.profile = profile ? &*profile : nullptr;
  std::vector<std::unique_ptr<Strategy>> strategies = make_strategies(env);
  const Selector::Mode mode =
      env.config.parallel.select_mode == "model" ? Selector::Mode::model : Selector::Mode::measured;
  std::optional<cost::StepCostModel> cost;
  if (profile) cost = cost::StepCostModel::from_profile(*profile, run_shape(env.config, env.groups));
  std::string names;
  for (const auto& s : strategies) names += (names.empty() ? "" : ", ") + s->name();
  spdlog::info("parallel.strategy: {}: {} candidate(s): {}{}", env.config.parallel.strategy, strategies.size(), names,
               cost ? ", estimated from " + cost->source() : "");
  return std::make_unique<Selector>(std::move(strategies), std::move(cost), mode, env.groups.world());
}

}  // namespace trident
