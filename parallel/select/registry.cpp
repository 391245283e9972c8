#include "parallel/select/registry.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/config/schema.h"
#include "kernels/common/error.h"
#include "parallel/atom/entry.h"
#include "parallel/flexsp/entry.h"
#include "parallel/pipeline/entry.h"
#include "parallel/static_sp/entry.h"
#include "parallel/zero/config.h"

namespace trident {

namespace {

std::vector<const StrategyEntry*>& table() {
  static std::vector<const StrategyEntry*> entries = {
      &data_parallel_entry(),
      &atom_entry(),
      &sequence_parallel_entry(),
      &flexsp_entry(),
      &pipeline_entry(),
  };
  return entries;
}

std::vector<CandidateSpec> of(const StrategyEntry* family, std::vector<CandidateSpec> candidates) {
  for (CandidateSpec& l : candidates) l.family = family;
  return candidates;
}

}  // namespace

const std::vector<const StrategyEntry*>& strategy_entries() { return table(); }

void register_strategy(const StrategyEntry& entry) {
  table().push_back(&entry);
  register_strategy_names(entry.names);
}

void unregister_strategy(const StrategyEntry& entry) {
  std::vector<const StrategyEntry*>& t = table();
  t.erase(std::remove(t.begin(), t.end(), &entry), t.end());
  unregister_strategy_names(entry.names);
}

const StrategyEntry* family_named(const std::string& name) {
  for (const StrategyEntry* e : table())
    if (std::find(e->names.begin(), e->names.end(), name) != e->names.end()) return e;
  return nullptr;
}

const StrategyEntry* chosen_family(const Config& config) {
  for (const StrategyEntry* e : table())
    if (e->takes_over && e->takes_over(config)) return e;
  const std::string& strategy = config.parallel.strategy;
  if (strategy == "auto") return nullptr;
  if (const StrategyEntry* e = family_named(strategy)) return e;
  std::vector<std::string> names = {"auto"};
  for (const StrategyEntry* e : table()) names.insert(names.end(), e->names.begin(), e->names.end());
  throw_config_error("parallel.strategy: '{}' is not a registered strategy ({})", strategy, fmt::join(names, ", "));
}

std::vector<CandidateSpec> run_candidates(const Config& config, int world) {
  if (const StrategyEntry* e = chosen_family(config)) return of(e, e->alone(config, world));
  std::vector<CandidateSpec> out;
  for (const StrategyEntry* e : table())
    if (e->under_auto)
      for (CandidateSpec& l : of(e, e->under_auto(config, world))) out.push_back(std::move(l));
  return out;
}

std::vector<int> candidate_degrees(const Config& config, int world) {
  std::vector<int> degrees;
  for (const CandidateSpec& l : run_candidates(config, world)) {
    if (l.degree > 0) degrees.push_back(l.degree);
    else
      for (int d = 1; d <= world; d *= 2) degrees.push_back(d);  // any buddy group, planned per micro-batch
  }
  std::sort(degrees.begin(), degrees.end());
  degrees.erase(std::unique(degrees.begin(), degrees.end()), degrees.end());
  return degrees;
}

void check_sharding_applies(const Config& config, int world) {
  const int64_t stage = zero_config(config).stage;
  if (stage == 0) return;
  for (const CandidateSpec& l : run_candidates(config, world))
    if (!l.family->shardable)
      throw_config_error("parallel.zero.stage: {} does not apply to {} (its ranks keep parameters or optimizer state "
                         "of their own); set parallel.zero.stage: 0{}",
                         stage, l.method, config.parallel.strategy == "auto" ? " or a parallel.strategy without it" : "");
}

std::vector<std::unique_ptr<Strategy>> make_strategies(const StrategyEnv& env) {
  std::vector<std::unique_ptr<Strategy>> out;
  for (const CandidateSpec& l : run_candidates(env.config, env.groups.world().size()))
    out.push_back(l.family->make(env, l));
  return out;
}

std::unique_ptr<ModelPlacement> place_model(const Config& config, Precision precision, Device device,
                                            Communicator& ranks) {
  std::unique_ptr<ModelPlacement> placed;
  for (const StrategyEntry* family : table()) {
    if (!family->place) continue;
    std::unique_ptr<ModelPlacement> p = family->place(config, precision, device, ranks);
    TRIDENT_CHECK(!(p && placed), "two strategy families place the model of one run");
    if (p) placed = std::move(p);
  }
  return placed;
}

std::vector<std::unique_ptr<Candidate>> plan_candidates(const Config& config, int world, int64_t capacity,
                                                        Device device) {
  std::vector<std::unique_ptr<Candidate>> out;
  for (const CandidateSpec& l : run_candidates(config, world))
    if (l.family->plan)
      for (std::unique_ptr<Candidate>& c : l.family->plan(config, l, world, capacity, device))
        out.push_back(std::move(c));
  return out;
}

}  // namespace trident
