#include "parallel/flexsp/entry.h"

#include "kernels/common/error.h"
#include "parallel/flexsp/config.h"
#include "parallel/flexsp/plan_report.h"
#include "parallel/flexsp/solver_bench.h"
#include "parallel/flexsp/strategy.h"

namespace trident {

namespace {

std::vector<CandidateSpec> alone(const Config& config, int world) {
  const FlexInner inner = configured_flex_inner(config);
  check_flexsp(config.model, world, inner);
  return {{inner == FlexInner::lasp ? "flexsp-lasp" : "flexsp", 0}};
}

// Where it can run: a power-of-two world of at least two ranks; Ulysses inside needs the world size to divide the
// heads, LASP inside linear layers (a hybrid's softmax layers beside it run Ulysses or USP); parallel.flexsp.inner
// may rule either out.
std::vector<CandidateSpec> under_auto(const Config& config, int world) {
  const FlexspConfig& p = flexsp_config(config);
  const ModelConfig& m = config.model;
  std::vector<CandidateSpec> out;
  if (world < 2 || (world & (world - 1)) != 0) return out;
  if (p.inner != "lasp" && m.n_head % world == 0) out.push_back({"flexsp", 0});
  if (p.inner != "ulysses" && m.any_linear()) out.push_back({"flexsp-lasp", 0});
  return out;
}

std::unique_ptr<Strategy> make(const StrategyEnv& env, const CandidateSpec& candidate) {
  TRIDENT_CHECK(env.profile, "FlexSP plans with the run's profile, and none was given");
  return std::make_unique<FlexSequenceParallel>(env,
                                                candidate.method == "flexsp-lasp" ? FlexInner::lasp : FlexInner::ulysses);
}

}  // namespace

// No `plan`: `trident plan` plans FlexSP with its own planner (print_plan).
const StrategyEntry& flexsp_entry() {
  static const StrategyEntry entry{
      .names = {"flexsp"},
      .alone = alone,
      .make = make,
      .shardable = true,
      .under_auto = under_auto,
      .print_plan = print_flexsp_plan,
      .benches = {{.name = "milp",
                   .help = "FlexSP's MILP per micro-batch solved by CBC and by GLPK on the same model: time, makespan, "
                           "optimality",
                   .run = bench_flexsp_solvers}}};
  return entry;
}

}  // namespace trident
