#pragma once
// Setting up the choice of strategy for a training run: the checks before any work starts, and the selector.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "parallel/select/selector.h"

namespace trident {

// The run the estimates are for.
cost::RunShape run_shape(const Config& config, const RunGroups& groups);

// Before any work: what parallel.strategy and parallel.select.* ask is possible on this run, and a document of
// model.max_seq_len fits the largest group within `capacity` tokens a rank. A ConfigError naming the key or file
// otherwise. Returns the cost model of parallel.select.profile when it names a file.
std::optional<cost::StepCostModel> check_selection(const Config& config, const RunGroups& groups, int64_t capacity);

// The selector of the run: its strategies (collective), and the cost model `profile`; without one and with a choice
// to make, a profile measured now on `model` (parallel/select/calibrate.h), which rank 0 also writes to
// RUN_DIR/profile.yaml for a later run's parallel.select.profile.
std::unique_ptr<Selector> make_selector(const StrategyEnv& env, std::optional<cost::StepCostModel> profile,
                                        GPT& model, const std::filesystem::path& run_dir);

}  // namespace trident
