// The SP op: builds the plan (shard) and the cache, then hands over to the chosen variant.
#include <fmt/format.h>

#include "kernels/common/error.h"
#include "parallel/lasp/lasp.h"
#include "parallel/lasp/variants.h"

namespace trident {

LinearAttentionSP::LinearAttentionSP(Communicator& sp, Backend& backend, LaspVariant variant)
    : sp_(sp), backend_(backend), variant_(variant), cache_(backend) {}

void LinearAttentionSP::forward(float* out, const float* qkv_local, const float* slopes, const int32_t* cu_seqlens,
                                int n_seq, int64_t N, int H, int D, int chunk) {
  TRIDENT_CHECK(H >= 1 && D >= 1 && chunk >= 1, "H={} D={} chunk={}", H, D, chunk);
  cache_.shard = lasp_shard(cu_seqlens, n_seq, N, sp_.size(), sp_.rank());
  cache_.H = H;
  cache_.D = D;
  cache_.chunk = chunk;
  cache_.slopes.resize(H);
  backend_.download(cache_.slopes.data(), slopes, sizeof(float) * H);
  cache_.slopes_on_backend = slopes;
  cache_.cu_on_backend.upload(cache_.shard.cu_seqlens.data(), std::ssize(cache_.shard.cu_seqlens));
  if (variant_ == LaspVariant::lasp1)
    lasp::ring_forward(sp_, backend_, out, qkv_local, cache_);
  else
    lasp::allgather_forward(sp_, backend_, out, qkv_local, cache_);
}

void LinearAttentionSP::backward(float* dqkv_local, const float* dout_local, const float* qkv_local) {
  TRIDENT_CHECK(cache_.H > 0, "backward before forward");
  if (variant_ == LaspVariant::lasp1)
    lasp::ring_backward(sp_, backend_, dqkv_local, dout_local, qkv_local, cache_);
  else
    lasp::allgather_backward(sp_, backend_, dqkv_local, dout_local, qkv_local, cache_);
}

std::string LinearAttentionSP::describe() const {
  return fmt::format("{} sp={} rank={} chunk={} {}", lasp_variant_name(variant_), sp_.size(), sp_.rank(),
                     cache_.chunk, cache_.shard.describe());
}

}  // namespace trident
