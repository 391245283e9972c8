#pragma once
// The seam for a strategy that runs the model's layers itself. A resident model runs its passes alone: every layer's
// weights in its flat buffers, every layer's activations kept. A strategy that keeps them elsewhere sets a LayerRunner
// on the model, and the model's passes (forward_backward, forward_loss, forward_logits) become the runner's, built from
// the model's steps (GPT's "steps of a pass": embed, forward_layer, head, backward_layer, ...): a runner may, for one,
// compute the layers in groups swapped through device memory.
#include <vector>

#include "core/model/token_batch.h"

namespace trident {

// What a pass computes: the loss and the gradients, the loss alone, or the logits.
enum class PassKind { train, loss, logits };

class LayerRunner {
 public:
  virtual ~LayerRunner() = default;
  // One pass over a batch (host arrays), as GPT's own: the sum of the losses of the tokens with a target (0 for
  // logits, which go to `host_logits`, (N, V) fp32).
  virtual double run(const TokenBatch& batch, PassKind pass, float loss_weight, float* host_logits) = 0;
  // Training passes whose gradients are summed (GPT::forward_backward of several passes).
  virtual double run_passes(const std::vector<TokenBatch>& passes, float loss_weight) = 0;
  // The model's gradients were set to zero.
  virtual void grads_zeroed() = 0;
  // The most layers a training pass recomputed since the last call (train.recompute), and starts counting again.
  virtual int take_recomputed_layers() { return 0; }
};

}  // namespace trident
