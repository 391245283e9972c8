#include "core/data/batcher.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include "kernels/common/error.h"
#include "core/data/rng.h"

namespace trident {

namespace {

// Random streams of the batcher, distinct from the synthetic source's.
enum BatcherStream : uint64_t { kSplit = 101, kEpoch = 102 };

// Documents [0, n_train) of the shuffled order train; the rest are held out.
int64_t train_documents(int64_t n, double split) {
  int64_t n_train = std::llround(split * static_cast<double>(n));
  if (split < 1.0 && n >= 2) n_train = std::clamp<int64_t>(n_train, 1, n - 1);
  return n_train;
}

}  // namespace

Batcher::Batcher(const DocumentSource& source, const Config& config, Split split)
    : source_(source), seed_(static_cast<uint64_t>(config.run.seed)), batch_tokens_(config.train.batch_tokens) {
  const int64_t max_seq_len = config.model.max_seq_len;
  if (batch_tokens_ < max_seq_len)
    throw_config_error("train.batch_tokens = {} must be >= model.max_seq_len = {}: a sequence of max_seq_len tokens "
                       "must fit in one batch",
                       batch_tokens_, max_seq_len);
  if (batch_tokens_ > std::numeric_limits<int32_t>::max())
    throw_config_error("train.batch_tokens = {} exceeds {}, the most a packed batch can index", batch_tokens_,
                       std::numeric_limits<int32_t>::max());
  if (split == Split::eval && config.data.split == 1.0)
    throw_config_error("there is no eval split: data.split = 1 trains on every document (lower data.split to hold "
                       "some out, or set train.eval_every = 0)");

  const int64_t n = source.num_documents();
  std::vector<int64_t> documents(n);
  std::iota(documents.begin(), documents.end(), 0);
  shuffle(std::span(documents), hash_of(seed_, kSplit));
  const int64_t n_train = train_documents(n, config.data.split);
  auto first = split == Split::train ? documents.begin() : documents.begin() + n_train;
  auto last = split == Split::train ? documents.begin() + n_train : documents.end();

  for (auto doc = first; doc != last; ++doc) {
    const int64_t pairs = source.document_length(*doc) - 1;
    for (int64_t start = 0; start < pairs; start += max_seq_len)
      pieces_.push_back({*doc, start, static_cast<int32_t>(std::min(max_seq_len, pairs - start))});
  }
  if (pieces_.empty())
    throw_runtime_error("no document of at least 2 tokens in the {} split ({} of {} documents) of {}",
                        split == Split::train ? "train" : "eval", last - first, n, source.describe());
}

const Batcher::Plan& Batcher::plan(int64_t epoch) const {
  if (plan_.epoch == epoch) return plan_;
  plan_.epoch = epoch;
  plan_.order.resize(pieces_.size());
  std::iota(plan_.order.begin(), plan_.order.end(), 0);
  shuffle(std::span(plan_.order), hash_of(seed_, kEpoch, epoch));
  plan_.batch_begin.assign(1, 0);
  int64_t filled = 0;
  for (std::size_t i = 0; i < plan_.order.size(); ++i) {
    const int64_t pairs = pieces_[plan_.order[i]].pairs;
    if (filled + pairs > batch_tokens_) {
      plan_.batch_begin.push_back(static_cast<int64_t>(i));
      filled = 0;
    }
    filled += pairs;
  }
  plan_.batch_begin.push_back(static_cast<int64_t>(plan_.order.size()));
  return plan_;
}

int64_t Batcher::first_step(int64_t epoch) const {
  while (static_cast<int64_t>(epoch_first_step_.size()) <= epoch) {
    const int64_t counted = static_cast<int64_t>(epoch_first_step_.size()) - 1;
    const auto batches = static_cast<int64_t>(plan(counted).batch_begin.size()) - 1;
    epoch_first_step_.push_back(epoch_first_step_.back() + batches);
  }
  return epoch_first_step_[epoch];
}

int64_t Batcher::epoch_of(int64_t step) const {
  while (epoch_first_step_.back() <= step) first_step(static_cast<int64_t>(epoch_first_step_.size()));
  return std::upper_bound(epoch_first_step_.begin(), epoch_first_step_.end(), step) - epoch_first_step_.begin() - 1;
}

int64_t Batcher::steps_in_epoch(int64_t epoch) const {
  TRIDENT_CHECK(epoch >= 0, "epoch {}", epoch);
  std::lock_guard lock(mutex_);
  return first_step(epoch + 1) - first_step(epoch);
}

Batch Batcher::batch(int64_t step) const {
  TRIDENT_CHECK(step >= 0, "step {}", step);
  std::vector<Piece> pieces;
  {
    std::lock_guard lock(mutex_);
    const int64_t epoch = epoch_of(step);
    const Plan& p = plan(epoch);
    const int64_t b = step - first_step(epoch);
    for (int64_t i = p.batch_begin[b]; i < p.batch_begin[b + 1]; ++i) pieces.push_back(pieces_[p.order[i]]);
  }
  Batch out;
  std::vector<int32_t> ids;
  for (const Piece& piece : pieces) {
    ids.resize(static_cast<std::size_t>(piece.pairs) + 1);
    source_.read(piece.doc, piece.start, ids);
    out.append_sequence(ids);
  }
  return out;
}

}  // namespace trident
