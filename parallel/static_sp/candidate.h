#pragma once
// A static candidate: `world / degree` data-parallel replicas of one sequence-parallel group of `degree` ranks,
// one method for the whole step (a hybrid model: one for its linear layers and one for its softmax layers). What it can run and what that costs are pure functions of the batch (no
// communicator), so `trident plan` asks them of a described cluster and the selector of every candidate each step;
// StaticSequenceParallel (static_sp.h) runs it.
#include <string>
#include <utility>
#include <vector>

#include "parallel/strategy.h"

namespace trident {

// A candidate's method names what each layer runs: one method for every layer (dp, lasp, lasp1, lasp2, ulysses,
// ring), or a hybrid model's linear layers' and softmax layers' methods joined by '+' ("lasp2+ring"). Ulysses runs
// both kinds of layer, so "ulysses" alone serves a hybrid too.
struct LayerMethods {
  std::string linear, softmax;
  const std::string& of(const ModelConfig& model, int64_t layer) const {
    return model.linear_layer(layer) ? linear : softmax;
  }
};
LayerMethods layer_methods(const std::string& method);

// What the model and the world must be for `method` on groups of `degree` ranks: a ConfigError naming the key
// otherwise.
void check_static_candidate(const ModelConfig& model, const std::string& method, int degree, int world);

class StaticCandidate final : public Candidate {
 public:
  // method: dp (degree 1), lasp1, lasp2, ulysses, ring, or a hybrid's pair of them (layer_methods); checked by
  // check_static_candidate. capacity: tokens one
  // rank's activations hold.
  StaticCandidate(const Config& config, const std::string& method, int degree, int world, int64_t capacity,
               Device device);

  std::string name() const override;
  std::string method() const override { return method_; }
  int degree() const override { return degree_; }
  Feasibility feasible(const Batch& batch) const override;
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override;

  int replicas() const { return replicas_; }
  int64_t micro_batches() const { return micro_batches_; }
  // Every replica's micro-batches of `batch`, as a step cuts them (empty ones included): replica r takes a share of
  // the sequences (contiguous, token counts balanced), cut into train.micro_batches.
  std::vector<std::vector<Batch>> replica_micro_batches(const Batch& batch) const;

 private:
  // The same cut as the lengths of each micro-batch's sequences, without copying the batch's tokens: what
  // feasibility and the estimate read (a planned batch can hold millions of tokens).
  std::vector<std::vector<std::vector<int64_t>>> replica_micro_lengths(const Batch& batch) const;
  // Seconds and bytes one rank spends on sequence-parallel messages for a micro-batch of `tokens` tokens: in every
  // layer, and in one layer running `method`.
  std::pair<double, int64_t> exchange(int64_t tokens, const cost::StepCostModel& cost) const;
  std::pair<double, double> layer_exchange(const std::string& method, int64_t tokens,
                                           const cost::StepCostModel& cost) const;
  // The layers a pass of `tokens` on a rank recomputes as `run` says (train.recompute).
  int recomputed_layers(const cost::RunShape& run, int64_t tokens) const;

  std::string method_;
  int degree_;
  int replicas_;
  int64_t micro_batches_;
  int64_t capacity_;
  ModelConfig model_;
  Precision precision_;
  Device device_;
  std::string recompute_;  // train.recompute
};

}  // namespace trident
