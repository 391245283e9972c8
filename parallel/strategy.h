#pragma once
// A parallel strategy: one way to run a training step's global batch on the ranks of this run. It answers, for a
// batch, whether it can run it (feasible, with the reason when not), what that costs (estimate), and runs it:
// partitions the batch over the ranks, binds each micro-batch's sequence-parallel group (core/model/token_batch.h: the
// group travels with the batch), runs forward and backward, and sums the gradients over all ranks. The loop
// (app/train/) then clips and applies the optimizer. A strategy family registers in parallel/select/registry.cpp's
// table (parallel/strategy_entry.h); the selector (parallel/select/selector.h) picks one per step.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/strategy_tensors.h"
#include "core/config/config.h"
#include "core/data/batch.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "parallel/comm/run_groups.h"
#include "parallel/cost/step_cost.h"
#include "parallel/zero/model_shards.h"

namespace trident {

class PlacedRun;  // parallel/placement/model_placement.h

// What a strategy is built from: the run's communicators (made at start-up, shared by every strategy), the compute
// backend and the config. Strategies are built on every rank, collectively over the world.
struct StrategyEnv {
  RunGroups& groups;
  Backend& backend;
  const Config& config;
  int64_t capacity_tokens = 0;  // tokens one rank's activations hold (the model's max_tokens)
  const cost::Profile* profile = nullptr;  // the run's cluster profile, for strategies that plan with it (FlexSP)
  PlacedRun* placed = nullptr;  // what the placement of the family that placed the model attached to it, else none
  // parallel.zero.stage 2 and 3: the source that reduce-scatters the gradients (and gathers the weights) as the
  // model's passes run (a shardable strategy's data parallelism hands it the step: DataParallel), else none.
  ModelShards* shards = nullptr;
};

struct Feasibility {
  bool ok = true;
  std::string reason;  // why not, when !ok
};

// Sums over all ranks of one pass over a global batch.
struct StepSums {
  double loss_sum = 0;  // per-token losses of the tokens with a target
  double targets = 0;   // tokens with a target
  double tokens = 0;    // tokens processed
  double flops = 0;     // model FLOPs (forward + backward; 0 for evaluation)
};

// What can be asked of a way to run a step without running it: pure functions of the batch, the same answer on every
// rank, no communicator. `trident plan` and the selector ask them of every candidate.
class Candidate {
 public:
  virtual ~Candidate() = default;
  // One line for logs, metrics and plans: "dp", "lasp1 sp=4", "ulysses sp=2".
  virtual std::string name() const = 0;
  virtual std::string method() const = 0;  // "dp", "lasp1", "lasp2", "ulysses", "ring", "flexsp", "flexsp-lasp",
                                           // "atom", "pipeline"
  virtual int degree() const = 0;          // ranks per sequence-parallel group (1: data parallelism; 0: groups of
                                           // several degrees, planned per micro-batch: FlexSP)
  // Whether this layout can run `batch` within its activation capacity.
  virtual Feasibility feasible(const Batch& batch) const = 0;
  // What running `batch` costs, from the cost model (parallel/cost/step_cost.h).
  virtual cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const = 0;
};

class Strategy : public Candidate {
 public:
  // Forward and backward of this rank's share of `batch`, the loss weighted by `loss_weight` (1 / the batch's target
  // tokens, so the gradient is the global mean), in train.micro_batches accumulation steps. On return model.grads()
  // holds the whole batch's gradient on every rank (ATOM's averaging peers: the mean gradient of this rank's share,
  // each peer updating its own replica). Collective over all ranks.
  virtual StepSums train(GPT& model, const Batch& batch, float loss_weight) = 0;
  // The loss sums of `batch`, without gradients (evaluation). Collective over all ranks.
  virtual StepSums evaluate(GPT& model, const Batch& batch) = 0;

  // ---- optional: the defaults fit a strategy whose ranks hold the same model and nothing of their own ----

  // After the optimizer applied the step's update (app/train/step.h): ATOM's peers average their parameters here.
  // Collective over all ranks.
  virtual void after_update(GPT& model) { (void)model; }
  // Completes what is still in flight and would change the model (ATOM's averaging rounds), and brings the
  // parameters and optimizer state up to date where the next reader needs them, before a checkpoint, at the end of
  // the run and before another strategy takes over: every rank's, or (a pipeline, which runs alone and whose stages
  // update their own layers) rank 0's parameters, which the checkpoint's and the final weights' writer reads.
  // Collective over all ranks.
  virtual void settle(GPT& model, AdamW& optimizer) {
    (void)model;
    (void)optimizer;
  }
  // For the checkpoint of `step` in `run_dir`, after settle: the optimizer state this strategy's ranks keep apart,
  // each rank writing its own part into the checkpoint's build directory (checkpoint_build_dir, which rank 0 makes
  // first: begin_checkpoint); the files' records, in order, covering every parameter. Empty (the default): rank 0
  // writes the whole optimizer. Collective over all ranks.
  virtual std::vector<OptimizerShard> write_optimizer_shards(const AdamW& optimizer,
                                                             const std::filesystem::path& run_dir, int64_t step) {
    (void)optimizer;
    (void)run_dir;
    (void)step;
    return {};
  }
  // The step's squared gradient norm, the same on every rank. By default the norm of model.grads(), which holds the
  // whole gradient; a pipeline's stages each add their own layers'. Collective over all ranks.
  virtual double squared_grad_norm(const GPT& model) {
    return model.store_backend().squared_norm(model.grads(), model.num_params());
  }
  // The {offset, numel} ranges of the flat parameters this rank's optimizer updates; empty: all of them (a
  // pipeline's stages: their own layers').
  virtual std::vector<std::pair<int64_t, int64_t>> updated_ranges() const { return {}; }
  // Whether `flag` holds on every rank. By default a flag computed from the step's reduced loss and gradient, so the
  // same everywhere; a strategy whose ranks keep their own gradients (ATOM's averaging peers) reduces it. Collective.
  virtual bool on_every_rank(bool flag) { return flag; }
  // Whether this rank steps on its own, making no collective call in a step (ATOM's peers with round deadlines): its
  // train and evaluate sums are then its own share's, and the loop agrees on nothing per step (stop signals are each
  // rank's own, checkpoints are rank 0's replica written without waiting for the others).
  virtual bool independent() const { return false; }
  // The batch after the one about to run, known ahead (batches are a pure function of the step): a strategy that
  // plans each batch may start planning it now, on rank 0, in the background. Not collective.
  virtual void prepare(const Batch& next) { (void)next; }
  // Adds this strategy's own fields about the step it last trained to the step's record (a metrics.jsonl line,
  // written by rank 0; docs/metrics.md lists the fields): FlexSP its groups and plan, ATOM its swaps
  // and averaging. Called on every rank after train. None by default.
  virtual void add_step_metrics(nlohmann::ordered_json& record) const { (void)record; }
  // This strategy's own state a checkpoint keeps, beyond the model and AdamW (rank 0's, after settle): DiLoCo's
  // outer momentum. None by default.
  virtual StrategyTensors checkpoint_tensors() const { return {}; }
  // A resumed run's: what the checkpoint kept (empty when it kept nothing), before the first step.
  virtual void restore(const StrategyTensors& tensors) { (void)tensors; }
  // This strategy's own state a checkpoint keeps as JSON (trainer_state.json, in the selector's state under the
  // strategy's name; doubles round-trip exactly): FlexSP's corrections. Rank 0's. Null by default: none.
  virtual nlohmann::json checkpoint_state() const { return nullptr; }
  // A resumed run's: what checkpoint_state() returned (null when the checkpoint kept nothing), before the first step.
  // A malformed value is a RuntimeError naming the field.
  virtual void restore_state(const nlohmann::json& state) { (void)state; }
};

}  // namespace trident
