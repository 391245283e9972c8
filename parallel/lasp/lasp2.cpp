// LASP-2 with decay and documents (docs/methods.md §2.2, "With decay (derived)"): every rank computes its boundary
// state from zero, one allgather hands every rank all of them, and each rank combines the ones before it locally. A
// rank r contributes M_r (the state leaving its last piece, zero when no document crosses its end) and a_r = lambda^n_r
// per head when one document covers it entirely (the incoming state passes through), else 0 (the chain restarts). Then
// S_in(t) = Horner over r < t of S = a_r S + M_r; backward runs the same recurrence from the right over the per-rank
// G_r = (Q ⊙ q_decay)^T dO of the first piece. Block per rank: H*D*D + H fp32 forward, H*D*D backward.
#include <algorithm>
#include <vector>

#include "parallel/lasp/local.h"
#include "parallel/lasp/variants.h"

namespace trident::lasp {

void allgather_forward(Communicator& sp, Backend& backend, float* out, const float* qkv, LaspCache& cache) {
  const LaspShard& shard = cache.shard;
  const int H = cache.H, T = sp.size();
  const int64_t SS = int64_t(H) * cache.D * cache.D, block = SS + H;
  // mine = [M (H, D, D) | a (H)]
  std::vector<float> mine(block, 0.0f);
  local_forward(backend, out, shard.to_next ? mine.data() : nullptr, qkv, cache);
  if (shard.pass_through())
    for (int h = 0; h < H; ++h) mine[SS + h] = pass_decay(cache.slopes[h], shard.n_local());

  std::vector<float> all(block * T);
  sp.allgather(mine.data(), all.data(), block, CommType::f32);
  cache.transitions.resize(int64_t(T) * H);
  for (int r = 0; r < T; ++r)
    std::copy(all.begin() + r * block + SS, all.begin() + (r + 1) * block, cache.transitions.begin() + r * H);

  cache.state_in.assign(SS, 0.0f);
  if (!shard.from_prev) return;
  for (int r = 0; r < sp.rank(); ++r)
    horner_step(cache.state_in.data(), cache.transitions.data() + r * H, all.data() + r * block, H, cache.D);
  add_state_to_output(backend, out, qkv, cache.state_in.data(), cache);
}

void allgather_backward(Communicator& sp, Backend& backend, float* dqkv, const float* dout, const float* qkv,
                        const LaspCache& cache) {
  const LaspShard& shard = cache.shard;
  const int H = cache.H, T = sp.size();
  const int64_t SS = int64_t(H) * cache.D * cache.D;
  std::vector<float> mine(SS, 0.0f);  // G = dS_in of piece 0 from this rank's dO alone
  local_backward(backend, dqkv, shard.from_prev ? mine.data() : nullptr, dout, qkv, cache);

  std::vector<float> all(SS * T);
  sp.allgather(mine.data(), all.data(), SS, CommType::f32);
  if (!shard.to_next) return;
  std::vector<float> dstate_out(SS, 0.0f);
  for (int r = T - 1; r > sp.rank(); --r)
    horner_step(dstate_out.data(), cache.transitions.data() + r * H, all.data() + r * SS, H, cache.D);
  add_state_grad_to_kv(backend, dqkv, qkv, dstate_out.data(), cache);
}

}  // namespace trident::lasp
