#pragma once
// FlexSP training (parallel.strategy: flexsp): each step the planner (planner.h) splits the ranks into buddy-aligned
// power-of-two groups per micro-batch and assigns the batch's documents to them; each group runs its documents
// packed in one row, cut into contiguous token slices, with Ulysses all-to-alls inside (softmax or linear models) or,
// for linear attention, LASP's state exchange (heterogeneous LASP: its cost does not grow with the group's tokens).
// The groups run over the communicators made at start-up (parallel/comm/run_groups.h), so they change from one
// micro-batch to the next at no cost. Gradients are summed over all ranks with the loss normalised by the global
// token count, so a step is the single-rank step. Rank 0 plans and broadcasts the plan with the document lengths it
// was made for; a rank handed a plan for other documents stops with an error instead of running it.
//
// Each step rank 0 takes the fastest, under the corrected cost model (corrections.h; parallel.select.mode: measured),
// of FlexSP's mixed plan and BatchAda's (the best single degree; static SP's degree is one of those it tries), so a
// step never runs a plan slower than one it had. The plan of the next batch is made in the background while the
// current one trains, with a copy of the corrections as they were when it started: a step's plan uses what the steps
// up to the one before the previous taught. Checkpoints keep the corrections and the copy the prepared plan used
// (checkpoint_state), so a resumed run plans each step with the corrections the uninterrupted run used.
//
// Test hook: if the environment variable TRIDENT_TEST_FLEXSP_SLOWDOWN is set ("DEGREE:FACTOR,...", e.g. "1:3"), each
// group's measured time is replaced by its estimate times its degree's factor (1 when unlisted), so tests get
// corrections that do not depend on the machine.
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parallel/cost/group_cost_model.h"
#include "parallel/dp/data_parallel.h"
#include "parallel/flexsp/corrections.h"
#include "parallel/flexsp/planner.h"
#include "parallel/lasp/lasp.h"
#include "parallel/static_sp/group_batch.h"
#include "parallel/strategy.h"

namespace trident {

// What runs inside a FlexSP group (parallel.flexsp.inner).
enum class FlexInner { ulysses, lasp };

// parallel.flexsp.inner resolved for strategy flexsp: auto is lasp for linear attention, else ulysses.
FlexInner configured_flex_inner(const Config& config);

// What the model and the world must be for FlexSP: a power-of-two world; with Ulysses inside, a world size dividing
// model.n_head (Ulysses splits the heads of a group of up to all ranks); with LASP inside, linear attention. A
// ConfigError naming the key otherwise.
void check_flexsp(const ModelConfig& model, int world, FlexInner inner = FlexInner::ulysses);

// How a group exchanges: Ulysses' all-to-alls, or LASP's states moved by `variant`.
cost::GroupExchange flex_exchange(const ModelConfig& model, FlexInner inner, LaspVariant variant);

// `cost` with the exchange of `inner` (parallel.flexsp.inner): for LASP, the variant parallel.lasp.variant names,
// `auto` the one the cost model finds cheaper on a group of all devices (a pure function of the profile, so a resumed
// run plans as the first did).
cost::GroupCostModel with_flex_exchange(const cost::GroupCostModel& cost, const Config& config, FlexInner inner);

// The planner's cost model for this run: the profile's cluster, network and compute sections (the compute of a token
// a third more for the L - 1 layers train.recompute: full runs forward again), its model section (or this model's
// shape when it has none), the run's activation capacity as each device's token budget, and the groups' exchange
// (with_flex_exchange).
cost::GroupCostModel flexsp_cost_model(const cost::Profile& profile, const Config& config, int64_t capacity,
                                  FlexInner inner = FlexInner::ulysses);

class FlexSequenceParallel final : public Strategy {
 public:
  // Plans a batch's document lengths (rank 0 only). The default: choose_plan with the fast solver (degrees mixed)
  // or without it (degrees single: BatchAda), with parallel.flexsp.micro_batch_tries and static SP's degree (the one
  // that holds model.max_seq_len, as `trident plan`); tests hand in fixed plans. Every plan is checked
  // (check_batch_plan) first.
  using Planner = std::function<flexsp::BatchPlan(std::span<const int64_t> lengths, const cost::GroupCostModel& cost)>;

  // Needs env.profile. Collective over the world.
  FlexSequenceParallel(const StrategyEnv& env, FlexInner inner, Planner planner = {});
  ~FlexSequenceParallel() override;

  // "flexsp" (Ulysses inside) or "flexsp-lasp"
  std::string name() const override { return inner_ == FlexInner::lasp ? "flexsp-lasp" : "flexsp"; }
  std::string method() const override { return name(); }
  int degree() const override { return 0; }
  Feasibility feasible(const Batch& batch) const override;
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override;
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override;
  StepSums evaluate(GPT& model, const Batch& batch) override;

  // Rank 0 starts planning `next` on a background thread; the step that runs it takes the plan (waiting if it is
  // not done). One plan ahead at a time.
  void prepare(const Batch& next) override;
  // How the last batch was planned and ran.
  struct GroupTime {
    int64_t degree = 0;
    double estimated_ms = 0;  // the profile's cost-model time of the group, uncorrected
    double measured_ms = 0;   // its slowest member's forward and backward of the group's documents
    double corrected_ms = 0;  // estimated_ms times the correction its plan was made with (the planner's estimate)
    // A member's last micro-batch of the step, whose backward also carried the gradient reduction it overlapped:
    // measured_ms holds time the estimate leaves out.
    bool with_reduction = false;
  };
  struct PlanReport {
    std::string layout;      // each micro-batch's group sizes, "<2, 1x2> <4>"
    double plan_ms = -1;     // rank 0's planning time of that batch (-1: no plan)
    bool plan_ready = true;  // the plan was done before the step needed it (planned ahead in time)
    // Rank 0: which plan ran and the others' times (choose_plan; the plan itself left empty) under the corrections it
    // was planned with (degree -> factor; empty: none).
    flexsp::PlanChoice choice;
    std::map<int64_t, double> corrections;
    std::vector<std::vector<GroupTime>> group_times;  // rank 0, after training: per micro-batch, per group
  };
  PlanReport plan_report() const;
  // groups, plan_ms, plan_ready, group_times ([degree, estimated ms, measured ms, corrected ms, with reduction] per
  // group, per micro-batch) and,
  // from rank 0, plan, plan_estimates and plan_corrections (docs/metrics.md).
  void add_step_metrics(nlohmann::ordered_json& record) const override;

  // {"corrections": ..., "next_plan": ...}: the learned corrections and those the prepared plan of the next step used
  // (Corrections::to_json each). Rank 0's.
  nlohmann::json checkpoint_state() const override;
  // checkpoint_state() of an earlier run; null: no corrections. A malformed value is a RuntimeError naming the field.
  void restore_state(const nlohmann::json& state) override;
  const flexsp::Corrections& corrections() const { return learned_; }

  // Rank 0 plans `batch` and broadcasts the plan; every rank checks it was made for the documents of its own `batch`
  // (a RuntimeError otherwise) and keeps it as last_plan(). Collective; train and evaluate start with it.
  const flexsp::BatchPlan& shared_plan(const Batch& batch);
  const flexsp::BatchPlan& last_plan() const { return last_plan_; }

 private:
  struct Timed {
    flexsp::PlanChoice choice;
    double ms = 0;
    std::map<int64_t, double> corrections;  // the factors it was planned with
  };
  // Rank 0's plan of `batch`: the one prepared ahead when it is for these documents, else planned now. The last one
  // is kept: estimate and train ask for the same batch. `this_step`: only a plan made since the last prepare()
  // (estimate, a step's first request: a batch with the documents of the previous one gets its own step's plan,
  // made with its own step's corrections); else any (train, after its estimate).
  const Timed& plan(const Batch& batch, bool this_step) const;
  Timed timed_plan(const std::vector<int64_t>& lengths, const flexsp::Corrections& corrections) const;
  // What the next plan uses: those restored for it on resume, else the learned ones; none in mode model.
  const flexsp::Corrections& planning_corrections() const;
  void record_group_times(const std::vector<double>& timing);
  // This rank's part of each micro-batch of the plan (empty where it is in no group).
  std::vector<std::optional<GroupBatch>> local_micro_batches(const Batch& batch, const flexsp::BatchPlan& plan);

  FlexInner inner_;
  cost::GroupCostModel cost_;  // uncorrected
  std::function<flexsp::PlanChoice(std::span<const int64_t>, const cost::GroupCostModel&)> choose_;
  int64_t static_degree_ = 0;
  bool learns_ = true;  // parallel.select.mode: measured
  std::map<int64_t, double> test_slowdown_;  // TRIDENT_TEST_FLEXSP_SLOWDOWN
  int64_t capacity_;
  ModelConfig model_;
  Precision precision_;
  Device device_;
  std::string recompute_;  // train.recompute
  RunGroups& groups_;
  DataParallel dp_;
  // Gradients reduced during the rank's last backward (overlapped), or after it: on NCCL, where a rank's last
  // micro-batch differs from its group partners' and the world's all-reduces would interleave with a group's
  // operations in a different order on each rank (NCCL may deadlock on that).
  bool overlap_reduction_;
  std::map<int, std::vector<std::unique_ptr<AttentionOp>>> ops_;  // per group size: one op per layer
  std::map<int, std::vector<AttentionOp*>> layer_ops_;
  flexsp::Corrections learned_;                // rank 0
  std::optional<flexsp::Corrections> pinned_;  // restored: what the next prepared plan uses
  flexsp::Corrections ahead_corrections_;      // what the latest prepared plan used
  int64_t generation_ = 0;                     // prepare() calls
  mutable std::vector<int64_t> planned_lengths_;
  mutable Timed planned_;
  mutable int64_t planned_generation_ = -1;
  mutable bool plan_ready_ = true;
  std::vector<int64_t> ahead_lengths_;  // what the background plan is for
  mutable std::future<Timed> ahead_;
  flexsp::BatchPlan last_plan_;
  PlanReport report_;
};

}  // namespace trident
