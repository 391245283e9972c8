#pragma once
// ATOM's execution of a swapped model on one peer (the model's LayerRunner, core/model/layer_runner.h): the layers
// computed in segments (the sub-models) that a LayerSource (parallel/atom/layer_source.h: the LayerSwapper, or a
// timer in `bench profile`) brings onto the device one at a time, the flat parameters and gradients in host memory.
// Which segments keep their activations, recompute them or offload them, and whether a step's passes run segment by
// segment, is the Swapping the placement chose (parallel/atom/placement.h).
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"
#include "parallel/atom/layer_source.h"

namespace trident {

struct Swapping {
  std::vector<int> segment_starts;  // first layer of each segment: 0, increasing, below model.n_layer
  Allocator* store = nullptr;       // host memory for params() and grads()
  // Backward recomputes the forward of the first `recomputed` segments (at most all but the last) from their inputs.
  // Those segments and the next one take turns in one activation workspace, each keeping only its input on the
  // device (a boundary checkpoint; the first segment's is the embedding output); the later segments keep every
  // layer's activations. 0: nothing recomputed; all but the last: one segment's activations at a time.
  int recomputed = 0;
  // Instead of recomputing (recomputed 0): the first `offloaded` segments (at most all but the last) move their
  // activations to the store after their forward and back before their backward. They and the next one take turns in
  // two activation workspaces, so a segment's copy out runs beside the next one's forward and its copy back beside
  // the later one's backward; the last of them is still in its workspace when its backward comes and never moves.
  int offloaded = 0;
  // The tokens of a round of passes, above the model's max_tokens: a step's passes, or as many as fit (0: passes one
  // at a time). Then every segment but the last is recomputed or offloaded, and forward_backward of a round runs it
  // segment by segment: each segment's weights come onto the device once a round, not once a pass (the checkpoints,
  // and the offloaded activations in the store, hold a round's tokens).
  int64_t round_tokens = 0;
};

class SegmentRunner final : public LayerRunner {
 public:
  // How a model swapped this way is built: its weights in the store, the activations of the shared workspace(s) and
  // of the later segments' layers, the index staging of a round.
  static ModelMemory model_memory(const ModelConfig& config, int64_t max_tokens, const Swapping& swapping);
  // The device bytes of the model built so and of the runner: the model's, and the boundary checkpoints (of a round
  // with Swapping::round_tokens).
  static int64_t memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                              const Swapping& swapping);
  // The host bytes the runner takes from the store beside parameters and gradients: the offloaded activations.
  static int64_t offload_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision,
                               const Swapping& swapping);

  // `model` was built with model_memory(swapping); the checkpoints come from `device`, the model's allocator, and the
  // offloaded activations from swapping.store. Sets itself as the model's runner.
  SegmentRunner(GPT& model, const Swapping& swapping, Allocator& device);
  ~SegmentRunner() override;
  SegmentRunner(const SegmentRunner&) = delete;
  SegmentRunner& operator=(const SegmentRunner&) = delete;

  GPT& model() const { return model_; }
  // The source of the segments' weights: set before the first pass (the source reads the model's store).
  void set_source(LayerSource* source) { source_ = source; }
  const std::vector<int>& segment_starts() const { return starts_; }
  // The tokens forward_backward runs segment by segment at once (Swapping::round_tokens; 0: pass by pass).
  int64_t round_tokens() const { return segment_major_ ? stash_tokens_ : 0; }
  // Layers whose forward backward recomputes (Swapping::recomputed).
  int recomputed_layers() const { return starts_[static_cast<std::size_t>(recomputed_)]; }

  double run(const TokenBatch& batch, PassKind pass, float loss_weight, float* host_logits) override;
  double run_passes(const std::vector<TokenBatch>& passes, float loss_weight) override;
  void grads_zeroed() override;

 private:
  template <class T>
  double run_one(const TokenBatch& host_batch, PassKind kind, float loss_weight, float* host_logits);
  template <class T>
  double run_round(const std::vector<TokenBatch>& host_passes, float loss_weight);
  // Layer l of segment `segment`, with its input and activations where the segment keeps them.
  template <class T>
  void forward_layer(int l, int segment, const ParamWindow& w, const TokenBatch& batch);
  template <class T>
  void backward_layer(int l, int segment, const ParamWindow& w, const TokenBatch& batch, T* dres, T* dnarrow);
  template <class T>
  void forward_segment(int segment, const ParamWindow& w, const TokenBatch& batch, bool recomputing);
  template <class T>
  T* checkpoint(int segment);  // the input of a segment in the shared workspace (segment >= 1)
  // Layer l's activations: those of a segment in a shared workspace (segment <= transient_; with offloading,
  // segments alternate between two) at l - its first layer, a later one's after the workspaces at l - the first of
  // them.
  template <class T>
  LayerActivations<T>& layer_acts(int l, int segment);
  template <class T>
  const T* layer_input(int l, int segment);
  template <class T>
  const T* trunk_output() {  // the last layer's output, ln_f's input
    return layer_acts<T>(end_layer_ - 1, segments() - 1).res3;
  }
  // Offloaded activations: whether segment k's move (k < offloaded_ - 1), and the copies of its saved arrays for a
  // batch of n tokens between its workspace and its place in host_acts_, queued on the layer source.
  bool moves(int segment) const { return segment < offloaded_ - 1; }
  template <class T>
  int64_t copy_activations(int segment, int64_t n, bool to_host);
  int segments() const { return static_cast<int>(starts_.size()); }
  int segment_end(int segment) const;

  GPT& model_;
  std::vector<int> starts_;  // first layer of each segment
  int end_layer_ = 0;        // n_layer
  int recomputed_ = 0;       // Swapping::recomputed
  int offloaded_ = 0;        // Swapping::offloaded
  int transient_ = 0;        // recomputed_ or offloaded_: the segments before it and itself share the workspace(s)
  int workspaces_ = 1;       // shared workspaces: 2 when offloading
  int shared_layers_ = 0;    // layers of the widest segment up to transient_: one shared workspace
  // The tokens the checkpoints and the offloaded activations hold: max_tokens, or a round's (Swapping::round_tokens).
  int64_t stash_tokens_ = 0;
  bool segment_major_ = false;  // a round of several passes runs segment by segment (Swapping::round_tokens)
  // While a step runs segment by segment: where the current pass's tokens start in the checkpoints and the offloaded
  // activations, and the workspace its segment computes in (-1: by segment, as in one pass).
  int64_t pass_at_ = 0;
  int workspace_at_ = -1;
  Tensor checkpoints_;  // (transient_, stash_tokens_, C) of the activations' type: the inputs of segments 1..transient_
  // Offloaded activations in the store: each moving layer's saved arrays, stash_tokens_ tokens each, one after another.
  Tensor host_acts_;
  int64_t host_layer_bytes_ = 0;
  std::vector<int64_t> to_host_, to_device_;  // per segment, the tickets of its activations' copies this pass
  LayerSource* source_ = nullptr;
};

}  // namespace trident
