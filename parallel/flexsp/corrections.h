#pragma once
// FlexSP's online corrections of the cost model (training, parallel.select.mode: measured). The model's error depends
// on the group: compute scales as 1/d only roughly, and the all-to-all bandwidth of a group depends on its degree and
// on whether it crosses nodes. So the ratio measured / estimated group time is kept per group degree and nodes the
// (buddy-aligned) group spans. After each training step the step's groups of one placement give one ratio, the median
// of their measured / estimated (groups with a zero estimate left out), and the placement's correction is the mean of
// those ratios over its steps, the last kWindowSteps weighing most once there are more (a running mean that becomes an
// exponential one). Why: a group's time is its estimate times the placement's bias times noise its step shares (what
// else the cores and links carry then) and noise of its own (a rank descheduled), each as large as the bias where
// ranks share cores; the median leaves a step's outliers out, and the mean over steps averages the shared noise down.
// The first training step a run's FlexSP takes is not counted: it allocates its buffers.
//
// A degree never measured takes the mean correction of those that were (1 when none was): the profile's error is
// mostly shared by every degree (its compute coefficients come from one device), so 1 would make an unmeasured degree
// look cheaper than a measured one whenever the profile is optimistic, and plans would move to it only to find it as
// slow. Pure: no MPI; rank 0 keeps the corrections and plans with them (strategy.h).
#include <cstdint>
#include <map>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "parallel/cost/group_cost_model.h"

namespace trident::flexsp {

// Where a group ran: its degree and the nodes it spans.
struct Placement {
  int64_t degree = 0;
  int64_t nodes = 0;
  auto operator<=>(const Placement&) const = default;
};

// One group of a trained step: the uncorrected cost model's estimate beside its measured time.
struct GroupSample {
  Placement placement;
  double estimated_s = 0;
  double measured_s = 0;
};

class Corrections {
 public:
  // A placement's correction follows its last this many steps (the mean of its steps until then).
  static constexpr int64_t kWindowSteps = 8;

  struct Correction {
    double ratio = 1;   // measured / estimated
    int64_t steps = 0;  // steps that set it (its window until kWindowSteps)
    bool operator==(const Correction&) const = default;
  };

  // One training step's groups (all micro-batches). Counts the step; the first is skipped.
  void observe(std::span<const GroupSample> groups);

  // Each degree's factor on `cost`'s cluster: its placement's correction, else the mean of those that apply to this
  // cluster, else 1.
  std::map<int64_t, double> factors(const cost::GroupCostModel& cost) const;
  // `cost` planning with those factors.
  cost::GroupCostModel apply(const cost::GroupCostModel& cost) const { return cost.with_corrections(factors(cost)); }

  const std::map<Placement, Correction>& by_placement() const { return by_placement_; }
  int64_t steps_seen() const { return steps_seen_; }
  bool empty() const { return by_placement_.empty(); }
  bool operator==(const Corrections&) const = default;

  // {"steps_seen": n, "groups": [{"degree": d, "nodes": n, "ratio": r, "steps": k}, ...]}: doubles round-trip exactly.
  nlohmann::json to_json() const;
  // to_json's output; a malformed value is a RuntimeError naming `field` and the member ("<field>.groups[1].ratio").
  static Corrections from_json(const nlohmann::json& json, const std::string& field);

 private:
  std::map<Placement, Correction> by_placement_;
  int64_t steps_seen_ = 0;
};

}  // namespace trident::flexsp
