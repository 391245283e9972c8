#pragma once
// The GPT of core/model/README.md on a compute backend (kernels/backend.h): parameters and gradients in one flat
// buffer each (core/model/layout.h), activations carved from one allocation (core/model/activations.h), every layer's
// forward and backward side by side in gpt.cpp. Memory comes from the device budget (Allocator).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/activations.h"
#include "core/model/attention.h"
#include "core/model/token_batch.h"
#include "core/model/layer_source.h"
#include "core/model/layout.h"
#include "core/tensor/tensor.h"
#include "kernels/backend.h"

namespace trident {

// Storage of the activations and of the weights the matmuls read (train.precision). bf16 keeps the fp32 master
// weights, gradients and optimizer state, and a bf16 copy of the weights for the forward and backward matmuls.
enum class Precision { fp32, bf16 };
Precision precision_named(const std::string& name);  // "fp32" | "bf16" (config values, validated by the schema)
// Bytes of one activation value as it is stored and sent between ranks.
inline int64_t activation_value_bytes(Precision precision) { return precision == Precision::bf16 ? 2 : 4; }

// A swapped model (core/model/layer_source.h): its layers computed in segments that a LayerSource brings onto the
// device, its flat parameters and gradients in host memory.
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

// A pipeline stage (parallel/pipeline/): a model that computes layers [first_layer, end_layer) of the pipeline and
// keeps only their activations. The first stage (first_layer 0) embeds the tokens, the last (end_layer n_layer)
// computes the final norm, the tied LM head and the loss; the others take their input and the gradient at their
// output from their neighbours (StageIO). Parameters and gradients keep the whole flat layout; a stage computes the
// gradients of its own layers only (the first and the last both of the tied embedding).
struct PipelineStage {
  int first_layer = 0;
  int end_layer = 0;
};

// The boundary buffers of a stage's pass: (N, C) values of the activations' type (train.precision) in the backend's
// memory, N the batch's tokens.
struct StageIO {
  const void* input = nullptr;        // its input, from the previous stage (every stage but the first)
  void* output = nullptr;             // forward: its output, for the next stage (optional in training)
  const void* output_grad = nullptr;  // training: the gradient at its output (every stage but the last)
  void* input_grad = nullptr;         // training: the gradient at its input, for the previous stage
};

class GPT {
 public:
  // Activations are sized for batches of at most `max_tokens` tokens. Parameters, gradients and activations live
  // in the backend's memory, taken from `allocator` (whose device must be the backend's); batches and results
  // cross to and from the host through the backend. With `swapping`, parameters and gradients live in its store
  // instead, and the activations are those Swapping says (one or two shared workspaces, the kept segments' layers)
  // plus one checkpoint a stashed segment's boundary. With `stage`, the model is one stage of a pipeline (not
  // swapped).
  GPT(const ModelConfig& config, int64_t max_tokens, Allocator& allocator, Backend& backend = cpu_backend(),
      Precision precision = Precision::fp32, const Swapping* swapping = nullptr,
      const PipelineStage* stage = nullptr);

  // The bytes the constructor takes from its allocator: parameters, gradients, the bf16 weight copy, activations for
  // `max_tokens` tokens, the batch's index staging off the host, the decay slopes. With `swapping`, no parameters,
  // gradients or weight copy; the shared workspace (two with offloading), the later segments' activations and the
  // checkpoints (of a round with Swapping::round_tokens, as is the index staging). With `stage`, the activations of
  // its layers only.
  static int64_t memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                              const Swapping* swapping = nullptr, const PipelineStage* stage = nullptr);
  // The host bytes a swapped model takes from its store beside parameters and gradients: the offloaded activations.
  static int64_t offload_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision,
                               const Swapping& swapping);

  const ModelConfig& config() const { return config_; }
  const ModelLayout& layout() const { return layout_; }
  int64_t num_params() const { return layout_.num_params; }
  Backend& backend() const { return *backend_; }
  // Where params() and grads() live: the compute backend's memory, or host memory when the model is swapped.
  Backend& store_backend() const { return swapped() ? cpu_backend() : *backend_; }
  Precision precision() const { return precision_; }
  bool swapped() const { return swapped_; }
  const std::vector<int>& segment_starts() const { return starts_; }
  // The layers this model computes: all of them, unless it is a pipeline stage.
  int first_layer() const { return starts_[0]; }
  int end_layer() const { return end_layer_; }
  bool first_stage() const { return first_layer() == 0; }
  bool last_stage() const { return end_layer_ == config_.n_layer; }
  // The tokens forward_backward runs segment by segment at once (Swapping::round_tokens; 0: pass by pass).
  int64_t round_tokens() const { return segment_major_ ? stash_tokens_ : 0; }
  // Layers whose forward backward recomputes (Swapping::recomputed).
  int recomputed_layers() const { return starts_[static_cast<std::size_t>(recomputed_)]; }
  // The source of a swapped model's segments: set before its first pass (the source reads params() and grads()).
  void set_layer_source(LayerSource* source);
  // The fp32 master weights. With bf16, every forward first rounds them into the bf16 copy the matmuls read (a pass
  // over the parameters, small beside a step), so nothing that writes them needs to say so.
  float* params() { return params_.data<float>(); }
  const float* params() const { return params_.data<float>(); }
  float* grads() { return grads_.data<float>(); }
  const float* grads() const { return grads_.data<float>(); }

  // GPT-2 initialisation (core/model/README.md), deterministic in `seed`.
  void init_weights(uint64_t seed);
  void zero_grads();

  // Called during backward each time a range of grads() is final for this batch, in gradient_buckets(layout())
  // order: data parallelism starts reducing a range while backward goes on with the next. Empty: no calls.
  using GradReadyHook = std::function<void(int64_t offset, int64_t numel)>;
  void set_grad_ready_hook(GradReadyHook hook) { grad_ready_ = std::move(hook); }

  // Forward, then backward of sum_t loss_weight * loss_t over the tokens with a target; gradients accumulate into
  // grads(). Returns the plain sum of those tokens' losses (for reporting; 0 on a pipeline stage but the last).
  // A pipeline stage takes its boundaries from `stage_io`.
  double forward_backward(const TokenBatch& batch, float loss_weight, const StageIO* stage_io = nullptr);
  // The same over several passes, their gradients summed. A swapped model with Swapping::round_tokens runs them (at
  // most round_tokens() tokens in all) segment by segment, each segment loading once; otherwise pass after pass.
  double forward_backward(const std::vector<TokenBatch>& passes, float loss_weight);
  // Evaluation: the sum of the losses of the tokens with a target (a pipeline stage but the last: its output, and 0).
  double forward_loss(const TokenBatch& batch, const StageIO* stage_io = nullptr);
  // Logits (N, V) of every token into host memory (tests and sampling; not a pipeline stage).
  void forward_logits(const TokenBatch& batch, float* logits);

  // Model FLOPs of one forward + backward over `batch` (6 per parameter per token for the matmuls, including the
  // tied LM head, plus the attention products), the numerator of MFU.
  double flops(const TokenBatch& batch) const;

 private:
  enum class Pass { train, loss, logits };
  // forward_backward, forward_loss and forward_logits for activations stored as T (float or bf16).
  template <class T>
  double run(const TokenBatch& host_batch, Pass pass, float loss_weight, float* host_logits, const StageIO* io);
  // forward_backward of several passes, segment by segment (Swapping::round_tokens).
  template <class T>
  double run_passes(const std::vector<TokenBatch>& host_passes, float loss_weight);
  template <class T>
  double head(const TokenBatch& batch, Pass pass, float loss_weight, float* host_logits,
              const LayerSource::Outer& outer);
  // One layer of segment `segment` (its activations in the workspace at l - its first layer), forward and backward.
  template <class T>
  void forward_layer(int l, int segment, const ParamWindow& w, const TokenBatch& batch);
  template <class T>
  void backward_layer(int l, int segment, const ParamWindow& w, const TokenBatch& batch, T* dres, T* dnarrow);
  template <class T>
  void forward_segment(int segment, const ParamWindow& w, const TokenBatch& batch, bool recomputing);
  template <class T>
  Activations<T>& acts();
  template <class T>
  T* checkpoint(int segment);  // the input of a segment in the shared workspace (segment >= 1)
  // Layer l's activations: those of a segment in a shared workspace (segment <= transient_; with offloading,
  // segments alternate between two) at l - its first layer, a later one's after the workspaces at l - the first of
  // them.
  template <class T>
  LayerActivations<T>& layer_acts(int l, int segment) {
    const int workspace = workspace_at_ >= 0 ? workspace_at_ : offloaded_ > 0 ? segment % 2 : 0;
    const int at = segment <= transient_
                       ? workspace * shared_layers_ + l - starts_[static_cast<std::size_t>(segment)]
                       : workspaces_ * shared_layers_ + l - starts_[static_cast<std::size_t>(transient_ + 1)];
    return acts<T>().layers[static_cast<std::size_t>(at)];
  }
  // The embeddings of a batch's tokens into acts.encoded; backward, their gradients from the gradient at acts.encoded.
  template <class T>
  void embed(const TokenBatch& b, const ParamWindow& embeddings);
  template <class T>
  void embed_backward(const TokenBatch& b, const ParamWindow& embeddings, const T* dencoded);
  // ln_f's backward: the gradient at the trunk's output into acts.dnarrow, from the head's in acts.dres.
  template <class T>
  void final_norm_backward(const LayerSource::Outer& outer, int64_t n);
  // Offloaded activations: whether segment k's move (k < offloaded_ - 1), and the copies of its saved arrays for a
  // batch of n tokens between its workspace and its place in host_acts_, queued on the layer source.
  bool moves(int segment) const { return segment < offloaded_ - 1; }
  template <class T>
  int64_t copy_activations(int segment, int64_t n, bool to_host);
  template <class T>
  const T* layer_input(int l, int segment) {
    if (l > starts_[static_cast<std::size_t>(segment)]) return layer_acts<T>(l - 1, segment).res3;
    if (segment == 0) return acts<T>().encoded;
    // the segment after the workspace reads the last one in it, untouched until after its own backward
    return segment <= transient_ ? checkpoint<T>(segment) : layer_acts<T>(l - 1, segment - 1).res3;
  }
  template <class T>
  const T* trunk_output() {  // the last layer's output, ln_f's input
    return layer_acts<T>(end_layer_ - 1, segments() - 1).res3;
  }
  int segments() const { return static_cast<int>(starts_.size()); }
  int segment_end(int segment) const;
  // The whole flat buffer as one window: a resident model's only one.
  ParamWindow resident_window();

  void check_batch(const TokenBatch& batch, bool need_targets) const;
  // The batches with their index arrays where the backend's ops read them: the caller's host arrays on the CPU,
  // copies in index_buffer_ otherwise (one upload).
  std::vector<TokenBatch> on_backend(const std::vector<TokenBatch>& batches);
  // The sum of the per-token losses over n tokens, read on the host.
  double sum_losses(const float* losses, int64_t n);

  ModelConfig config_;
  ModelLayout layout_;
  Backend* backend_;
  int64_t max_tokens_;
  Precision precision_;
  Tensor params_, grads_;  // in the store's memory when swapped
  Tensor weights16_;  // bf16 copy of params_ (bf16, resident only)
  std::vector<int> starts_;  // first layer of each segment; {0} when resident, {first_layer} on a pipeline stage
  int end_layer_ = 0;        // after the last layer computed here: n_layer, unless a pipeline stage
  bool swapped_ = false;  // params_ and grads_ in a Swapping's store
  int recomputed_ = 0;      // Swapping::recomputed
  int offloaded_ = 0;       // Swapping::offloaded
  int transient_ = 0;       // recomputed_ or offloaded_: the segments before it and itself share the workspace(s)
  int workspaces_ = 1;      // shared workspaces: 2 when offloading
  int shared_layers_ = 0;   // layers of the widest segment up to transient_: one shared workspace
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
  Activations<float> acts32_;  // one of the two is allocated, by precision
  Activations<bf16> acts16_;
  Tensor index_buffer_;  // tokens, positions, cu_seqlens, targets (int32) of one batch, off-host backends only
  std::vector<int32_t> host_indices_;  // the same, staged on the host for one upload
  std::vector<float> host_losses_;
  std::vector<Attention> attention_;
  GradReadyHook grad_ready_;
};

}  // namespace trident
