#pragma once
// A model's layers run in sub-models (the model's LayerRunner, core/model/layer_runner.h): runs of consecutive layers
// whose weights a LayerSource (core/model/layer_source.h) provides one at a time. ATOM's swapped model keeps its flat
// parameters and gradients in host memory and its LayerSwapper (or a timer in `bench profile`) brings each sub-model
// onto the device; a resident model recomputing its activations (train.recompute, core/model/recompute.h) hands out
// its own buffers. Which sub-models keep their activations, recompute them or offload them, and whether a step's
// passes run sub-model by sub-model, is the Swapping its placement chose.
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"
#include "core/model/layer_source.h"

namespace trident {

struct Swapping {
  std::vector<int> sub_model_starts;  // first layer of each sub-model: 0, increasing, below model.n_layer
  // Host memory for params() and grads() (a swapped model) and the offloaded activations.
  Allocator* store = nullptr;
  // The weights stay in the model's own buffers (a resident model recomputing its activations): no store for them.
  bool resident = false;
  // Backward recomputes the forward of the first `recomputed` sub-models (at most all but the last) from their inputs.
  // Those sub-models and the next one take turns in one activation workspace, each keeping only its input on the
  // device (a boundary checkpoint; the first sub-model's is the embedding output); the later sub-models keep every
  // layer's activations. 0: nothing recomputed; all but the last: one sub-model's activations at a time.
  int recomputed = 0;
  // Instead of recomputing (recomputed 0): the first `offloaded` sub-models (at most all but the last) move their
  // activations to the store after their forward and back before their backward. They and the next one take turns in
  // two activation workspaces, so a sub-model's copy out runs beside the next one's forward and its copy back beside
  // the later one's backward; the last of them is still in its workspace when its backward comes and never moves.
  int offloaded = 0;
  // The tokens of a round of passes, above the model's max_tokens: a step's passes, or as many as fit (0: passes one
  // at a time). Then every sub-model but the last is recomputed or offloaded, and forward_backward of a round runs it
  // sub-model by sub-model: each sub-model's weights come onto the device once a round, not once a pass (the
  // checkpoints, and the offloaded activations in the store, hold a round's tokens).
  int64_t round_tokens = 0;
  // A resident model's (resident): its layers keep no norm or GELU outputs of their own
  // (ModelMemory::selective_recompute), and what the source keeps instead of the model (ModelMemory::in_source).
  bool selective_recompute = false;
  InSource in_source = InSource::nothing;
  // train.recompute: auto (a resident model's one-layer sub-models, all but the last `recomputed`): each pass
  // recomputes only the fewest first layers its tokens need (layers_recomputed) to fit the model's activation memory:
  // one layer's arrays at max_tokens and a spare of `spare_values` values (at least the checkpoints of all but the
  // last layer at max_tokens; more where the device has room: as_needed_spare). The runner carves the model's
  // activations again for the layers that keep theirs, and keeps the checkpoints in the spare.
  bool recompute_as_needed = false;
  int64_t spare_values = 0;
};

class SubModelRunner final : public LayerRunner {
 public:
  // How a model swapped this way is built: its weights in the store, the activations of the shared workspace(s) and
  // of the later sub-models' layers, the index staging of a round.
  static ModelMemory model_memory(const ModelConfig& config, int64_t max_tokens, const Swapping& swapping);
  // The device bytes of the model built so and of the runner: the model's, and the boundary checkpoints (of a round
  // with Swapping::round_tokens).
  static int64_t memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                              const Swapping& swapping);
  // The host bytes the runner takes from the store beside parameters and gradients: the offloaded activations.
  static int64_t offload_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision,
                               const Swapping& swapping);
  // Swapping::recompute_as_needed: the bytes of the model's activations for passes of at most `max_tokens` with
  // `spare_values` (0: the checkpoints of all but the last layer at max_tokens);
  static int64_t as_needed_bytes(const ModelConfig& config, Precision precision, int64_t max_tokens,
                                 int64_t spare_values = 0);
  // the spare values that make them `free_bytes` more than with spare 0, but no more than every layer's arrays take;
  static int64_t as_needed_spare(const ModelConfig& config, Precision precision, int64_t max_tokens,
                                 int64_t free_bytes);
  // the first layers a pass of `pass_tokens` recomputes: the fewest whose arrays and checkpoints fit `room_bytes`
  // (as_needed_bytes), and all but the last at most.
  static int layers_recomputed(const ModelConfig& config, Precision precision, int64_t room_bytes,
                               int64_t pass_tokens);

  // `model` was built with model_memory(swapping); the checkpoints come from `device`, the model's allocator, and the
  // offloaded activations from swapping.store. Sets itself as the model's runner. A model with a grad-ready hook
  // needs a source that reports gradients (LayerSource::reports_grad_ready).
  SubModelRunner(GPT& model, const Swapping& swapping, Allocator& device);
  ~SubModelRunner() override;
  SubModelRunner(const SubModelRunner&) = delete;
  SubModelRunner& operator=(const SubModelRunner&) = delete;

  GPT& model() const { return model_; }
  // The source of the sub-models' weights: set before the first pass (the source reads the model's store).
  void set_source(LayerSource* source) { source_ = source; }
  const std::vector<int>& sub_model_starts() const { return starts_; }
  // The tokens forward_backward runs sub-model by sub-model at once (Swapping::round_tokens; 0: pass by pass).
  int64_t round_tokens() const { return sub_model_major_ ? stash_tokens_ : 0; }
  // Layers whose forward backward recomputes (Swapping::recomputed; Swapping::recompute_as_needed: the last pass's).
  int recomputed_layers() const { return starts_[static_cast<std::size_t>(recomputed_)]; }

  double run(const TokenBatch& batch, PassKind pass, float loss_weight, float* host_logits) override;
  double run_passes(const std::vector<TokenBatch>& passes, float loss_weight) override;
  void grads_zeroed() override;
  int take_recomputed_layers() override;

 private:
  template <class T>
  double run_one(const TokenBatch& host_batch, PassKind kind, float loss_weight, float* host_logits);
  template <class T>
  double run_round(const std::vector<TokenBatch>& host_passes, float loss_weight);
  // Layer l of sub-model `sub_model`, with its input and activations where the sub-model keeps them.
  template <class T>
  void forward_layer(int l, int sub_model, const ParamWindow& w, const TokenBatch& batch);
  template <class T>
  void backward_layer(int l, int sub_model, const ParamWindow& w, const TokenBatch& batch, T* dres, T* dnarrow);
  template <class T>
  void forward_sub_model(int sub_model, const ParamWindow& w, const TokenBatch& batch, bool recomputing);
  template <class T>
  T* checkpoint(int sub_model);  // the input of a sub-model in the shared workspace (sub-model >= 1)
  // Swapping::recompute_as_needed: the layers a pass of `tokens` on every rank of its group recomputes, and the
  // activations carved for them.
  template <class T>
  void fit_pass(int64_t tokens);
  // Layer l's activations: those of a sub-model in a shared workspace (sub-model <= transient_; with offloading,
  // sub-models alternate between two) at l - its first layer, a later one's after the workspaces at l - the first of
  // them.
  template <class T>
  LayerActivations<T>& layer_acts(int l, int sub_model);
  template <class T>
  const T* layer_input(int l, int sub_model);
  template <class T>
  const T* trunk_output() {  // the last layer's output, ln_f's input
    return layer_acts<T>(end_layer_ - 1, sub_models() - 1).res3;
  }
  // Offloaded activations: whether sub-model k's move (k < offloaded_ - 1), and the copies of its saved arrays for a
  // batch of n tokens between its workspace and its place in host_acts_, queued on the layer source.
  bool moves(int sub_model) const { return sub_model < offloaded_ - 1; }
  template <class T>
  int64_t copy_activations(int sub_model, int64_t n, bool to_host);
  int sub_models() const { return static_cast<int>(starts_.size()); }
  // A pass may run with a grad-ready hook only where the source calls it (LayerSource::reports_grad_ready).
  void check_grad_ready() const;
  int sub_model_end(int sub_model) const;

  GPT& model_;
  std::vector<int> starts_;  // first layer of each sub-model
  int end_layer_ = 0;        // n_layer
  int recomputed_ = 0;       // Swapping::recomputed
  int offloaded_ = 0;        // Swapping::offloaded
  int transient_ = 0;        // recomputed_ or offloaded_: the sub-models before it and itself share the workspace(s)
  int workspaces_ = 1;       // shared workspaces: 2 when offloading
  int shared_layers_ = 0;    // layers of the widest sub-model up to transient_: one shared workspace
  // The tokens the checkpoints and the offloaded activations hold: max_tokens, or a round's (Swapping::round_tokens).
  int64_t stash_tokens_ = 0;
  bool sub_model_major_ = false;  // a round of several passes runs sub-model by sub-model (Swapping::round_tokens)
  bool as_needed_ = false;        // Swapping::recompute_as_needed
  int most_recomputed_ = 0;       // take_recomputed_layers
  // While a step runs sub-model by sub-model: where the current pass's tokens start in the checkpoints and the
  // offloaded activations, and the workspace its sub-model computes in (-1: by sub-model, as in one pass).
  int64_t pass_at_ = 0;
  int workspace_at_ = -1;
  // (transient_, stash_tokens_, C) of the activations' type: the inputs of sub-models 1..transient_ (in the model's
  // activations' spare with Swapping::recompute_as_needed)
  Tensor checkpoints_;
  // Offloaded activations in the store: each moving layer's saved arrays, stash_tokens_ tokens each, one after another.
  Tensor host_acts_;
  int64_t host_layer_bytes_ = 0;
  std::vector<int64_t> to_host_, to_device_;  // per sub-model, the tickets of its activations' copies this pass
  LayerSource* source_ = nullptr;
};

}  // namespace trident
