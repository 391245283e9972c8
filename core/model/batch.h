#pragma once
// A packed batch as the model sees it: documents (or pieces of them) back to back, attention inside each only.
#include <cstdint>

namespace trident {

struct TokenBatch {
  const int32_t* tokens = nullptr;      // (N)
  const int32_t* targets = nullptr;     // (N) next token, or -1 where there is none; nullptr when not training
  const int32_t* positions = nullptr;   // (N) index of the token inside its sequence
  const int32_t* cu_seqlens = nullptr;  // (n_seq + 1) sequence s is tokens [cu_seqlens[s], cu_seqlens[s+1])
  int64_t num_tokens = 0;
  int num_sequences = 0;
};

}  // namespace trident
