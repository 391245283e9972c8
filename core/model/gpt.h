#pragma once
// The GPT of core/model/README.md on a compute backend (kernels/backend.h): parameters and gradients in one flat
// buffer each (core/model/layout.h), activations carved from one allocation (core/model/activations.h), every layer's
// forward and backward side by side in gpt.cpp. Memory comes from the device budget (Allocator).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/activations.h"
#include "core/model/attention.h"
#include "core/model/layer_runner.h"
#include "core/model/layout.h"
#include "core/model/param_window.h"
#include "core/tensor/tensor.h"
#include "kernels/backend.h"

namespace trident {

// Storage of the activations and of the weights the matmuls read (train.precision). bf16 keeps the fp32 master
// weights, gradients and optimizer state, and a bf16 copy of the weights for the forward and backward matmuls.
enum class Precision { fp32, bf16 };
Precision precision_named(const std::string& name);  // "fp32" | "bf16" (config values, validated by the schema)
// Bytes of one activation value as it is stored and sent between ranks.
inline int64_t activation_value_bytes(Precision precision) { return precision == Precision::bf16 ? 2 : 4; }

// What the source of a model's runner keeps in the model's stead (parallel.zero): nothing; the gradients (stage 2:
// grads() is not allocated); or the weights and the gradients (stage 3: nor are params() and their bf16 copy).
enum class InSource { nothing, gradients, states };

// The shape of a model's memory for a strategy that runs its layers (core/model/layer_runner.h); the defaults are a
// resident model's.
struct ModelMemory {
  // params() and grads() in host memory a runner brings the weights onto the device from (then the model keeps no
  // bf16 copy of them either): `store`, which the constructor needs and memory_bytes does not. Otherwise they come
  // from the allocator the model is built with.
  bool weights_on_host = false;
  Allocator* store = nullptr;
  int64_t activation_layers = -1;  // layers' activations allocated (-1: every layer's; a runner may want more)
  int64_t index_values = 0;        // int32 index values staged off the host at once (0: one batch of max_tokens)
  // train.recompute: selective: the layers keep no norm or GELU outputs of their own (one slot for all of them), and
  // each layer's backward computes them again from what it kept.
  bool selective_recompute = false;
  // Values of the activations' type allocated after them, for the runner (Activations::spare).
  int64_t spare_values = 0;
  // What the runner's source keeps instead of the model: then grads() (and with the weights, params()) is nullptr.
  InSource in_source = InSource::nothing;
};

// GPT-2's initial weights of `layout` (core/model/README.md), drawn on the host in `seed`: the same on any backend,
// rank count or sharding. With `range`, those of that range of the flat layout only (every value before it is still
// drawn: one sequence of draws).
std::vector<float> initial_weights(const ModelLayout& layout, uint64_t seed, std::optional<FlatRange> range = {});

class GPT {
 public:
  // Activations are sized for batches of at most `max_tokens` tokens. Parameters, gradients and activations live
  // in the backend's memory, taken from `allocator` (whose device must be the backend's); batches and results
  // cross to and from the host through the backend. `memory` shapes them for a strategy's runner.
  GPT(const ModelConfig& config, int64_t max_tokens, Allocator& allocator, Backend& backend = cpu_backend(),
      Precision precision = Precision::fp32, const ModelMemory& memory = {});

  // The bytes the constructor takes from its allocator: parameters, gradients and the bf16 weight copy (unless in a
  // store), the activations of `max_tokens` tokens, the batch's index staging off the host, the decay slopes.
  static int64_t memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                              const ModelMemory& memory = {});

  const ModelConfig& config() const { return config_; }
  const ModelLayout& layout() const { return layout_; }
  int64_t num_params() const { return layout_.num_params; }
  Backend& backend() const { return *backend_; }
  Precision precision() const { return precision_; }
  int64_t max_tokens() const { return max_tokens_; }
  // Where params() and grads() live: the compute backend's memory, or host memory (ModelMemory::store).
  Backend& store_backend() const { return params_on_host_ ? cpu_backend() : *backend_; }
  bool weights_on_host() const { return params_on_host_; }
  // The fp32 master weights (with bf16, a pass rounds them into the copy the matmuls read: resident_weights());
  // nullptr where the runner's source keeps them (ModelMemory::in_source).
  float* params() { return params_.defined() ? params_.data<float>() : nullptr; }
  const float* params() const { return params_.defined() ? params_.data<float>() : nullptr; }
  bool holds_weights() const { return params_.defined(); }
  // nullptr where the runner's source keeps them (ModelMemory::in_source).
  float* grads() { return grads_.defined() ? grads_.data<float>() : nullptr; }
  const float* grads() const { return grads_.defined() ? grads_.data<float>() : nullptr; }

  // GPT-2 initialisation (core/model/README.md), deterministic in `seed`: initial_weights below.
  void init_weights(uint64_t seed);
  void zero_grads();

  // Called during backward each time a range of grads() is final for this batch, in gradient_buckets(layout())
  // order: data parallelism starts reducing a range while backward goes on with the next. Empty: no calls.
  using GradReadyHook = std::function<void(int64_t offset, int64_t numel)>;
  void set_grad_ready_hook(GradReadyHook hook) { grad_ready_ = std::move(hook); }
  bool has_grad_ready_hook() const { return static_cast<bool>(grad_ready_); }

  // A strategy that runs the layers itself: the passes below become its runner's (nullptr: the model's own).
  void set_runner(LayerRunner* runner) { runner_ = runner; }
  LayerRunner* runner() const { return runner_; }
  // Whether the passes below run: through a runner, or the model's own with every layer's activations (a model a
  // strategy drives step by step, such as a pipeline stage's, runs none itself).
  bool runs_passes() const { return runner_ != nullptr || activation_layers_ == config_.n_layer; }

  // Forward, then backward of sum_t loss_weight * loss_t over the tokens with a target; gradients accumulate into
  // grads(). Returns the plain sum of those tokens' losses (for reporting).
  double forward_backward(const TokenBatch& batch, float loss_weight);
  // The same over several passes, their gradients summed: pass after pass, or as the runner runs them.
  double forward_backward(const std::vector<TokenBatch>& passes, float loss_weight);
  // Evaluation: the sum of the losses of the tokens with a target.
  double forward_loss(const TokenBatch& batch);
  // Logits (N, V) of every token into host memory (tests and sampling).
  void forward_logits(const TokenBatch& batch, float* logits);

  // Model FLOPs of one forward + backward over `batch` (6 per parameter per token for the matmuls, including the
  // tied LM head, plus the attention products), the numerator of MFU.
  double flops(const TokenBatch& batch) const;

  // ---- the steps of a pass, from which the model's own pass and a runner's are made --------------------------------
  // T is the activations' type (float, or bf16 with train.precision: bf16). Activations: the shared buffers (encoded,
  // the head's, the backward scratch) and ModelMemory::activation_layers layers' saved arrays.
  template <class T>
  Activations<T>& activations();
  int64_t activation_layers() const { return activation_layers_; }
  // Ids inside the vocabulary, positions inside max_seq_len, cu_seqlens well formed; targets when needed.
  void check_batch(const TokenBatch& batch, bool need_targets) const;
  // The batches with their index arrays where the backend's ops read them: the caller's host arrays on the CPU,
  // copies in the model's staging buffer otherwise (one upload).
  std::vector<TokenBatch> on_backend(const std::vector<TokenBatch>& batches);
  // The whole flat buffer as one window, for a pass of a model that holds its weights; with bf16 the masters are
  // rounded into the copy the matmuls read first (a pass over the parameters, small beside a step), so nothing that
  // writes them needs to say so.
  ParamWindow resident_weights();
  // The embeddings of a batch's tokens into activations().encoded; backward, their gradients from the gradient at
  // the encoded tokens.
  template <class T>
  void embed(const TokenBatch& batch, const ParamWindow& embeddings);
  template <class T>
  void embed_backward(const TokenBatch& batch, const ParamWindow& embeddings, const T* dencoded);
  // Layer l from its input x, saving into `a`; backward: dres enters as the gradient at the layer's output and
  // leaves as the one at its input (dnarrow and the wide scratch are overwritten).
  template <class T>
  void forward_layer(int l, const ParamWindow& w, const TokenBatch& batch, const T* x, LayerActivations<T>& a);
  template <class T>
  void backward_layer(int l, const ParamWindow& w, const TokenBatch& batch, const T* x, const LayerActivations<T>& a,
                      T* dres, T* dnarrow);
  // ln_f and the tied LM head on the last layer's output: the logits (into host_logits), or the losses, or
  // (training) the losses, d ln_f(x) into activations().dres and the LM head's part of dwte. Returns the sum of the
  // losses (0 for logits).
  template <class T>
  double head(const TokenBatch& batch, PassKind pass, float loss_weight, float* host_logits, const OuterWindows& outer,
              const T* trunk_output);
  // ln_f's backward: the gradient at the trunk's output into activations().dnarrow, from the head's in dres.
  template <class T>
  void final_norm_backward(const OuterWindows& outer, const T* trunk_output, int64_t n);
  // Called during backward each time a range of grads() is final (GPT::set_grad_ready_hook).
  void grad_ready(std::size_t bucket);

 private:
  // The model's own pass: every layer resident.
  template <class T>
  double run(const TokenBatch& host_batch, PassKind pass, float loss_weight, float* host_logits);
  double dispatch(const TokenBatch& batch, PassKind pass, float loss_weight, float* host_logits);
  // The sum of the per-token losses over n tokens, read on the host.
  double sum_losses(const float* losses, int64_t n);

  ModelConfig config_;
  ModelLayout layout_;
  Backend* backend_;
  int64_t max_tokens_;
  Precision precision_;
  Tensor params_, grads_;     // in ModelMemory::store when given
  Tensor weights16_;          // bf16 copy of params_ (bf16, without a store)
  bool params_on_host_ = false;
  int64_t activation_layers_ = 0;
  bool selective_recompute_ = false;  // ModelMemory::selective_recompute
  Activations<float> acts32_;  // one of the two is allocated, by precision
  Activations<bf16> acts16_;
  Tensor index_buffer_;  // tokens, positions, cu_seqlens, targets (int32) of one batch, off-host backends only
  std::vector<int32_t> host_indices_;  // the same, staged on the host for one upload
  std::vector<float> host_losses_;
  std::vector<Attention> attention_;
  std::vector<std::pair<int64_t, int64_t>> buckets_;  // gradient_buckets(layout_)
  GradReadyHook grad_ready_;
  LayerRunner* runner_ = nullptr;
};

}  // namespace trident
