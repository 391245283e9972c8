#include "app/plan/select_plan.h"

#include <algorithm>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "parallel/placement/recompute.h"
#include "parallel/select/configure.h"
#include "parallel/select/registry.h"
#include "parallel/select/selector.h"

namespace trident::app::plan {

namespace {

using json = nlohmann::ordered_json;

Batch batch_of(const std::vector<int64_t>& lengths) {
  Batch b;
  for (int64_t s : lengths) b.append_sequence(std::vector<int32_t>(static_cast<std::size_t>(s) + 1, 0));
  return b;
}

}  // namespace

void print_selection_plan(const Config& config, const std::string& profile_file, const BatchSource& source,
                          bool json_lines) {
  if (profile_file.empty())
    throw_config_error("trident plan needs a cluster profile: --cluster FILE or parallel.select.profile "
                       "(`trident bench profile` and `trident bench comm --profile` write one)");
  const cost::Profile profile = cost::read_profile(profile_file);
  if (!profile.cluster) throw_config_error("{}: the profile has no 'cluster' section", profile_file);
  const cost::ClusterSection& cluster = *profile.cluster;
  const int world = static_cast<int>(cluster.nodes * cluster.devices_per_node);
  check_sharding_applies(config, world);
  const cost::RunShape shape = run_shape(config, world, cluster.nodes, cluster.devices_per_node);
  const cost::StepCostModel cost = cost::StepCostModel::from_profile(profile, shape);
  const Device device = device_named(config.device.backend);
  const int64_t capacity = resident_capacity(config, precision_named(config.train.precision), device,
                                             static_cast<int>(shape.zero_ranks));
  const std::vector<std::unique_ptr<Candidate>> owned = plan_candidates(config, world, capacity, device);
  std::vector<const Candidate*> candidates;
  for (const auto& c : owned) candidates.push_back(c.get());

  const std::vector<PlanBatch> batches = draw_batches(config, source);
  if (!json_lines)
    fmt::print("cluster {}: {} rank(s) ({} per node); parallel.strategy: {}, {} candidate(s); {} tokens a rank "
               "(device.memory_gb = {})\n",
               profile_file, world, cluster.devices_per_node, config.parallel.strategy, candidates.size(), capacity,
               config.device.memory_gb);
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const Batch batch = batch_of(batches[b].lengths);
    const Comparison c = compare(candidates, batch, &cost);
    const int64_t longest = *std::max_element(batches[b].lengths.begin(), batches[b].lengths.end());
    if (json_lines) {
      json options = json::array();
      for (const Option& o : c.options) {
        json j = {{"strategy", o.candidate->method()}, {"degree", o.candidate->degree()}};
        if (!o.feasibility.ok) j["infeasible"] = o.feasibility.reason;
        if (o.estimate)
          j.update({{"time_s", o.estimate->seconds}, {"compute_s", o.estimate->compute_s},
                    {"comm_s", o.estimate->comm_s}, {"comm_bytes", o.estimate->comm_bytes},
                    {"peak_bytes", o.estimate->peak_bytes}});
        options.push_back(std::move(j));
      }
      json line = {{"batch", b}, {"sequences", batch.num_sequences()}, {"tokens", batch.num_tokens()},
                   {"longest", longest}, {"candidates", options}};
      line["chosen"] = c.cheapest < 0 ? json(nullptr) : json(c.options[c.cheapest].candidate->name());
      fmt::print("{}\n", line.dump());
      continue;
    }
    fmt::print("\nbatch {}: {} sequences, {} tokens, longest {}\n", b, batch.num_sequences(), batch.num_tokens(),
               longest);
    std::size_t width = 16;  // the names' column: as wide as the longest ("lasp2+ulysses sp=64")
    for (const Option& o : c.options) width = std::max(width, o.candidate->name().size());
    for (std::size_t i = 0; i < c.options.size(); ++i) {
      const Option& o = c.options[i];
      if (!o.feasibility.ok) {
        fmt::print("    {:<{}} cannot run it: {}\n", o.candidate->name(), width, o.feasibility.reason);
        continue;
      }
      const std::string peak = o.estimate->peak_bytes > 0
          ? fmt::format(", peak {:.1f} MiB a rank", static_cast<double>(o.estimate->peak_bytes) / (1 << 20))
          : "";
      fmt::print("  {} {:<{}} {:>10.3f} ms  (compute {:.3f}, communication {:.3f}; {:.1f} MiB sent{})\n",
                 static_cast<int>(i) == c.cheapest ? "->" : "  ", o.candidate->name(), width,
                 o.estimate->seconds * 1e3,
                 o.estimate->compute_s * 1e3, o.estimate->comm_s * 1e3,
                 static_cast<double>(o.estimate->comm_bytes) / (1 << 20), peak);
    }
    if (c.cheapest < 0) fmt::print("  -> none: {}\n", c.why_none());
  }
}

}  // namespace trident::app::plan
