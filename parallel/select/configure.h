#pragma once
// Setting up the choice of strategy for a training run: the checks before any work starts, and the selector.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "parallel/placement/run_shape.h"
#include "parallel/select/selector.h"

namespace trident {

// The run the estimates are for (parallel/placement/run_shape.h), for the ranks of this run.
cost::RunShape run_shape(const Config& config, const RunGroups& groups);

// Before any work: what parallel.strategy and parallel.select.* ask is possible on this run, and a document of
// model.max_seq_len fits the largest group within `capacity` tokens a rank. A ConfigError naming the key or file
// otherwise. Returns the profile parallel.select.profile names (checked to describe this run), if any.
std::optional<cost::Profile> check_selection(const Config& config, const RunGroups& groups, int64_t capacity);

// The selector of the run: its strategies (collective) and the cost model of `profile`. Without a profile, when
// there is a choice to make or a strategy plans with one (FlexSP), a profile is measured now on `model`
// (parallel/select/calibrate.h), and rank 0 writes it to RUN_DIR/profile.yaml for a later run's
// parallel.select.profile.
std::unique_ptr<Selector> make_selector(StrategyEnv env, std::optional<cost::Profile> profile, GPT& model,
                                        const std::filesystem::path& run_dir);

}  // namespace trident
