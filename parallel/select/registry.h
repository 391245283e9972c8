#pragma once
// The strategies a run can use, from its config: a table of strategy families (parallel/strategy_entry.h), one line a
// family in registry.cpp. Nothing here names a strategy; a new one is a folder under parallel/ with its entry, and a
// line in the table.
#include <memory>
#include <string>
#include <vector>

#include "parallel/strategy_entry.h"

namespace trident {

// The registered families, in the order their candidates are listed under parallel.strategy: auto (the selector
// takes the first of equally cheap ones): dp, ATOM's averaging peers, static sequence parallelism by group size,
// FlexSP, the pipeline.
const std::vector<const StrategyEntry*>& strategy_entries();

// Adds a family after the built-in ones, until unregister_strategy: how a program or a test plugs in a strategy of
// its own.
void register_strategy(const StrategyEntry& entry);
void unregister_strategy(const StrategyEntry& entry);

// The family whose names include `name` (a parallel.strategy value), or nullptr.
const StrategyEntry* family_named(const std::string& name);

// The family that runs alone: the one that takes the run over, else the one parallel.strategy names; nullptr under
// auto. A ConfigError when parallel.strategy names no registered family.
const StrategyEntry* chosen_family(const Config& config);

// The candidates parallel.strategy allows on `world` ranks: those of a family that takes the run over (ATOM with a
// swapped model); else, under auto, every family's candidates in table order; else the candidates of the family
// parallel.strategy names. A fixed candidate the model or the world cannot run is a ConfigError naming the key (no
// collective).
std::vector<CandidateSpec> run_candidates(const Config& config, int world);

// The group sizes those candidates use (what RunGroups makes at start-up).
std::vector<int> candidate_degrees(const Config& config, int world);

// parallel.zero.stage > 0 applies to every one of those candidates (StrategyEntry::shardable): else a ConfigError
// naming the key and the family that cannot take it. Pure.
void check_sharding_applies(const Config& config, int world);

// The strategies of those candidates. Collective over env.groups.world().
std::vector<std::unique_ptr<Strategy>> make_strategies(const StrategyEnv& env);

// Where the run's model is, from the family that places it (StrategyEntry::place), or nullptr: a resident model of
// every layer. On every rank of `ranks`.
std::unique_ptr<ModelPlacement> place_model(const Config& config, Precision precision, Device device,
                                            Communicator& ranks);

// The same candidates as pure Candidates (no communicator), for `trident plan` on a described cluster of `world`
// ranks, from the families that plan this way (FlexSP has a planner of its own; ATOM and the pipeline none here).
std::vector<std::unique_ptr<Candidate>> plan_candidates(const Config& config, int world, int64_t capacity,
                                                        Device device);

}  // namespace trident
