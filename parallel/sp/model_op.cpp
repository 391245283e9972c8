#include "parallel/sp/model_op.h"

#include <utility>
#include <vector>

#include "kernels/common/error.h"
#include "parallel/sp/ring_attention.h"
#include "parallel/sp/ulysses.h"

namespace trident {

namespace {

// The whole batch as the ops take it, with a copy of its boundaries: backward runs after the caller's forward
// arguments may have gone, and needs the same batch.
class GroupBatch {
 public:
  GroupBatch(Communicator& sp, int H, int D) : sp_(&sp), H_(H), D_(D) {}

  const SpBatch& set(const TokenBatch& b) {
    TRIDENT_CHECK(b.sp != nullptr, "a sequence-parallel layer needs the whole batch's document boundaries");
    const SequenceParallelContext& g = *b.sp;
    cu_seqlens_.assign(g.cu_seqlens, g.cu_seqlens + g.num_sequences + 1);
    batch_ = {cu_seqlens_.data(), g.num_sequences, g.num_tokens, H_, D_};
    const int64_t mine = shard_size(g.num_tokens, sp_->size(), sp_->rank());
    TRIDENT_CHECK(mine == b.num_tokens, "rank holds {} tokens but its shard of the batch has {}", b.num_tokens, mine);
    return batch_;
  }
  const SpBatch& get() const { return batch_; }

 private:
  Communicator* sp_;
  int H_, D_;
  std::vector<int32_t> cu_seqlens_;
  SpBatch batch_{};
};

// Ulysses takes bf16 activations directly: its all-to-alls then carry bf16, half the bytes of fp32 copies.
class UlyssesOp final : public AttentionOp, public Bf16AttentionOp {
 public:
  UlyssesOp(Communicator& sp, Backend& backend, AttentionType type, int H, int D)
      : sp_(sp), type_(type), batch_(sp, H, D), cache_(backend), cache_bf16_(backend) {}

  // Softmax keeps its lse head-sharded in the cache; the layer's lse stays unwritten (only backward reads it).
  void forward(float* out, float*, const float* qkv, const float* slopes, int chunk, const TokenBatch& b) override {
    run_forward(out, cache_, qkv, slopes, chunk, b);
  }
  void backward(float* dqkv, const float* dout, const float*, const float*, const float*) override {
    run_backward(dqkv, dout, cache_);
  }
  Bf16AttentionOp* bf16_entry() override { return this; }
  void forward(bf16* out, float*, const bf16* qkv, const float* slopes, int chunk, const TokenBatch& b) override {
    run_forward(out, cache_bf16_, qkv, slopes, chunk, b);
  }
  void backward(bf16* dqkv, const bf16* dout, const bf16*, const bf16*, const float*) override {
    run_backward(dqkv, dout, cache_bf16_);
  }

 private:
  Communicator& sp_;
  AttentionType type_;
  GroupBatch batch_;
  UlyssesCacheOf<float> cache_;       // buffers grow on first use: only the precision in use takes memory
  UlyssesCacheOf<bf16> cache_bf16_;
  const float* slopes_ = nullptr;  // the layer's, alive as long as the model
  int chunk_ = 0;

  template <class T>
  void run_forward(T* out, UlyssesCacheOf<T>& cache, const T* qkv, const float* slopes, int chunk,
                   const TokenBatch& b) {
    const SpBatch& batch = batch_.set(b);
    if (type_ == AttentionType::softmax) return ulysses_softmax_forward(sp_, out, cache, qkv, batch);
    slopes_ = slopes;
    chunk_ = chunk;
    ulysses_linear_forward(sp_, out, cache, qkv, slopes, batch, chunk);
  }
  template <class T>
  void run_backward(T* dqkv, const T* dout, UlyssesCacheOf<T>& cache) {
    if (type_ == AttentionType::softmax) return ulysses_softmax_backward(sp_, dqkv, dout, cache, batch_.get());
    ulysses_linear_backward(sp_, dqkv, dout, cache, slopes_, batch_.get(), chunk_);
  }
};

// Ring Attention keeps no activations itself: backward recomputes from the layer's saved qkv, out and lse
// (H, n_local). The scratch holds the ring's message and online-softmax buffers, shared by the layers. bf16
// activations are taken directly: their K/V blocks travel as bf16.
class RingOp final : public AttentionOp, public Bf16AttentionOp {
 public:
  RingOp(Communicator& sp, std::shared_ptr<RingCache> scratch, int H, int D)
      : sp_(sp), batch_(sp, H, D), cache_(std::move(scratch)) {}

  void forward(float* out, float* lse, const float* qkv, const float*, int, const TokenBatch& b) override {
    ring_attention_forward(sp_, *cache_, out, lse, qkv, batch_.set(b));
  }
  void backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse) override {
    ring_attention_backward(sp_, *cache_, dqkv, dout, qkv, out, lse, batch_.get());
  }
  Bf16AttentionOp* bf16_entry() override { return this; }
  void forward(bf16* out, float* lse, const bf16* qkv, const float*, int, const TokenBatch& b) override {
    ring_attention_forward(sp_, *cache_, out, lse, qkv, batch_.set(b));
  }
  void backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse) override {
    ring_attention_backward(sp_, *cache_, dqkv, dout, qkv, out, lse, batch_.get());
  }

 private:
  Communicator& sp_;
  GroupBatch batch_;
  std::shared_ptr<RingCache> cache_;
};

// USP: Ulysses over `inner` (the group's u consecutive ranks with this rank's g = t / u) turns their u slices into
// heads [j H/u, (j+1) H/u) (j = t % u) of their combined token range; Ring Attention over `outer` (the r = T / u
// ranks with this j, one per Ulysses group, in group order) runs on those heads, the combined ranges being the
// ring's own contiguous layout (slice g of r is slices g u .. g u + u - 1 of T); Ulysses turns the output back.
// Backward is the same in reverse, from the head-sharded qkv, out and lse kept from forward.
class UspOp final : public AttentionOp, public Bf16AttentionOp {
 public:
  UspOp(Communicator& sp, Backend& backend, std::shared_ptr<RingCache> ring, int H, int D, int u)
      : sp_(sp), H_(H), D_(D), u_(u), batch_(sp, H, D), ring_(std::move(ring)), cache_(backend),
        cache_bf16_(backend) {
    const int g = sp.rank() / u, j = sp.rank() % u;
    std::vector<int> inner, outer;
    for (int i = 0; i < u; ++i) inner.push_back(g * u + i);
    for (int k = 0; k < sp.size() / u; ++k) outer.push_back(k * u + j);
    inner_ = sp.subgroup(inner);
    outer_ = sp.subgroup(outer);
  }

  // The layer's lse stays unwritten: the op keeps its own, head-sharded.
  void forward(float* out, float*, const float* qkv, const float*, int, const TokenBatch& b) override {
    run_forward(out, cache_, qkv, b);
  }
  void backward(float* dqkv, const float* dout, const float*, const float*, const float*) override {
    run_backward(dqkv, dout, cache_);
  }
  Bf16AttentionOp* bf16_entry() override { return this; }
  void forward(bf16* out, float*, const bf16* qkv, const float*, int, const TokenBatch& b) override {
    run_forward(out, cache_bf16_, qkv, b);
  }
  void backward(bf16* dqkv, const bf16* dout, const bf16*, const bf16*, const float*) override {
    run_backward(dqkv, dout, cache_bf16_);
  }

 private:
  Communicator& sp_;
  int H_, D_, u_;
  GroupBatch batch_;
  std::shared_ptr<RingCache> ring_;
  Communicator* inner_ = nullptr;  // Ulysses
  Communicator* outer_ = nullptr;  // Ring Attention
  UlyssesCacheOf<float> cache_;    // qkv, out, lse of this rank's heads over the Ulysses group's tokens
  UlyssesCacheOf<bf16> cache_bf16_;
  std::vector<int64_t> bounds_;    // the Ulysses group's slices, from its first token
  SpBatch heads_{};                // the whole batch with this rank's H/u heads, as the ring takes it

  template <class T>
  void run_forward(T* out, UlyssesCacheOf<T>& c, const T* qkv, const TokenBatch& b) {
    const SpBatch& whole = batch_.set(b);
    const int group = sp_.size(), first = sp_.rank() / u_ * u_;
    bounds_.clear();
    for (int i = 0; i <= u_; ++i)
      bounds_.push_back(shard_begin(whole.N, group, first + i) - shard_begin(whole.N, group, first));
    heads_ = {whole.cu_seqlens, whole.n_seq, whole.N, H_ / u_, D_};
    const int64_t M = bounds_.back(), Cl = heads_.C();
    T* qkv_h = c.qkv.data(M * 3 * Cl);
    T* out_h = c.out.data(M * Cl);
    float* lse_h = c.lse.data(int64_t(heads_.H) * M);
    ulysses_to_heads(*inner_, c, bounds_, H_, D_, qkv, 3, qkv_h);
    ring_attention_forward(*outer_, *ring_, out_h, lse_h, qkv_h, heads_);
    ulysses_to_sequence(*inner_, c, bounds_, H_, D_, out_h, 1, out, false);
  }
  template <class T>
  void run_backward(T* dqkv, const T* dout, UlyssesCacheOf<T>& c) {
    const int64_t M = bounds_.back(), Cl = heads_.C();
    T* dout_h = c.heads.data(M * Cl);
    T* dqkv_h = c.grad_heads.data(M * 3 * Cl);
    c.backend.fill(dqkv_h, M * 3 * Cl, 0.0f);
    ulysses_to_heads(*inner_, c, bounds_, H_, D_, dout, 1, dout_h);
    ring_attention_backward(*outer_, *ring_, dqkv_h, dout_h, c.qkv.data(), c.out.data(), c.lse.data(), heads_);
    ulysses_to_sequence(*inner_, c, bounds_, H_, D_, dqkv_h, 3, dqkv, true);
  }
};

}  // namespace

std::unique_ptr<AttentionOp> make_ulysses_op(Communicator& sp, Backend& backend, AttentionType type, int H, int D) {
  TRIDENT_CHECK(H % sp.size() == 0, "Ulysses needs the {} heads to divide by the {} ranks of the group", H,
                sp.size());
  return std::make_unique<UlyssesOp>(sp, backend, type, H, D);
}

std::unique_ptr<AttentionOp> make_ring_op(Communicator& sp, std::shared_ptr<RingCache> scratch, AttentionType type,
                                          int H, int D) {
  TRIDENT_CHECK(type == AttentionType::softmax, "Ring Attention here is softmax-only");
  TRIDENT_CHECK(scratch != nullptr, "Ring Attention needs its scratch buffers");
  return std::make_unique<RingOp>(sp, std::move(scratch), H, D);
}

std::unique_ptr<AttentionOp> make_usp_op(Communicator& sp, Backend& backend, std::shared_ptr<RingCache> scratch, int H,
                                         int D, int ulysses_degree) {
  TRIDENT_CHECK(ulysses_degree >= 1 && sp.size() % ulysses_degree == 0 && H % ulysses_degree == 0,
                "USP's Ulysses degree {} must divide the group of {} ranks and the {} heads", ulysses_degree,
                sp.size(), H);
  TRIDENT_CHECK(scratch != nullptr, "USP's ring needs its scratch buffers");
  return std::make_unique<UspOp>(sp, backend, std::move(scratch), H, D, ulysses_degree);
}

}  // namespace trident
