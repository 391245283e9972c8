#include "parallel/atom/entry.h"

#include "parallel/atom/config.h"
#include "parallel/atom/placement.h"
#include "parallel/atom/plan_report.h"
#include "parallel/atom/strategy.h"
#include "parallel/atom/swapped_model.h"

namespace trident {

namespace {

std::vector<CandidateSpec> alone(const Config&, int) { return {{"atom", 1}}; }

// The averaging peers, when the run asks for averaging, with rounds of every peer: a round deadline lets peers step
// apart, which a per-step choice cannot.
std::vector<CandidateSpec> under_auto(const Config& config, int world) {
  const AtomConfig& p = atom_config(config);
  if (world > 1 && p.average_every > 0 && p.round_deadline_ms == 0) return {{"atom", 1}};
  return {};
}

std::unique_ptr<Strategy> make(const StrategyEnv& env, const CandidateSpec&) {
  return std::make_unique<AtomStrategy>(env);
}

}  // namespace

const StrategyEntry& atom_entry() {
  static const StrategyEntry entry{
      .names = {"atom"},
      .alone = alone,
      .make = make,
      .under_auto = under_auto,
      .takes_over = swaps,
      .print_plan = print_atom_plan,
      .place = place_swapped_model};
  return entry;
}

}  // namespace trident
