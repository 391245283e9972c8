#pragma once
// ATOM's swap executor on one peer (docs/methods.md §4.1-4.3, ATOM): the model's flat parameters and gradients stay
// in host memory (the store AdamW updates); its layers run in sub-models (the model's sub-models) that take turns in a
// few device slots, the next one loading on the copy engine while the current one computes. Forward runs the sub-models
// in order, backward in reverse; the last forward sub-model is still in its slot for the first backward one, and
// each backward drains its gradients to the store before the slot takes the next load. The tied embedding / LM head
// and the final norm stay on the device for the whole pass.
//
// Exactness: a sub-model's gradient window starts as the store's gradient of its range (zeros after zero_grads,
// the sum so far between micro-batches), and the model's kernels accumulate into it as they would into the resident
// buffer; the recompute from a boundary checkpoint repeats the same kernels on the same inputs. So a swapped step
// equals the resident step bit for bit (tests/parallel/atom).
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"
#include "core/model/layer_source.h"
#include "core/model/sub_model_runner.h"
#include "core/tensor/tensor.h"
#include "parallel/atom/copy_engine.h"
#include "parallel/atom/swap_stats.h"

namespace trident {

struct SwapOptions {
  int slots = 2;                 // device slots for sub-models: the prefetch depth + 1 (at least 2)
  double copy_bytes_per_s = 0;   // an emulated host <-> device link; 0: memcpy speed
  bool timeline = false;         // keep every copy's and compute's span for take_timeline()
};

class LayerSwapper final : public LayerSource {
 public:
  // The runner's sub-models are the sub-models; the slots and the resident embedding / final norm are taken from
  // `device`, the model's device allocator. Sets itself as the runner's layer source.
  LayerSwapper(SubModelRunner& runner, Allocator& device, SwapOptions options);
  ~LayerSwapper() override;

  // The device bytes the constructor takes: the resident embedding and final norm, and min(slots, sub-models) slots
  // of the widest sub-model, each with weights, gradients and (bf16) the weights' bf16 copy.
  static int64_t device_bytes(const ModelConfig& config, const std::vector<int>& sub_model_starts, int slots,
                              Precision precision);

  Outer begin_pass(bool train, int passes) override;
  void end_pass(bool train) override;
  ParamWindow acquire(int sub_model, bool backward) override;
  void release(int sub_model, bool backward) override;
  void grads_zeroed() override;
  int64_t copy_activations(std::string label, std::vector<Copy> copies, bool to_host) override;
  void wait_copies(int64_t ticket) override;

  SwapStats take_stats();
  const SubModelRunner& runner() const { return runner_; }
  // With options.timeline: the copy engine's jobs and the compute of each sub-model ("forward 2", "backward 2")
  // since the last call, on one clock, by start time: the copies overlapping the compute can be read off it.
  std::vector<CopyEngine::Span> take_timeline();

 private:
  struct Range {
    int64_t begin = 0, end = 0;
  };
  struct Slot {
    Tensor params, params16, grads;
    int sub_model = -1;          // whose weights it holds (valid once `ready` is done); -1: none
    bool in_use = false;       // the model is computing with it
    bool grads_ready = false;  // its gradient window holds (or is loading) the store's, for a backward
    CopyEngine::Ticket weights_ready = 0, gradients_ready = 0;  // the jobs that fill them
  };
  struct Use {
    int sub_model;
    bool backward;
  };

  // Queues what `slot` needs for `use` (weights unless it holds them; in backward the store's gradients).
  void prepare(Slot& slot, Use use);
  Slot* holding(int sub_model);
  // Prepares the next slots - 1 uses after the current one into free slots.
  void prefetch();
  ParamWindow window(const Slot& slot, Range range) const;
  void collect_copy_spans();
  // One job that fills a device window from the store: weights (rounded to bf16 when asked), gradients or zeros.
  // `part` indexes store_grads_zero_.
  CopyEngine::Ticket load(std::string label, Range range, std::size_t part, float* params, bf16* params16, float* grads,
                          bool with_params, bool with_grads);

  SubModelRunner& runner_;
  GPT& model_;
  SwapOptions options_;
  bool bf16_;
  std::vector<Range> sub_models_;  // each sub-model's flat range
  Range embeddings_, final_norm_;
  Tensor outer_params_, outer_params16_, outer_grads_;  // [embeddings | final norm] on the device
  std::vector<Slot> slots_;
  std::vector<bool> store_grads_zero_;  // per sub-model, then one for the outer ranges
  std::vector<Use> uses_;  // the pass's order of acquires
  std::size_t cursor_ = 0;
  bool train_ = false;
  double compute_start_ = 0;
  SwapStats stats_;
  std::vector<CopyEngine::Span> compute_spans_, copy_spans_;
  CopyEngine engine_;  // last: destroyed first, finishing its jobs while the buffers they touch exist
};

}  // namespace trident
