#pragma once
// Where a swapped model's weights are while its sub-models compute (core/model/sub_model_runner.h).
//
// A swapped model keeps its flat parameters and gradients in host memory (the store the optimizer updates) and
// computes its layers in sub-models, runs of consecutive layers that a LayerSource brings onto the
// device one at a time. The SubModelRunner keeps the activations of the sub-models its Swapping says plus each other
// sub-model's input (its boundary checkpoint), and before those others' backward recomputes their forward from it or
// loads back the activations it offloaded; the last sub-model's activations are always still there.
//
// Order of calls in a training pass of G sub-models (an evaluation pass stops after the forward):
//   begin_pass(true, 1)                                               the embeddings and final norm, for the pass
//   acquire(0, forward) release(0, forward) ... acquire(G-1, forward) release(G-1, forward)
//   acquire(G-1, backward) release(G-1, backward) ... acquire(0, backward) release(0, backward)
//   end_pass(true)                                                    their gradients are back in the store
// A source may load the next sub-model while the model computes the current one, and keep a released sub-model on the
// device if it is needed again (the last forward sub-model is the first backward one). A round of several passes run
// sub-model by sub-model (Swapping::round_tokens) makes this sequence once: each sub-model computes every pass between
// its acquire and its release, and the last one's passes, forward and backward, all come after acquire(G-1, backward).
//
// A runner that offloads activations (Swapping::offloaded) also hands the source copies between the activation
// workspace and host memory, which the source runs in order with its own loads and drains, beside the compute.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/param_window.h"

namespace trident {

class LayerSource {
 public:
  virtual ~LayerSource() = default;

  // The embeddings and the final norm, on the device from begin_pass to end_pass. A training pass gets their
  // gradients as the store holds them (accumulation) and returns them at the end.
  using Outer = OuterWindows;
  // `passes`: the model's passes over a batch this sequence runs (several when run sub-model by sub-model).
  virtual Outer begin_pass(bool train, int passes) = 0;
  virtual void end_pass(bool train) = 0;  // every copy of the pass done on return

  // Sub-model `sub_model` on the device (blocks until it is). In backward its gradient window holds the store's
  // gradients of the sub-model (zeros after zero_grads), which the backward accumulates into.
  virtual ParamWindow acquire(int sub_model, bool backward) = 0;
  // The model is done with it; after backward its gradients are final and go back to the store.
  virtual void release(int sub_model, bool backward) = 0;
  // The store's gradients were set to zero.
  virtual void grads_zeroed() = 0;
  // Whether the source hands each range of the model's gradients to its grad-ready hook (GPT::grad_ready) once the
  // range is final, as the model's own pass does: a source over the model's own buffers may; one that moves the
  // gradients to a store of its own does not, and a model with a hook cannot run through it.
  virtual bool reports_grad_ready() const { return false; }

  // Offloaded activations: `copies` queued after every copy queued before and after the compute issued so far (so
  // nothing it reads or overwrites is still in use); returns a ticket for wait_copies. Device to host, or host to
  // device.
  struct Copy {
    void* dst = nullptr;
    const void* src = nullptr;
    std::size_t bytes = 0;
  };
  virtual int64_t copy_activations(std::string label, std::vector<Copy> copies, bool to_host) = 0;
  // Blocks until the copies of `ticket` are done.
  virtual void wait_copies(int64_t ticket) = 0;
};

}  // namespace trident
