#pragma once
// A packed batch: whole sequences back to back in one row, cut at cu_seqlens (the varlen-attention layout), so no
// token attends across a sequence boundary and no padding is stored.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace trident {

struct Batch {
  std::vector<int32_t> tokens;         // input ids of every sequence, back to back
  std::vector<int32_t> targets;        // targets[i] is the id after tokens[i] in the same document
  std::vector<int32_t> positions;      // index of tokens[i] within its sequence: 0 at every sequence start
  std::vector<int32_t> cu_seqlens{0};  // sequence s is tokens [cu_seqlens[s], cu_seqlens[s + 1])

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int num_sequences() const { return static_cast<int>(cu_seqlens.size()) - 1; }
  int64_t num_targets() const;  // tokens with a target (>= 0): what the loss is averaged over
  std::vector<int64_t> sequence_lengths() const;
  int64_t longest_sequence() const;  // tokens of the longest sequence; 0 for an empty batch

  // Appends the sequence of training pairs (ids[i], ids[i + 1]) of consecutive document ids: ids.size() - 1 tokens.
  void append_sequence(std::span<const int32_t> ids);

  bool operator==(const Batch&) const = default;
};

// Splits a batch into n micro-batches of consecutive sequences, minimising the largest micro-batch's token count
// (the one that bounds memory and time). Sequences are never cut, so when the batch has fewer than n sequences the
// last n - num_sequences() micro-batches are empty; otherwise every micro-batch has at least one sequence.
std::vector<Batch> split_micro_batches(const Batch& batch, int n);

// The sequences [first, last) of each micro-batch split_micro_batches makes of sequences of these lengths, for
// callers that need only the shape (a planned batch's tokens can run to millions).
std::vector<std::pair<int, int>> micro_batch_bounds(std::span<const int64_t> lengths, int n);

// split_micro_batches into the fewest parts (at least n) whose largest holds at most `capacity` tokens, empty parts
// dropped: the passes of a model whose activations hold `capacity` tokens. None when a sequence is longer.
std::vector<Batch> split_within(const Batch& batch, int n, int64_t capacity);

}  // namespace trident
