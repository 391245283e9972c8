// trident plan CONFIG [--cluster FILE] [--json]. With parallel.strategy: auto, dp or sp, the selector's candidates
// per batch (app/plan/select_plan.h). With flexsp: the FlexSP planner on a described cluster, batch by batch, beside
// the two baselines it is measured against: static sequence parallelism (one degree for every sequence, sized for
// the longest sequence the config allows, as DeepSpeed-Ulysses runs) and BatchAda (the best single degree for each
// batch). With atom: the swap plan (app/plan/atom_plan.h). Times are the cost model's estimates
// (parallel/cost/group_cost_model.h), not measurements.
#include <time.h>

#include <memory>
#include <optional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/plan/atom_plan.h"
#include "app/plan/batches.h"
#include "app/plan/replay.h"
#include "app/plan/select_plan.h"
#include "kernels/common/error.h"
#include "parallel/atom/placement.h"
#include "parallel/cost/group_cost_model.h"
#include "parallel/flexsp/config.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_solver.h"
#include "parallel/flexsp/planner.h"
#include "parallel/flexsp/strategy.h"

namespace trident::app {

namespace {

using flexsp::BatchPlan;
using json = nlohmann::ordered_json;

struct PlanArgs {
  std::string cluster;
  std::string replay;
  std::string refit;
  bool json = false;
  plan::BatchSource source;
};

struct Timed {
  BatchPlan plan;
  double planning_ms = 0;
};

// Planning time is this thread's CPU time: the planners are single-threaded, and on a shared machine wall time
// would mostly measure the neighbours.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

template <class F>
Timed timed(F&& f) {
  const double start = thread_cpu_ms();
  BatchPlan plan = f();
  return {std::move(plan), thread_cpu_ms() - start};
}

json plan_json(const Timed& t, const std::string& solver) {
  json j = {{"solver", solver}, {"time_s", t.plan.time_s}, {"planning_ms", t.planning_ms}};
  json micro = json::array();
  for (const flexsp::MicroBatchPlan& mb : t.plan.micro_batches) {
    json groups = json::array();
    for (const flexsp::GroupPlan& g : mb.groups) {
      std::vector<int64_t> lengths;
      for (int64_t k : g.sequences) lengths.push_back(t.plan.lengths[k]);
      groups.push_back({{"degree", g.degree}, {"first_device", g.first_device}, {"sequences", g.sequences},
                        {"lengths", lengths}, {"tokens", g.tokens}, {"time_s", g.time_s}});
    }
    micro.push_back({{"layout", flexsp::describe_groups(mb)}, {"makespan_s", mb.makespan_s},
                     {"proven_optimal", mb.proven_optimal}, {"groups", groups}});
  }
  j["micro_batches"] = micro;
  return j;
}

void print_plan(const Timed& t, const std::string& title) {
  fmt::print("  {}: {} micro-batch(es), estimated {:.3f} s, planned in {:.1f} ms\n", title, t.plan.micro_batches.size(),
             t.plan.time_s, t.planning_ms);
  for (size_t m = 0; m < t.plan.micro_batches.size(); ++m) {
    const flexsp::MicroBatchPlan& mb = t.plan.micro_batches[m];
    fmt::print("    micro-batch {}: {} makespan {:.3f} s{}\n", m, flexsp::describe_groups(mb), mb.makespan_s,
               mb.proven_optimal ? " (proven optimal)" : "");
    for (const flexsp::GroupPlan& g : mb.groups)
      fmt::print("      devices {:>4}-{:<4} degree {:>3}: {:>4} seq {:>8} tokens {:>8.3f} s\n", g.first_device,
                 g.first_device + g.degree - 1, g.degree, g.sequences.size(), g.tokens, g.time_s);
  }
}

void run_plan(const Config& config, const PlanArgs& args) {
  const std::string cluster_file = args.cluster.empty() ? flexsp_config(config).cluster : args.cluster;
  if (cluster_file.empty())
    throw_config_error("trident plan needs a cluster profile: --cluster FILE or parallel.flexsp.cluster "
                       "(configs/clusters/ has examples)");
  const FlexspConfig& p = flexsp_config(config);
  const FlexInner inner = configured_flex_inner(config);
  check_flexsp(config.model, 1, inner);  // the model's side only: a described cluster is planned whatever its heads
  const cost::GroupCostModel cost =
      with_flex_exchange(cost::GroupCostModel::from_profile(cost::read_profile(cluster_file)), config, inner);
  const flexsp::TooLong too_long = flexsp::parse_too_long(p.too_long);
  const int64_t cluster_max = cost.token_capacity(cost.max_degree());
  // Static SP: one degree sized for the longest sequence the config allows (or the whole cluster).
  const int64_t static_degree = cost.min_degree(std::min(config.model.max_seq_len, cluster_max));
  const flexsp::FastSolver fast;
  const flexsp::MilpSolver milp({.time_limit_s = p.time_limit_s, .buckets = p.buckets});
  const int64_t tries = p.micro_batch_tries;

  const std::vector<plan::DrawnBatch> batches = plan::draw_batches(config, args.source);  // data errors come first
  if (!args.json)
    fmt::print("cluster {}: {} devices ({} per node), {} tokens per device; solver {}; {} inside groups; static SP "
               "degree {}\n",
               cluster_file, cost.devices(), cost.devices_per_node(), cost.token_capacity(1), p.solver,
               cost::exchange_name(cost.exchange().kind), static_degree);
  for (size_t b = 0; b < batches.size(); ++b) {
    const std::vector<int64_t>& raw = batches[b].lengths;
    const std::vector<flexsp::Piece> pieces = flexsp::apply_length_policy(raw, cluster_max, too_long);
    std::vector<int64_t> lengths;
    for (const flexsp::Piece& piece : pieces) lengths.push_back(piece.length);
    int64_t tokens = 0, longest = 0;
    for (int64_t s : lengths) tokens += s, longest = std::max(longest, s);
    int64_t dropped = batches[b].over_max_seq_len, split = 0;
    for (size_t k = 0, i = 0; k < raw.size(); ++k) {
      int64_t count = 0;
      while (i < pieces.size() && pieces[i].sequence == static_cast<int64_t>(k)) ++i, ++count;
      dropped += count == 0;
      split += count > 1;
    }
    if (lengths.empty()) throw_runtime_error("batch {}: no sequence left to plan ({} dropped)", b, dropped);

    bool fell_back = false;  // the best single degree beat the solver's plan (see plan_flexsp)
    const Timed flex_fast =
        timed([&] { return flexsp::plan_flexsp(lengths, cost, fast, nullptr, tries, &fell_back); });
    std::optional<Timed> flex_milp;
    if (p.solver == "milp")
      flex_milp = timed([&] { return flexsp::plan_flexsp(lengths, cost, fast, &milp, tries, &fell_back); });
    const Timed& flex = flex_milp ? *flex_milp : flex_fast;
    const Timed stat = timed([&] { return flexsp::plan_homogeneous(lengths, cost, static_degree, tries); });
    int64_t ada_degree = 0;
    const Timed ada = timed([&] { return flexsp::plan_best_homogeneous(lengths, cost, ada_degree, tries); });
    flexsp::check_batch_plan(flex.plan, cost);  // kept on in every build: a wrong plan is never printed
    if (args.json) {
      json j = {{"batch", b}, {"sequences", lengths.size()}, {"tokens", tokens}, {"longest", longest},
                {"dropped", dropped}, {"split", split}, {"inner", cost::exchange_name(cost.exchange().kind)}};
      // what each planned sequence is: [index in the drawn batch, first token] (differs after drop or split)
      json source = json::array();
      for (const flexsp::Piece& piece : pieces) source.push_back({piece.sequence, piece.offset});
      j["source"] = source;
      j["flexsp"] = plan_json(flex, p.solver);
      j["flexsp"]["single_degree_fallback"] = fell_back;
      if (flex_milp) j["fast"] = plan_json(flex_fast, "fast");
      j["static_sp"] = {{"degree", static_degree}, {"time_s", stat.plan.time_s},
                        {"micro_batches", stat.plan.micro_batches.size()}, {"planning_ms", stat.planning_ms}};
      j["batchada"] = {{"degree", ada_degree}, {"time_s", ada.plan.time_s},
                       {"micro_batches", ada.plan.micro_batches.size()}, {"planning_ms", ada.planning_ms}};
      j["speedup_vs_static_sp"] = stat.plan.time_s / flex.plan.time_s;
      j["speedup_vs_batchada"] = ada.plan.time_s / flex.plan.time_s;
      fmt::print("{}\n", j.dump());
      continue;
    }
    fmt::print("\nbatch {}: {} sequences, {} tokens, longest {}{}{}\n", b, lengths.size(), tokens, longest,
               dropped ? fmt::format(", {} dropped", dropped) : "", split ? fmt::format(", {} split", split) : "");
    print_plan(flex, fmt::format("FlexSP ({}{})", p.solver, fell_back ? ", the best single degree" : ""));
    if (flex_milp)
      fmt::print("  fast solver alone: estimated {:.3f} s, planned in {:.1f} ms ({:+.2f}% vs milp)\n",
                 flex_fast.plan.time_s, flex_fast.planning_ms,
                 100 * (flex_fast.plan.time_s / flex_milp->plan.time_s - 1));
    fmt::print("  static SP (degree {}): {} micro-batch(es), estimated {:.3f} s -> FlexSP {:.2f}x faster\n",
               static_degree, stat.plan.micro_batches.size(), stat.plan.time_s, stat.plan.time_s / flex.plan.time_s);
    fmt::print("  BatchAda (degree {}): {} micro-batch(es), estimated {:.3f} s -> FlexSP {:.2f}x faster\n", ada_degree,
               ada.plan.micro_batches.size(), ada.plan.time_s, ada.plan.time_s / flex.plan.time_s);
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plans for a described cluster, per batch: with parallel.strategy: flexsp, FlexSP's groups, "
              "micro-batches and estimated times beside static SP and the best single degree per batch; with auto, "
              "dp or sp, every candidate strategy's estimate and the one the selector would run; with atom, the "
              "swap plan: the layers' split into sub-models, the predicted step and the copy time left exposed");
  auto config = add_config_args(cmd, /*optional=*/true);
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("--cluster", args->cluster,
                  "Cluster profile file (default: parallel.flexsp.cluster, or parallel.select.profile)");
  cmd->add_flag("--json", args->json, "One JSON object per batch instead of text");
  cmd->add_option("--lengths", args->source.lengths_file,
                  "Plan sequence lengths from this file (whitespace-separated) instead of the configured data");
  cmd->add_option("--batch-sequences", args->source.batch_sequences,
                  "Sequences per batch: N documents of the data (or N lengths of --lengths) instead of the "
                  "trainer's token-packed batches")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batches", args->source.batches, "Batches to plan (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--replay", args->replay,
                  "Instead of planning: the FlexSP cost model's error per group degree in a training run's metrics");
  cmd->add_option("--refit", args->refit,
                  "With --replay: scale this profile file's compute coefficients by the run's measured / estimated");
  cmd->callback([config, args] {
    if (!args->refit.empty() && args->replay.empty()) throw_config_error("--refit FILE needs --replay RUN_DIR");
    if (!args->replay.empty()) return plan::print_replay(args->replay, args->json, args->refit);
    if (config->path.empty()) throw_config_error("trident plan needs CONFIG (or --replay RUN_DIR)");
    const Config c = config->load();
    if (c.parallel.strategy == "flexsp") return run_plan(c, *args);
    if (c.parallel.strategy == "pipeline")
      throw_config_error("parallel.strategy: pipeline: trident plan does not plan the pipeline baseline (its layout "
                         "is fixed: one stage a rank)");
    if (c.parallel.strategy == "atom" || (c.parallel.strategy == "auto" && swaps(c)))  // auto swaps: ATOM's plan
      return plan::print_atom_plan(c, args->cluster.empty() ? c.parallel.select_profile : args->cluster, args->json);
    plan::print_selection_plan(c, args->cluster.empty() ? c.parallel.select_profile : args->cluster, args->source,
                               args->json);
  });
}

}  // namespace trident::app
