#include "parallel/flexsp/corrections.h"

#include <algorithm>
#include <vector>

#include <fmt/core.h>

#include "kernels/common/error.h"

namespace trident::flexsp {

void Corrections::observe(std::span<const GroupSample> groups) {
  if (++steps_seen_ == 1) return;  // the first step allocates buffers
  std::map<Placement, std::vector<double>> ratios;
  for (const GroupSample& g : groups)
    if (g.estimated_s > 0 && g.measured_s > 0)  // else nothing to scale, or not measured
      ratios[g.placement].push_back(g.measured_s / g.estimated_s);
  for (auto& [placement, r] : ratios) {
    std::sort(r.begin(), r.end());
    const std::size_t n = r.size();
    const double step_ratio = n % 2 == 1 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    Correction& c = by_placement_[placement];
    ++c.steps;
    const auto weight = static_cast<double>(std::min<int64_t>(c.steps, kWindowSteps));
    c.ratio = c.steps == 1 ? step_ratio : c.ratio + (step_ratio - c.ratio) / weight;
  }
}

std::map<int64_t, double> Corrections::factors(const cost::GroupCostModel& cost) const {
  std::map<int64_t, double> factors;
  double sum = 0;
  int count = 0;
  for (int64_t d = 1; d <= cost.max_degree(); d *= 2)
    if (const auto it = by_placement_.find({d, cost.nodes_spanned(d)}); it != by_placement_.end()) {
      factors[d] = it->second.ratio;
      sum += it->second.ratio, ++count;
    }
  if (count == 0) return factors;
  for (int64_t d = 1; d <= cost.max_degree(); d *= 2) factors.try_emplace(d, sum / count);
  return factors;
}

nlohmann::json Corrections::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [p, c] : by_placement_)
    groups.push_back({{"degree", p.degree}, {"nodes", p.nodes}, {"ratio", c.ratio}, {"steps", c.steps}});
  return {{"steps_seen", steps_seen_}, {"groups", groups}};
}

Corrections Corrections::from_json(const nlohmann::json& json, const std::string& field) {
  const auto count = [](const nlohmann::json& j, const char* key, int64_t least) {
    return j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= least;
  };
  if (!json.is_object() || !count(json, "steps_seen", 0))
    throw_runtime_error("{}: needs a non-negative integer 'steps_seen'", field);
  if (!json.contains("groups") || !json["groups"].is_array())
    throw_runtime_error("{}.groups: needs an array of corrections", field);
  Corrections c;
  c.steps_seen_ = json["steps_seen"].get<int64_t>();
  for (std::size_t i = 0; i < json["groups"].size(); ++i) {
    const nlohmann::json& g = json["groups"][i];
    const std::string at = fmt::format("{}.groups[{}]", field, i);
    if (!g.is_object()) throw_runtime_error("{}: needs an object", at);
    if (!count(g, "degree", 1) || (g["degree"].get<int64_t>() & (g["degree"].get<int64_t>() - 1)) != 0)
      throw_runtime_error("{}.degree: needs a power of two", at);
    if (!count(g, "nodes", 1)) throw_runtime_error("{}.nodes: needs a positive integer", at);
    if (!g.contains("ratio") || !g["ratio"].is_number() || !(g["ratio"].get<double>() > 0))
      throw_runtime_error("{}.ratio: needs a positive number", at);
    if (!count(g, "steps", 1)) throw_runtime_error("{}.steps: needs a positive integer", at);
    const Placement p{g["degree"].get<int64_t>(), g["nodes"].get<int64_t>()};
    if (c.by_placement_.count(p))
      throw_runtime_error("{}: a second correction for degree {} on {} node(s)", at, p.degree, p.nodes);
    c.by_placement_[p] = {g["ratio"].get<double>(), g["steps"].get<int64_t>()};
  }
  return c;
}

}  // namespace trident::flexsp
