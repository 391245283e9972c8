#pragma once
// What a strategy family registers: the values of parallel.strategy that choose it, the candidates it offers a run,
// and how each is built. A family defines its entry in its own folder (entry.{h,cpp}); parallel/select/registry.cpp
// holds the table, one line a family, and select/ iterates it without naming any.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallel/placement/model_placement.h"
#include "parallel/strategy.h"

namespace trident {

struct StrategyEntry;

// One candidate: a method on groups of `degree` ranks (the sequence-parallel degree), and the family that builds it
// (set by the registry).
struct CandidateSpec {
  std::string method;  // a Candidate::method(), or "lasp": LASP with its variant measured on the group
  int degree = 1;      // 0: groups of several degrees, planned per micro-batch
  const StrategyEntry* family = nullptr;
};

// One batch `trident plan` plans: its sequences' lengths.
struct PlanBatch {
  std::vector<int64_t> lengths;
  int64_t over_max_seq_len = 0;  // documents left out for exceeding model.max_seq_len
};

// What `trident plan` hands a family that prints a plan of its own, and `trident bench` a family's benchmark.
struct PlanRequest {
  std::string profile;  // --cluster FILE, or "": the family's configured default
  bool json = false;    // one JSON object per batch (or per plan) instead of text
  std::function<std::vector<PlanBatch>()> batches;  // the batches to plan, drawn as --lengths etc. say
  // The registered family parallel.strategy value `name` chooses, or nullptr: a plan that sets its family against
  // another (ATOM's against GPipe) asks for it here, not by including it.
  std::function<const StrategyEntry*(const std::string& name)> family;
};

// A benchmark of a family's own machinery: `trident bench NAME CONFIG`, given what `trident plan` is given.
struct FamilyBench {
  std::string name;  // the subcommand of trident bench
  std::string help;  // its one line in --help
  void (*run)(const Config& config, const PlanRequest& request) = nullptr;  // prints a table (or JSON lines)
};

struct StrategyEntry {
  // The parallel.strategy values that run this family alone.
  std::vector<std::string> names;
  // Its candidates when parallel.strategy names it; a ConfigError naming the key when the model or the world cannot run
  // them. Pure (no communicator).
  std::vector<CandidateSpec> (*alone)(const Config& config, int world) = nullptr;
  // Builds the strategy of one of its candidates, on every rank (collective over env.groups.world()).
  std::unique_ptr<Strategy> (*make)(const StrategyEnv& env, const CandidateSpec& candidate) = nullptr;

  // Whether its strategies run under parallel.zero.stage > 0 (parallel/zero/sharding.h): their ranks hold the same
  // model and sum the whole gradient on every rank before the update.
  bool shardable = false;

  // ---- optional: nullptr (or empty) where the family has no use for them ----
  // Its candidates under parallel.strategy: auto, in the order the selector prefers among equal costs. Pure.
  std::vector<CandidateSpec> (*under_auto)(const Config& config, int world) = nullptr;
  // Whether it takes the run whatever parallel.strategy says, running alone (a swapped model runs nothing else).
  bool (*takes_over)(const Config& config) = nullptr;
  // One of its candidates as pure Candidates for `trident plan` on a described cluster, and for another family's plan
  // to compare with (a family with a planner of its own leaves it out).
  std::vector<std::unique_ptr<Candidate>> (*plan)(const Config& config, const CandidateSpec& candidate, int world,
                                                  int64_t capacity, Device device) = nullptr;
  // `trident plan` when parallel.strategy chooses this family (or it takes the run over): a plan of its own, printed.
  // Without it, plan prints the estimates of `plan`'s Candidates.
  void (*print_plan)(const Config& config, const PlanRequest& request) = nullptr;
  // `trident bench NAME`: benchmarks of its own (FlexSP: its MILP solved by CBC and by GLPK).
  std::vector<FamilyBench> benches = {};
  // Where the run's model is when this family says (a swapped model, a pipeline stage), else nullptr: at most one
  // family places a run's model. On every rank of `ranks`, before the model is built.
  std::unique_ptr<ModelPlacement> (*place)(const Config& config, Precision precision, Device device,
                                           Communicator& ranks) = nullptr;
};

}  // namespace trident
