#include "parallel/lasp/model_op.h"

#include "kernels/common/error.h"

namespace trident {

namespace {

class LaspOp final : public AttentionOp {
 public:
  LaspOp(Communicator& sp, Backend& backend, LaspVariant variant, int H, int D)
      : op_(sp, backend, variant), H_(H), D_(D) {}

  // lse is nullptr: LASP is linear attention only (the trainer refuses it on a softmax model).
  void forward(float* out, float*, const float* qkv, const float* slopes, int chunk, const TokenBatch& b) override {
    TRIDENT_CHECK(b.sp != nullptr, "a sequence-parallel layer needs the whole batch's document boundaries");
    const SequenceParallelContext& g = *b.sp;
    op_.forward(out, qkv, slopes, g.cu_seqlens, g.num_sequences, g.num_tokens, H_, D_, chunk);
    TRIDENT_CHECK(op_.cache().shard.n_local() == b.num_tokens, "rank holds {} tokens but LASP assigns it {}",
                  b.num_tokens, op_.cache().shard.n_local());
  }
  void backward(float* dqkv, const float* dout, const float* qkv, const float*, const float*) override {
    op_.backward(dqkv, dout, qkv);
  }

 private:
  LinearAttentionSP op_;
  int H_, D_;
};

}  // namespace

std::unique_ptr<AttentionOp> make_lasp_op(Communicator& sp, Backend& backend, LaspVariant variant, int H, int D) {
  return std::make_unique<LaspOp>(sp, backend, variant, H, D);
}

}  // namespace trident
