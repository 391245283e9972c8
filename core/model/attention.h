#pragma once
// The attention sublayer between attn.c_attn and attn.c_proj: qkv (N, 3C) -> att (N, C), both attention types.
//   softmax: causal softmax attention per sequence, scale 1/sqrt(D)
//   linear:  TransNormerLLM's block: the q/k feature map (in place on qkv), chunked linear attention with per-head
//            decay per sequence, an RMSNorm of its output over the hidden dimension, times the gate
//            (attn.c_gate's output, computed by the caller) when the block has one
#include <memory>
#include <vector>

#include "core/config/config.h"
#include "core/model/activations.h"
#include "core/model/token_batch.h"
#include "core/tensor/tensor.h"
#include "kernels/backend.h"

namespace trident {

// A replacement for one layer's attention kernel call that spans several ranks: sequence parallelism implements it
// (parallel/lasp: LASP for linear attention; parallel/sp: Ulysses for both types, Ring Attention for softmax). A
// micro-batch brings its group's ops in its SequenceParallelContext (core/model/token_batch.h). Each op sees this
// rank's tokens only; batch.sp describes the whole micro-batch. Backward follows the forward of the same micro-batch, so an
// op may keep what it needs from that forward.
class Bf16AttentionOp;

class AttentionOp {
 public:
  virtual ~AttentionOp() = default;
  // out (N, C) from qkv (N, 3C). softmax: lse (H, N) of this rank's tokens, as the kernel saves it (an op that keeps
  // its own may leave it unwritten), slopes nullptr. linear: qkv holds q and k after the feature map, out is before
  // the output norm, lse nullptr, slopes (H) and chunk are the layer's.
  virtual void forward(float* out, float* lse, const float* qkv, const float* slopes, int chunk,
                       const TokenBatch& batch) = 0;
  // dqkv (N, 3C) += the gradient of the last forward applied to dout; out and lse are that forward's (lse nullptr
  // for linear attention).
  virtual void backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse) = 0;
  // The same op on bf16 activations, or nullptr: then bf16 activations reach the op through fp32 copies
  // (WideActivations).
  virtual Bf16AttentionOp* bf16_entry() { return nullptr; }
};

// An op's entry points for bf16 activations, with the meaning of AttentionOp's (lse and slopes stay fp32): an op that
// moves activations between ranks sends them as bf16, half the bytes of the fp32 copies.
class Bf16AttentionOp {
 public:
  virtual ~Bf16AttentionOp() = default;
  virtual void forward(bf16* out, float* lse, const bf16* qkv, const float* slopes, int chunk,
                       const TokenBatch& batch) = 0;
  virtual void backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse) = 0;
};

// fp32 copies of one layer's bf16 attention inputs and outputs: an AttentionOp computes in fp32, so with bf16
// activations its inputs are widened (exactly) and its outputs rounded once, which is what the bf16 kernels do
// inside. One per model, shared by its layers, which run one after another.
struct WideActivations {
  explicit WideActivations(Backend& backend) : qkv(backend), out(backend), dout(backend), dqkv(backend) {}
  BackendArray<float> qkv, out, dout, dqkv;
};

class Attention {
 public:
  // Linear attention keeps its decay slopes in the backend's memory, taken from `allocator`. With bf16 activations,
  // `wide` holds the fp32 copies a sequence-parallel op computes on (shared by the layers).
  Attention(const ModelConfig& config, int layer, Backend& backend, Allocator& allocator,
            std::shared_ptr<WideActivations> wide);

  // Reads layer.qkv (and layer.gate), writes layer.att (and layer.lse; or layer.o, layer.rrms, and layer.qk_pre with
  // layer.qkv's q and k mapped in place). Runs the kernel, or the op batch.sp brings for this layer. T: the
  // activations' storage type (float or bf16; an AttentionOp sees bf16 activations through fp32 copies).
  template <class T>
  void forward(LayerActivations<T>& layer, const TokenBatch& batch) const;
  // The gradients of att applied to datt: dqkv (N, 3C), which must hold zeros on entry, w.r.t. qkv as c_attn wrote it
  // (before the feature map); dgate (N, C) += the gate's (nullptr without a gate). `scratch` (N, C) is overwritten.
  template <class T>
  void backward(T* dqkv, T* dgate, const T* datt, T* scratch, const LayerActivations<T>& layer,
                const TokenBatch& batch) const;

  const std::vector<float>& slopes() const { return slopes_; }  // linear attention only (host copy)

 private:
  Backend* backend_;
  int layer_;
  bool linear_;
  int H_, D_, chunk_;
  FeatureMap feature_map_ = FeatureMap::none;  // linear only
  bool norm_per_head_ = false;                 // linear only: output_norm head (else over the hidden dimension)
  std::vector<float> slopes_;
  Tensor slopes_on_backend_;
  std::shared_ptr<WideActivations> wide_;

  AttentionOp* op(const TokenBatch& batch) const { return batch.sp ? batch.sp->layer_ops[layer_] : nullptr; }

  // The attention kernel, or the op: out (and lse) from qkv; its backward into dqkv from dout.
  template <class T>
  void attend(T* out, float* lse, const T* qkv, const TokenBatch& batch) const;
  template <class T>
  void attend_backward(T* dqkv, const T* dout, const LayerActivations<T>& layer, const TokenBatch& batch) const;
  void attend_widened(AttentionOp& op, bf16* out, float* lse, const bf16* qkv, const TokenBatch& batch) const;
  void attend_backward_widened(AttentionOp& op, bf16* dqkv, const bf16* dout, const LayerActivations<bf16>& layer,
                               const TokenBatch& batch) const;
  // The output norm's rows: (N, C) over the hidden dimension, (N * H, D) per head.
  int64_t norm_rows(int64_t N) const { return norm_per_head_ ? N * H_ : N; }
  int norm_width() const { return norm_per_head_ ? D_ : H_ * D_; }
};

}  // namespace trident
