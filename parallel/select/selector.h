#pragma once
// The per-step choice among the candidate strategies (parallel.strategy: auto; a fixed strategy is one candidate).
// Each step every candidate says whether it can run the batch; the feasible ones are estimated from the cost model,
// each estimate scaled by its candidate's correction, and the cheapest runs (the first listed on ties). Rank 0
// decides and broadcasts its choice, so ranks never disagree; with one candidate every rank asks its feasibility
// (a pure function of the batch) and nothing is broadcast, so a step may make no collective call at all.
//
// Corrections (parallel.select.mode: measured): the cost model's error depends on the batch's shape (a long softmax
// document is bound by attention, a batch of short ones by GEMMs and per-call overheads), so the ratio measured /
// estimated is kept per candidate and per shape: the longest document, rounded up to a power of two. After each step
// the ratio of the candidate that ran becomes its correction for that shape (the first such step) or moves it halfway
// toward the new ratio. A candidate not yet measured on a shape takes the mean correction of those that were (the
// cost model tends to be off by the same factor for every candidate of one batch), or, on a shape nothing ran yet, the
// mean of every correction, so it is tried when the model puts it ahead by more than that. A candidate's first step
// ever is not counted: it allocates its buffers (and NCCL connects its communicators). The corrections are saved in
// checkpoints and restored on resume. Mode `model` keeps every correction at 1: the choice is then a pure function
// of the batch and the profile, and a resumed run chooses what the uninterrupted run chose.
//
// Switching costs nothing to model here: every candidate holds the whole model and the same gradient layout, and
// the communicators of every group are made at start-up, so no step moves weights because the previous one ran
// another candidate.
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parallel/strategy.h"

namespace trident {

// One candidate's answer for a batch.
struct Option {
  const Candidate* candidate = nullptr;
  Feasibility feasibility;
  std::optional<cost::StepEstimate> estimate;  // without a cost model: none
  double correction = 1;
  double predicted_s = 0;  // estimate.seconds * correction
};

struct Comparison {
  std::vector<Option> options;  // one per candidate, in the candidates' order
  int cheapest = -1;            // the feasible option with the least predicted_s (the first on ties); -1: none
  // "no strategy can run this batch: dp: ...; ulysses sp=2: ..." when cheapest is -1
  std::string why_none() const;
};

// Pure: the comparison `trident plan` prints and the selector acts on. `cost` may be null (no estimates: the first
// feasible candidate wins); corrections[i] scales candidate i's estimate (empty: all 1).
Comparison compare(std::span<const Candidate* const> candidates, const Batch& batch,
                   const cost::StepCostModel* cost, std::span<const double> corrections = {});

class Selector {
 public:
  enum class Mode { measured, model };

  // `cost` may be empty only when there is nothing to choose (one strategy). Collective use over `world`.
  Selector(std::vector<std::unique_ptr<Strategy>> strategies, std::optional<cost::StepCostModel> cost, Mode mode,
           Communicator& world);

  struct Choice {
    Strategy* strategy = nullptr;  // nullptr when no candidate can run the batch (on every rank)
    int index = -1;
    Comparison comparison;  // rank 0 only (the others receive the index)
    int64_t shape = 0;      // the batch's shape for the corrections (rank 0 only): its longest document's bound
    std::string why_none;   // when strategy is nullptr: every candidate's reason, on every rank
  };
  // Collective.
  Choice choose(const Batch& batch);
  // The next batch, known ahead: every candidate may start preparing it (FlexSP plans it on rank 0 in the background).
  void prepare(const Batch& next);
  // Rank 0: the measured seconds of the step `choice` ran correct that candidate's later estimates (mode measured).
  void observe(const Choice& choice, double seconds);

  const std::vector<std::unique_ptr<Strategy>>& strategies() const { return strategies_; }
  bool has_cost_model() const { return cost_.has_value(); }

  // The corrections, for checkpoints: {"mode": ..., "corrections": {name: {"runs": n, "by_longest": {"512":
  // {"ratio": r, "steps": n}, ...}}}, "strategies": {name: checkpoint_state()}}, keyed by the longest document's
  // power-of-two bound; "strategies" holds the strategies whose state is not null (none: no key).
  nlohmann::json state() const;
  // Restores state() of an earlier run, each strategy's own state included (restore_state). Names this run does not
  // have are ignored, and so is the state of a version that kept one correction per candidate (its corrections start
  // over); a malformed value is a RuntimeError naming the field.
  void restore(const nlohmann::json& state);

  // The shape a batch's corrections are kept under: its longest document rounded up to a power of two (1 if empty).
  static int64_t shape_of(const Batch& batch);

 private:
  struct Correction {
    double ratio = 1;
    int64_t steps = 0;  // steps that set it
  };
  struct History {
    int64_t runs = 0;                        // steps this candidate ran, the first (buffer allocation) included
    std::map<int64_t, Correction> by_shape;  // key: shape_of the batch
  };
  // Candidate c's correction on `shape` (mode measured), by the rules above.
  double correction(const std::string& name, int64_t shape) const;

  std::vector<std::unique_ptr<Strategy>> strategies_;
  std::vector<const Candidate*> candidates_;
  std::optional<cost::StepCostModel> cost_;
  Mode mode_;
  Communicator& world_;
  std::map<std::string, History> history_;
};

}  // namespace trident
