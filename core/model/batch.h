#pragma once
// A packed batch as the model sees it: documents (or pieces of them) back to back, attention inside each only.
#include <cstdint>

namespace trident {

// Under sequence parallelism a rank holds a contiguous token range of a packed batch that its group holds together;
// the sequence-parallel attention needs the whole batch's document boundaries.
struct GlobalBatch {
  const int32_t* cu_seqlens = nullptr;  // (num_sequences + 1) of the whole batch
  int num_sequences = 0;
  int64_t num_tokens = 0;
};

struct TokenBatch {
  const int32_t* tokens = nullptr;      // (N)
  const int32_t* targets = nullptr;     // (N) next token, or -1 where there is none; nullptr when not training
  const int32_t* positions = nullptr;   // (N) index of the token inside its sequence
  const int32_t* cu_seqlens = nullptr;  // (n_seq + 1) sequence s is tokens [cu_seqlens[s], cu_seqlens[s+1])
  int64_t num_tokens = 0;
  int num_sequences = 0;
  const GlobalBatch* global = nullptr;  // sequence parallelism: the batch this one is a slice of; else nullptr
};

}  // namespace trident
