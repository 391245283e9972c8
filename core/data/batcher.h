#pragma once
// Deterministic packed batches. batch(step) is a pure function of (run.seed, step) and the corpus: it does not
// depend on the number of ranks, on which batches were drawn before or on whether the Batcher is new, so a resumed
// run, on any rank count, sees exactly the batches the original run would have.
//
// 1. Split: a seeded shuffle of the document indices; the first round(data.split * N) documents train, the rest
//    are held out for eval (when data.split < 1 and N >= 2 each side keeps at least one document).
// 2. Pieces: a document of n tokens gives the n - 1 training pairs (doc[i], doc[i+1]), so every position has a
//    target in its own document; documents of fewer than 2 tokens give none. A document with more than
//    model.max_seq_len pairs is cut into pieces of at most max_seq_len pairs. A piece is a sequence of its own
//    (attention cannot see across pieces), so its positions restart at 0. The last target of a piece is the first
//    input of the next, so no pair is lost at a cut.
// 3. Epochs: epoch e visits every piece of the split once, in an order shuffled with a seed from (run.seed, e), and
//    packs them greedily in that order into batches of at most train.batch_tokens tokens (a piece that does not fit
//    starts the next batch). Steps run through epoch 0's batches, then epoch 1's, and so on.
//
// Greedy packing of a different order gives a slightly different number of batches per epoch, so finding the
// epoch of a step needs the batch count of every earlier epoch: each is computed once (O(pieces)) and cached, with
// the current epoch's plan; after that batch(step) costs O(tokens in the batch).
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/config/config.h"
#include "core/data/batch.h"
#include "core/data/document_source.h"

namespace trident {

enum class Split { train, eval };

class Batcher {
 public:
  // Keeps a reference to `source`. Throws ConfigError when train.batch_tokens < model.max_seq_len or an eval split
  // is asked for with data.split = 1, and RuntimeError when the split has no document of at least 2 tokens.
  Batcher(const DocumentSource& source, const Config& config, Split split);

  Batch batch(int64_t step) const;

  int64_t steps_in_epoch(int64_t epoch) const;
  int64_t num_pieces() const { return static_cast<int64_t>(pieces_.size()); }

 private:
  struct Piece {
    int64_t doc;
    int64_t start;  // first pair (= first input token) in the document
    int32_t pairs;
  };
  // Batch b of `epoch` is pieces_[order[i]] for i in [batch_begin[b], batch_begin[b + 1]).
  struct Plan {
    int64_t epoch = -1;
    std::vector<int64_t> order;
    std::vector<int64_t> batch_begin;
  };

  // These need mutex_ held.
  const Plan& plan(int64_t epoch) const;
  int64_t first_step(int64_t epoch) const;
  int64_t epoch_of(int64_t step) const;

  const DocumentSource& source_;
  uint64_t seed_;
  int64_t batch_tokens_;
  std::vector<Piece> pieces_;

  mutable std::mutex mutex_;
  mutable std::vector<int64_t> epoch_first_step_{0};  // known for epochs 0 .. size() - 1
  mutable Plan plan_;
};

}  // namespace trident
