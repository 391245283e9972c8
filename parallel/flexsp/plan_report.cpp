#include "parallel/flexsp/plan_report.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "parallel/cost/group_cost_model.h"
#include "parallel/flexsp/config.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_solver.h"
#include "parallel/flexsp/planner.h"
#include "parallel/flexsp/strategy.h"
#include "parallel/placement/recompute.h"
#include "parallel/zero/config.h"
#include "parallel/zero/shards.h"

namespace trident {

namespace {

using flexsp::BatchPlan;
using json = nlohmann::ordered_json;

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

std::vector<int64_t> group_lengths(const BatchPlan& plan, const flexsp::GroupPlan& g) {
  std::vector<int64_t> lengths;
  for (int64_t k : g.sequences) lengths.push_back(plan.lengths[k]);
  return lengths;
}

// Seconds of the plan's time spent exchanging: each micro-batch's slowest group's all-to-alls (or LASP's states).
double plan_exchange_s(const BatchPlan& plan, const cost::GroupCostModel& cost) {
  double total = 0;
  for (const flexsp::MicroBatchPlan& mb : plan.micro_batches) {
    const flexsp::GroupPlan* slowest = nullptr;
    for (const flexsp::GroupPlan& g : mb.groups)
      if (slowest == nullptr || g.time_s > slowest->time_s) slowest = &g;
    if (slowest != nullptr) total += cost.group_exchange_s(group_lengths(plan, *slowest), slowest->degree);
  }
  return total;
}

json plan_json(const Timed& t, const std::string& solver, const cost::GroupCostModel& cost) {
  json j = {{"solver", solver}, {"time_s", t.plan.time_s}, {"exchange_s", plan_exchange_s(t.plan, cost)},
            {"planning_ms", t.planning_ms}};
  json micro = json::array();
  for (const flexsp::MicroBatchPlan& mb : t.plan.micro_batches) {
    json groups = json::array();
    for (const flexsp::GroupPlan& g : mb.groups) {
      const std::vector<int64_t> lengths = group_lengths(t.plan, g);
      groups.push_back({{"degree", g.degree}, {"first_device", g.first_device}, {"sequences", g.sequences},
                        {"lengths", lengths}, {"tokens", g.tokens}, {"time_s", g.time_s},
                        {"exchange_s", cost.group_exchange_s(lengths, g.degree)}});
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

// The profile with its memory.model_states_gb, or (absent) with the states this config leaves a device of the
// cluster: its model, precision, train.recompute and parallel.zero over the cluster's ranks (resident_state_bytes).
// `how` says which.
cost::Profile with_model_states(cost::Profile profile, const Config& config, std::string& how) {
  if (!profile.memory || !profile.cluster || profile.memory->model_states_gb) {
    how = "the profile's memory.model_states_gb";
    return profile;
  }
  const cost::ClusterSection& cluster = *profile.cluster;
  const int zero = zero_ranks(config, cluster.nodes * cluster.devices_per_node, cluster.devices_per_node);
  const int64_t bytes = resident_state_bytes(config, precision_named(config.train.precision),
                                             device_named(config.device.backend), zero);
  profile.memory->model_states_gb = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  how = fmt::format("computed: {} parameters, {}, parallel.zero.stage {} over {} rank(s), train.recompute {}",
                    model_layout(config.model).num_params, config.train.precision, zero_config(config).stage, zero,
                    config.train.recompute);
  return profile;
}

}  // namespace

void print_flexsp_plan(const Config& config, const PlanRequest& request) {
  const std::string cluster_file = request.profile.empty() ? flexsp_config(config).cluster : request.profile;
  if (cluster_file.empty())
    throw_config_error("trident plan needs a cluster profile: --cluster FILE or parallel.flexsp.cluster "
                       "(configs/clusters/ has examples)");
  const FlexspConfig& p = flexsp_config(config);
  const FlexInner inner = configured_flex_inner(config);
  check_flexsp(config.model, 1, inner);  // the model's side only: a described cluster is planned whatever its heads
  std::string states_how;
  const cost::Profile profile = with_model_states(cost::read_profile(cluster_file), config, states_how);
  const cost::GroupCostModel cost = with_flex_exchange(cost::GroupCostModel::from_profile(profile), config, inner);
  const flexsp::TooLong too_long = flexsp::parse_too_long(p.too_long);
  const int64_t cluster_max = cost.token_capacity(cost.max_degree());
  // Static SP: one degree sized for the longest sequence the config allows (or the whole cluster).
  const int64_t static_degree = cost.min_degree(std::min(config.model.max_seq_len, cluster_max));
  const flexsp::FastSolver fast;
  const flexsp::MilpSolver milp({.time_limit_s = p.time_limit_s, .buckets = p.buckets});
  const int64_t tries = p.micro_batch_tries;

  const std::vector<PlanBatch> batches = request.batches();  // data errors come first
  if (!request.json)
    fmt::print("cluster {}: {} devices ({} per node), {} tokens per device (model states {:.3f} GiB a device, {}); "
               "solver {}; {} inside groups; static SP degree {}\n",
               cluster_file, cost.devices(), cost.devices_per_node(), cost.token_capacity(1),
               profile.memory ? profile.memory->model_states_gb.value_or(0) : 0.0, states_how, p.solver,
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
    if (p.solver == "milp") {  // seconds a micro-batch: say what runs (stderr, beside the plan on stdout)
      fmt::print(stderr, "plan: batch {}/{}: the MILP, up to {} s a micro-batch\n", b + 1, batches.size(),
                 p.time_limit_s);
      flex_milp = timed([&] { return flexsp::plan_flexsp(lengths, cost, fast, &milp, tries, &fell_back); });
    }
    const Timed& flex = flex_milp ? *flex_milp : flex_fast;
    const Timed stat = timed([&] { return flexsp::plan_homogeneous(lengths, cost, static_degree, tries); });
    int64_t ada_degree = 0;
    const Timed ada = timed([&] { return flexsp::plan_best_homogeneous(lengths, cost, ada_degree, tries); });
    flexsp::check_batch_plan(flex.plan, cost);  // kept on in every build: a wrong plan is never printed
    if (request.json) {
      json j = {{"batch", b}, {"sequences", lengths.size()}, {"tokens", tokens}, {"longest", longest},
                {"dropped", dropped}, {"split", split}, {"inner", cost::exchange_name(cost.exchange().kind)}};
      // what each planned sequence is: [index in the drawn batch, first token] (differs after drop or split)
      json source = json::array();
      for (const flexsp::Piece& piece : pieces) source.push_back({piece.sequence, piece.offset});
      j["source"] = source;
      j["flexsp"] = plan_json(flex, p.solver, cost);
      j["flexsp"]["single_degree_fallback"] = fell_back;
      if (flex_milp) j["fast"] = plan_json(flex_fast, "fast", cost);
      j["static_sp"] = {{"degree", static_degree}, {"time_s", stat.plan.time_s},
                        {"exchange_s", plan_exchange_s(stat.plan, cost)},
                        {"micro_batches", stat.plan.micro_batches.size()}, {"planning_ms", stat.planning_ms}};
      j["batchada"] = {{"degree", ada_degree}, {"time_s", ada.plan.time_s},
                       {"exchange_s", plan_exchange_s(ada.plan, cost)},
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

}  // namespace trident
