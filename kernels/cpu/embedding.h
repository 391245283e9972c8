#pragma once
// Token (+ learned position) embedding.
//   tokens, positions (N) int32;  wte (V, C);  wpe (P, C) or nullptr (linear attention has no positions);  out (N, C)
// out[t] = wte[tokens[t]] + wpe[positions[t]]. Positions are the caller's: a token's index inside its document,
// offset by where a sequence-parallel shard starts.
#include <cstdint>

namespace trident::cpu {

void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte,
                       const float* wpe, int64_t N, int C);

// dwte[tokens[t]] += dout[t]; dwpe[positions[t]] += dout[t] (dwpe may be nullptr). Deterministic: each thread owns
// a slice of channels and walks the tokens in order, so repeated tokens add up in the same order every run.
void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                        int64_t N, int C);

}  // namespace trident::cpu
