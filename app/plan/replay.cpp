#include "app/plan/replay.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "parallel/cost/profile.h"

namespace trident::app::plan {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Samples {
  std::vector<double> estimated, measured, error, ratio;
};

}  // namespace

void print_replay(const std::string& run_dir, bool json, const std::string& refit) {
  if (!refit.empty() && !std::filesystem::exists(refit))
    throw_config_error("--refit: profile file '{}' not found (it scales an existing profile's compute)", refit);
  if (!refit.empty()) cost::check_profile_target(refit);  // a bad file fails before anything is read
  const std::filesystem::path path = std::filesystem::path(run_dir) / "metrics.jsonl";
  std::ifstream in(path);
  if (!in) throw_config_error("--replay: cannot read '{}' (a training run's directory holds metrics.jsonl)", path.string());
  std::map<int64_t, Samples> by_degree;
  std::string line;
  int64_t steps = 0, carried = 0;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw_config_error("{}:{}: not a JSON line ({})", path.string(), number, e.what());
    }
    if (!record.is_object() || !record.contains("group_times")) continue;
    ++steps;
    try {
      // As FlexSP's corrections: the groups whose time carries the gradient reduction only in a step of nothing else.
      const auto with_reduction = [](const nlohmann::json& g) { return g.size() > 4 && g.at(4).get<bool>(); };
      bool step_has_others = false;
      for (const auto& micro : record.at("group_times"))
        for (const auto& g : micro) step_has_others |= !with_reduction(g);
      for (const auto& micro : record.at("group_times"))
        for (const auto& g : micro) {
          const auto degree = g.at(0).get<int64_t>();
          const double estimated = g.at(1).get<double>(), measured = g.at(2).get<double>();
          if (measured <= 0 || estimated <= 0) continue;
          if (step_has_others && with_reduction(g)) {
            ++carried;
            continue;
          }
          Samples& s = by_degree[degree];
          s.estimated.push_back(estimated);
          s.measured.push_back(measured);
          s.error.push_back(std::abs(estimated - measured) / measured);
          s.ratio.push_back(measured / estimated);
        }
    } catch (const nlohmann::json::exception& e) {
      throw_config_error("{}:{}: group_times is not [[degree, estimated ms, measured ms, ...], ...] per micro-batch "
                         "({})",
                         path.string(), number, e.what());
    }
  }
  if (by_degree.empty())
    throw_config_error("{}: no step records group_times (only parallel.strategy: flexsp, or auto running FlexSP, does)",
                       path.string());
  if (!json)
    fmt::print("{}: {} FlexSP steps ({} groups of a rank's last micro-batch, whose time carries the gradient "
               "reduction, left out where the step had others)\n\n"
               "| degree | groups | estimated ms | measured ms | error | measured / estimated |\n"
               "|---|---|---|---|---|---|\n",
               path.string(), steps, carried);
  for (const auto& [degree, s] : by_degree) {
    if (json) {
      fmt::print("{}\n", nlohmann::ordered_json{{"degree", degree},
                                                {"groups", s.error.size()},
                                                {"estimated_ms", median(s.estimated)},
                                                {"measured_ms", median(s.measured)},
                                                {"error", median(s.error)},
                                                {"ratio", median(s.ratio)}}
                             .dump());
      continue;
    }
    fmt::print("| {} | {} | {:.3f} | {:.3f} | {:.0f}% | {:.2f} |\n", degree, s.error.size(), median(s.estimated),
               median(s.measured), 100 * median(s.error), median(s.ratio));
  }
  if (refit.empty()) return;
  std::vector<double> ratios;
  if (const auto single = by_degree.find(1); single != by_degree.end()) {
    ratios = single->second.ratio;
  } else {
    for (const auto& [degree, s] : by_degree) ratios.insert(ratios.end(), s.ratio.begin(), s.ratio.end());
  }
  const double ratio = median(ratios);
  cost::Profile profile = cost::read_profile(refit);
  if (!profile.compute) throw_config_error("{}: --refit: the profile has no 'compute' section to scale", refit);
  cost::ComputeSection& c = *profile.compute;
  c.alpha1_s_per_token2 *= ratio;
  c.alpha2_s_per_token *= ratio;
  c.beta1_s *= ratio;
  c.fitted_from = fmt::format("scaled by {:.3f} (median measured / estimated of {} groups in {})", ratio,
                              ratios.size(), path.string());
  cost::Profile update;
  update.compute = c;
  cost::merge_profile_into(refit, update);
  if (!json) fmt::print("\n{}: compute scaled by {:.3f}\n", refit, ratio);
}

}  // namespace trident::app::plan
