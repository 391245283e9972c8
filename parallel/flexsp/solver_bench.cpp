#include "parallel/flexsp/solver_bench.h"

#include <glpk.h>

#include <chrono>
#include <cmath>

#include <fmt/core.h>

#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "parallel/cost/group_cost_model.h"
#include "parallel/flexsp/config.h"
#include "parallel/flexsp/fast_solver.h"
#include "parallel/flexsp/milp_model.h"
#include "parallel/flexsp/milp_solver.h"
#include "parallel/flexsp/planner.h"

namespace trident {

namespace {

struct GlpkResult {
  double objective = 0;
  bool found = false, optimal = false;
};

// GLPK has no MIP-start call; its heuristic callback offers the start once, at the root.
struct StartOffer {
  std::vector<double> x;  // 1-based
  bool offered = false;
};

void offer_start(glp_tree* tree, void* info) {
  auto* offer = static_cast<StartOffer*>(info);
  if (glp_ios_reason(tree) != GLP_IHEUR || offer->offered || offer->x.empty()) return;
  offer->offered = true;
  glp_ios_heur_sol(tree, offer->x.data());
}

GlpkResult solve_with_glpk(const flexsp::MilpModel& m, double time_limit_s) {
  glp_prob* p = glp_create_prob();
  glp_set_obj_dir(p, GLP_MIN);
  glp_add_cols(p, static_cast<int>(m.columns.size()));
  for (size_t j = 0; j < m.columns.size(); ++j) {
    const auto& c = m.columns[j];
    const int col = static_cast<int>(j) + 1;
    glp_set_col_bnds(p, col, std::isinf(c.upper) ? GLP_LO : GLP_DB, c.lower, std::isinf(c.upper) ? 0.0 : c.upper);
    glp_set_col_kind(p, col, c.integer ? GLP_IV : GLP_CV);
    glp_set_obj_coef(p, col, c.objective);
  }
  glp_add_rows(p, static_cast<int>(m.rows.size()));
  std::vector<int> ia = {0}, ja = {0};
  std::vector<double> ar = {0};
  for (size_t i = 0; i < m.rows.size(); ++i) {
    const auto& r = m.rows[i];
    const int row = static_cast<int>(i) + 1;
    const int type = r.sense == 'L' ? GLP_UP : r.sense == 'G' ? GLP_LO : GLP_FX;
    glp_set_row_bnds(p, row, type, r.rhs, r.rhs);
    for (size_t k = 0; k < r.columns.size(); ++k)
      ia.push_back(row), ja.push_back(r.columns[k] + 1), ar.push_back(r.coefficients[k]);
  }
  glp_load_matrix(p, static_cast<int>(ar.size()) - 1, ia.data(), ja.data(), ar.data());
  StartOffer offer;
  if (!m.start.empty()) {
    offer.x.assign(m.columns.size() + 1, 0.0);
    for (auto [c, v] : m.start) offer.x[c + 1] = v;
  }
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = static_cast<int>(time_limit_s * 1000);
  parm.cb_func = offer_start;
  parm.cb_info = &offer;
  glp_intopt(p, &parm);
  GlpkResult result;
  const int status = glp_mip_status(p);
  result.found = status == GLP_OPT || status == GLP_FEAS;
  result.optimal = status == GLP_OPT;
  result.objective = glp_mip_obj_val(p);
  glp_delete_prob(p);
  return result;
}

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void bench_flexsp_solvers(const Config& config, const PlanRequest& request) {
  const FlexspConfig& flexsp = flexsp_config(config);
  const std::string& cluster_file = request.profile.empty() ? flexsp.cluster : request.profile;
  if (cluster_file.empty())
    throw_config_error("bench milp needs a cluster profile: --cluster FILE or parallel.flexsp.cluster");
  const cost::GroupCostModel cost = cost::GroupCostModel::from_profile(cost::read_profile(cluster_file));
  const double time_limit_s = flexsp.time_limit_s;
  glp_term_out(GLP_OFF);
  bench::Report report(fmt::format("FlexSP MILP per micro-batch: CBC vs GLPK, {} s limit, same model and MIP start",
                                   time_limit_s),
                       request.json);
  const flexsp::FastSolver fast;
  const std::vector<PlanBatch> batches = request.batches();
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<int64_t> lengths;
    for (const flexsp::Piece& piece : flexsp::apply_length_policy(
             batches[b].lengths, cost.token_capacity(cost.max_degree()), flexsp::TooLong::drop))
      lengths.push_back(piece.length);
    const flexsp::BatchPlan plan =
        flexsp::plan_batch(lengths, cost, fast, nullptr, flexsp.micro_batch_tries);
    bench::Progress progress(fmt::format("bench milp, batch {}/{}", b + 1, batches.size()),
                      static_cast<int64_t>(plan.micro_batches.size()));
    for (size_t i = 0; i < plan.micro_batches.size(); ++i) {
      progress.step(fmt::format("micro-batch {}: CBC, then GLPK, each up to {} s", i, time_limit_s));
      std::vector<int64_t> chunk;
      for (const flexsp::GroupPlan& g : plan.micro_batches[i].groups)
        for (int64_t k : g.sequences) chunk.push_back(plan.lengths[k]);
      const flexsp::MilpModel model =
          flexsp::milp_model(chunk, cost, {.time_limit_s = time_limit_s, .buckets = flexsp.buckets});
      flexsp::MilpResult cbc;
      GlpkResult glpk;
      const double cbc_s = seconds([&] { cbc = flexsp::solve_with_cbc(model, time_limit_s); });
      const double glpk_s = seconds([&] { glpk = solve_with_glpk(model, time_limit_s); });
      report.add({{{"batch", fmt::format("{}", b)}, {"micro-batch", fmt::format("{}", i)},
                   {"size", fmt::format("{} seq, {} cols x {} rows", chunk.size(), model.columns.size(),
                                        model.rows.size())},
                   {"CBC", cbc.x.empty() ? "none" : cbc.proven_optimal ? "optimal" : "feasible"},
                   {"GLPK", !glpk.found ? "none" : glpk.optimal ? "optimal" : "feasible"}},
                  {{"CBC s", cbc_s}, {"GLPK s", glpk_s}, {"CBC makespan s", cbc.x.empty() ? 0 : cbc.objective},
                   {"GLPK makespan s", glpk.found ? glpk.objective : 0}}});
    }
  }
  report.print();
}

}  // namespace trident
