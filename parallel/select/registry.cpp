#include "parallel/select/registry.h"

#include <algorithm>

#include "kernels/common/error.h"
#include "parallel/atom/placement.h"
#include "parallel/atom/strategy.h"
#include "parallel/flexsp/strategy.h"
#include "parallel/pipeline/strategy.h"
#include "parallel/static_sp/layout.h"
#include "parallel/static_sp/static_sp.h"

namespace trident {

std::vector<LayoutSpec> candidate_layouts(const Config& config, int world) {
  const ParallelConfig& p = config.parallel;
  const ModelConfig& m = config.model;
  if (swaps(config)) return {{"atom", 1}};  // a swapped model runs nothing else
  if (p.strategy == "dp") return {{"dp", 1}};
  if (p.strategy == "pipeline") {
    check_pipeline(config, world);
    return {{"pipeline", 1}};
  }
  if (p.strategy == "flexsp") {
    const FlexInner inner = configured_flex_inner(config);
    check_flexsp(m, world, inner);
    return {{inner == FlexInner::lasp ? "flexsp-lasp" : "flexsp", 0}};
  }
  if (p.strategy == "sp" || p.strategy == "lasp") {
    check_static_layout(m, p.sp_method, static_cast<int>(p.sp_size), world);
    if (p.sp_method == "lasp" && p.lasp_variant != "auto")
      return {{p.lasp_variant == "ring" ? "lasp1" : "lasp2", static_cast<int>(p.sp_size)}};
    return {{p.sp_method, static_cast<int>(p.sp_size)}};
  }
  std::vector<LayoutSpec> out = {{"dp", 1}};
  // ATOM's averaging peers, when the run asks for averaging (with rounds of every peer: a round deadline lets peers
  // step apart, which a per-step choice cannot)
  if (world > 1 && p.atom_average_every > 0 && p.atom_round_deadline_ms == 0) out.push_back({"atom", 1});
  for (int d = 2; d <= world; d *= 2) {
    if (world % d != 0) break;
    if (m.attention == "linear") {
      if (p.lasp_variant != "allgather") out.push_back({"lasp1", d});
      if (p.lasp_variant != "ring") out.push_back({"lasp2", d});
    }
    if (m.n_head % d == 0) out.push_back({"ulysses", d});
    if (m.attention == "softmax") out.push_back({"ring", d});
  }
  // FlexSP where it can run: a power-of-two world of at least two ranks; Ulysses inside needs the world size to
  // divide the heads, LASP inside linear attention
  if (world < 2 || (world & (world - 1)) != 0) return out;
  if (p.flexsp_inner != "lasp" && m.n_head % world == 0) out.push_back({"flexsp", 0});
  if (p.flexsp_inner != "ulysses" && m.attention == "linear") out.push_back({"flexsp-lasp", 0});
  return out;
}

std::vector<int> candidate_degrees(const Config& config, int world) {
  std::vector<int> degrees;
  for (const LayoutSpec& l : candidate_layouts(config, world)) {
    if (l.sp_size > 0) degrees.push_back(l.sp_size);
    else
      for (int d = 1; d <= world; d *= 2) degrees.push_back(d);  // any buddy group, planned per micro-batch
  }
  std::sort(degrees.begin(), degrees.end());
  degrees.erase(std::unique(degrees.begin(), degrees.end()), degrees.end());
  return degrees;
}

std::vector<std::unique_ptr<Strategy>> make_strategies(const StrategyEnv& env) {
  std::vector<std::unique_ptr<Strategy>> out;
  for (const LayoutSpec& l : candidate_layouts(env.config, env.groups.world().size())) {
    if (l.method == "atom") {
      out.push_back(std::make_unique<AtomStrategy>(env));
    } else if (l.method == "pipeline") {
      out.push_back(std::make_unique<PipelineStrategy>(env));
    } else if (l.sp_size == 0) {
      TRIDENT_CHECK(env.profile, "FlexSP plans with the run's profile, and none was given");
      out.push_back(std::make_unique<FlexSequenceParallel>(
          env, l.method == "flexsp-lasp" ? FlexInner::lasp : FlexInner::ulysses));
    } else {
      out.push_back(std::make_unique<StaticSequenceParallel>(env, l.method, l.sp_size));
    }
  }
  return out;
}

std::vector<std::unique_ptr<Candidate>> plan_candidates(const Config& config, int world, int64_t capacity,
                                                        Device device) {
  std::vector<std::unique_ptr<Candidate>> out;
  for (const LayoutSpec& l : candidate_layouts(config, world))
    for (const char* method : {"lasp1", "lasp2"}) {
      // `trident plan` plans FlexSP and ATOM with their planners, and not the pipeline
      if (l.sp_size == 0 || l.method == "atom" || l.method == "pipeline") break;
      const std::string resolved = l.method == "lasp" ? method : l.method;
      out.push_back(std::make_unique<StaticLayout>(config, resolved, l.sp_size, world, capacity, device));
      if (l.method != "lasp") break;
    }
  return out;
}

}  // namespace trident
