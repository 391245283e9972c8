// LASP-1 (docs/methods.md §2.1): the state of the document crossing each boundary travels from rank t-1 to rank t in
// forward, its gradient from rank t+1 to rank t in backward. Each receive is posted before the local kernel runs,
// so the wait for the previous rank overlaps this rank's intra-piece compute; only the small inter corrections
// wait. One message of H*D*D fp32 per crossed boundary per direction.
#include <vector>

#include "parallel/lasp/local.h"
#include "parallel/lasp/variants.h"

namespace trident::lasp {

namespace {
constexpr int kTagState = 0x1A5F;      // forward: S leaving rank t-1
constexpr int kTagStateGrad = 0x1A5B;  // backward: dS leaving rank t+1
}  // namespace

void ring_forward(Communicator& sp, Backend& backend, float* out, const float* qkv, LaspCache& cache) {
  const LaspShard& shard = cache.shard;
  const int64_t SS = int64_t(cache.H) * cache.D * cache.D;
  cache.state_in.assign(SS, 0.0f);
  RequestPtr recv;
  if (shard.from_prev) recv = sp.irecv(cache.state_in.data(), SS, CommType::f32, sp.rank() - 1, kTagState);

  std::vector<float> state_out(shard.to_next ? SS : 0, 0.0f);
  local_forward(backend, out, shard.to_next ? state_out.data() : nullptr, qkv, cache);
  if (recv) recv->wait();

  // S_out = lambda^n S_in + S_local when one document covers the whole rank; otherwise the last piece started
  // here and S_local is its whole state. Send before the correction: the next rank is waiting for it.
  if (shard.pass_through()) add_decayed(state_out.data(), cache.state_in.data(), cache.slopes.data(),
                                        shard.n_local(), cache.H, cache.D);
  RequestPtr send;
  if (shard.to_next) send = sp.isend(state_out.data(), SS, CommType::f32, sp.rank() + 1, kTagState);
  if (shard.from_prev) add_state_to_output(backend, out, qkv, cache.state_in.data(), cache);
  if (send) send->wait();
}

void ring_backward(Communicator& sp, Backend& backend, float* dqkv, const float* dout, const float* qkv,
                   const LaspCache& cache) {
  const LaspShard& shard = cache.shard;
  const int64_t SS = int64_t(cache.H) * cache.D * cache.D;
  std::vector<float> dstate_out(shard.to_next ? SS : 0, 0.0f);
  RequestPtr recv;
  if (shard.to_next) recv = sp.irecv(dstate_out.data(), SS, CommType::f32, sp.rank() + 1, kTagStateGrad);

  // dq is complete here (piece 0 reads the cached S_in); dk, dv of the last piece miss dS_out's share.
  std::vector<float> dstate_in(shard.from_prev ? SS : 0, 0.0f);
  local_backward(backend, dqkv, shard.from_prev ? dstate_in.data() : nullptr, dout, qkv, cache);
  if (recv) recv->wait();

  // dS_in = (Q ⊙ q_decay)^T dO (from the kernel) + lambda^n dS_out when one document covers the whole rank.
  if (shard.pass_through()) add_decayed(dstate_in.data(), dstate_out.data(), cache.slopes.data(), shard.n_local(),
                                        cache.H, cache.D);
  RequestPtr send;
  if (shard.from_prev) send = sp.isend(dstate_in.data(), SS, CommType::f32, sp.rank() - 1, kTagStateGrad);
  if (shard.to_next) add_state_grad_to_kv(backend, dqkv, qkv, dstate_out.data(), cache);
  if (send) send->wait();
}

}  // namespace trident::lasp
