#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "core/data/batcher.h"
#include "core/data/synthetic_source.h"
#include "core/data/data_test_util.h"

using namespace trident;
using namespace trident::test;

namespace {

using PieceId = std::pair<int64_t, int64_t>;  // (document, first pair)

// Document d holds ids d * 1000, d * 1000 + 1, ...: a sequence's first id names its piece, and every target is its
// input plus one.
std::vector<std::vector<int32_t>> numbered_documents(const std::vector<int>& lengths) {
  std::vector<std::vector<int32_t>> documents;
  for (std::size_t d = 0; d < lengths.size(); ++d) {
    documents.emplace_back(lengths[d]);
    for (int i = 0; i < lengths[d]; ++i) documents.back()[i] = static_cast<int32_t>(d * 1000 + i);
  }
  return documents;
}

// 60 documents of 0 to 40 tokens and two long ones.
std::vector<int> corpus_lengths() {
  std::vector<int> lengths;
  for (int d = 0; d < 60; ++d) lengths.push_back(d * 7 % 41);
  lengths.push_back(95);
  lengths.push_back(300);
  return lengths;
}

Config batcher_config(int64_t seed = 11, int64_t max_seq_len = 8, int64_t batch_tokens = 24) {
  Config config;
  config.run.seed = seed;
  config.model.max_seq_len = max_seq_len;
  config.train.batch_tokens = batch_tokens;
  config.data.split = 0.8;
  return config;
}

// The layout every batch must have, whatever the corpus.
void check_layout(const Batch& batch, int64_t max_seq_len, int64_t batch_tokens) {
  REQUIRE(batch.num_sequences() >= 1);
  REQUIRE(batch.cu_seqlens.front() == 0);
  REQUIRE(batch.cu_seqlens.back() == batch.num_tokens());
  REQUIRE(batch.targets.size() == batch.tokens.size());
  REQUIRE(batch.positions.size() == batch.tokens.size());
  CHECK(batch.num_tokens() <= batch_tokens);
  for (int s = 0; s < batch.num_sequences(); ++s) {
    const int32_t begin = batch.cu_seqlens[s];
    const int32_t end = batch.cu_seqlens[s + 1];
    REQUIRE(end > begin);
    CHECK(end - begin <= max_seq_len);
    for (int32_t i = begin; i < end; ++i) {
      CHECK(batch.positions[i] == i - begin);
      if (i + 1 < end) CHECK(batch.targets[i] == batch.tokens[i + 1]);  // pairs are consecutive in the document
    }
  }
}

// The pieces of steps [first, last), as (document, first pair) of each sequence of the numbered corpus.
std::vector<PieceId> pieces_of(const Batcher& batcher, int64_t first, int64_t last) {
  std::vector<PieceId> pieces;
  for (int64_t step = first; step < last; ++step) {
    Batch batch = batcher.batch(step);
    for (int s = 0; s < batch.num_sequences(); ++s) {
      const int32_t id = batch.tokens[batch.cu_seqlens[s]];
      pieces.emplace_back(id / 1000, id % 1000);
    }
  }
  return pieces;
}

// What the batcher's doc comment promises: documents cut into pieces of at most max_seq_len pairs.
std::vector<PieceId> expected_pieces(const std::vector<int>& lengths, int64_t max_seq_len) {
  std::vector<PieceId> pieces;
  for (std::size_t d = 0; d < lengths.size(); ++d)
    for (int64_t start = 0; start < lengths[d] - 1; start += max_seq_len)
      pieces.emplace_back(static_cast<int64_t>(d), start);
  return pieces;
}

}  // namespace

TEST_CASE("batches pack whole pieces greedily with consistent targets, positions and offsets", "[core][data]") {
  MemorySource source(numbered_documents(corpus_lengths()));
  Batcher batcher(source, batcher_config(), Split::train);
  int64_t step = 0;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const int64_t steps = batcher.steps_in_epoch(epoch);
    for (int64_t b = 0; b < steps; ++b, ++step) {
      Batch batch = batcher.batch(step);
      check_layout(batch, 8, 24);
      for (std::size_t i = 0; i < batch.tokens.size(); ++i) CHECK(batch.targets[i] == batch.tokens[i] + 1);
      // Greedy: the next batch of the epoch starts with a piece that did not fit in this one.
      if (b + 1 < steps) {
        Batch next = batcher.batch(step + 1);
        CHECK(batch.num_tokens() + next.cu_seqlens[1] > 24);
      }
    }
  }
}

TEST_CASE("every piece appears exactly once per epoch, and train and eval split the corpus", "[core][data]") {
  const std::vector<int> lengths = corpus_lengths();
  MemorySource source(numbered_documents(lengths));
  Batcher train(source, batcher_config(), Split::train);
  Batcher eval(source, batcher_config(), Split::eval);

  std::vector<PieceId> train_epoch;
  int64_t first = 0;
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    const int64_t last = first + train.steps_in_epoch(epoch);
    std::vector<PieceId> pieces = pieces_of(train, first, last);
    CHECK(static_cast<int64_t>(pieces.size()) == train.num_pieces());
    if (epoch == 0)
      train_epoch = pieces;
    else
      CHECK(pieces != train_epoch);  // each epoch has its own order...
    std::sort(pieces.begin(), pieces.end());
    CHECK(std::adjacent_find(pieces.begin(), pieces.end()) == pieces.end());
    std::vector<PieceId> sorted_first = train_epoch;
    std::sort(sorted_first.begin(), sorted_first.end());
    CHECK(pieces == sorted_first);  // ...of the same pieces
    first = last;
  }

  std::vector<PieceId> eval_pieces = pieces_of(eval, 0, eval.steps_in_epoch(0));
  std::set<int64_t> train_docs, eval_docs;
  for (auto [doc, start] : train_epoch) train_docs.insert(doc);
  for (auto [doc, start] : eval_pieces) eval_docs.insert(doc);
  std::vector<int64_t> shared;
  std::set_intersection(train_docs.begin(), train_docs.end(), eval_docs.begin(), eval_docs.end(),
                        std::back_inserter(shared));
  CHECK(shared.empty());

  std::vector<PieceId> all = train_epoch;
  all.insert(all.end(), eval_pieces.begin(), eval_pieces.end());
  std::sort(all.begin(), all.end());
  CHECK(all == expected_pieces(lengths, 8));
  // round(0.8 * 62) = 50 documents train; of the 12 held out, those with >= 2 tokens appear in eval.
  CHECK(eval_docs.size() <= 12);
  CHECK(train_docs.size() >= 40);
}

TEST_CASE("a batch is a pure function of (seed, step)", "[core][data]") {
  MemorySource source(numbered_documents(corpus_lengths()));
  const Config config = batcher_config();
  Batcher in_order(source, config, Split::train);
  std::vector<Batch> expected;
  for (int64_t step = 0; step < 60; ++step) expected.push_back(in_order.batch(step));

  Batcher backwards(source, config, Split::train);
  for (int64_t step = 59; step >= 0; --step) CHECK(backwards.batch(step) == expected[step]);

  MemorySource copy(numbered_documents(corpus_lengths()));
  Batcher jumping(copy, config, Split::train);
  for (int64_t step : {37, 2, 59, 0, 58, 13, 13, 40}) CHECK(jumping.batch(step) == expected[step]);

  Batcher other_seed(source, batcher_config(12), Split::train);
  CHECK(other_seed.batch(0) != expected[0]);
}

TEST_CASE("long documents are cut into pieces of at most max_seq_len pairs", "[core][data]") {
  MemorySource source(numbered_documents({20, 9, 2, 1, 0}));
  Config config = batcher_config(3, 8, 8);
  config.data.split = 1.0;
  Batcher batcher(source, config, Split::train);
  // 19 pairs -> 8 + 8 + 3; 9 tokens -> exactly one piece of 8 pairs; 2 tokens -> 1 pair; 1 or 0 tokens -> nothing.
  CHECK(batcher.num_pieces() == 5);
  std::vector<PieceId> pieces = pieces_of(batcher, 0, batcher.steps_in_epoch(0));
  std::sort(pieces.begin(), pieces.end());
  CHECK(pieces == std::vector<PieceId>{{0, 0}, {0, 8}, {0, 16}, {1, 0}, {2, 0}});

  std::map<PieceId, std::vector<int32_t>> targets;
  for (int64_t step = 0; step < batcher.steps_in_epoch(0); ++step) {
    Batch batch = batcher.batch(step);
    check_layout(batch, 8, 8);
    for (int s = 0; s < batch.num_sequences(); ++s) {
      const int32_t id = batch.tokens[batch.cu_seqlens[s]];
      targets[{id / 1000, id % 1000}].assign(batch.targets.begin() + batch.cu_seqlens[s],
                                             batch.targets.begin() + batch.cu_seqlens[s + 1]);
    }
  }
  // The last target of a piece is the first input of the next one: no pair is lost at a cut.
  CHECK(targets[{0, 0}] == std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(targets[{0, 16}] == std::vector<int32_t>{17, 18, 19});
  CHECK(targets[{2, 0}] == std::vector<int32_t>{2001});
}

TEST_CASE("batches of a synthetic corpus keep the layout and are reproducible", "[core][data]") {
  Config config = batcher_config(9, 64, 512);
  config.data.kind = "synthetic";
  config.data.synthetic_documents = 200;
  auto source = open_documents(config);
  Batcher batcher(*source, config, Split::train);
  Batcher fresh(*source, config, Split::train);
  for (int64_t step : {0, 1, 7}) {
    Batch batch = batcher.batch(step);
    check_layout(batch, 64, 512);
    CHECK(batch == fresh.batch(step));
  }
}

TEST_CASE("bad batcher inputs give specific errors", "[core][data]") {
  MemorySource source(numbered_documents(corpus_lengths()));
  CHECK_THAT(error_message<ConfigError>([&] { Batcher(source, batcher_config(1, 8, 4), Split::train); }),
             Catch::Contains("train.batch_tokens = 4 must be >= model.max_seq_len = 8"));

  Config all_train = batcher_config();
  all_train.data.split = 1.0;
  CHECK_THAT(error_message<ConfigError>([&] { Batcher(source, all_train, Split::eval); }),
             Catch::Contains("there is no eval split: data.split = 1 trains on every document"));

  MemorySource empty({});
  CHECK_THAT(
      error_message<RuntimeError>([&] { Batcher(empty, batcher_config(), Split::train); }),
      Catch::Contains("no document of at least 2 tokens in the train split (0 of 0 documents) of memory corpus"));
  MemorySource short_documents({{1}, {2}, {}});
  CHECK_THAT(error_message<RuntimeError>([&] { Batcher(short_documents, batcher_config(), Split::train); }),
             Catch::Contains("no document of at least 2 tokens in the train split (2 of 3 documents)"));
  MemorySource single({{1, 2, 3}});
  CHECK_THAT(error_message<RuntimeError>([&] { Batcher(single, batcher_config(), Split::eval); }),
             Catch::Contains("no document of at least 2 tokens in the eval split (0 of 1 documents)"));
}
