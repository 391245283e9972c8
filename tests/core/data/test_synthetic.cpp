#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "core/data/synthetic_source.h"
#include "core/data/data_test_util.h"

using namespace trident;
using namespace trident::test;

namespace {

constexpr int64_t kUnclipped = int64_t{1} << 40;

std::vector<int64_t> lengths_of(const DocumentSource& source) {
  std::vector<int64_t> lengths;
  for (int64_t d = 0; d < source.num_documents(); ++d) lengths.push_back(source.document_length(d));
  return lengths;
}

}  // namespace

TEST_CASE("synthetic lengths match each preset's statistics on 20k documents", "[core][data]") {
  for (const LengthPreset& preset : kLengthPresets) {
    INFO(preset.name);
    auto source = make_synthetic_documents(preset, 20000, kUnclipped, 256, 1234);
    std::vector<int64_t> lengths = lengths_of(*source);
    std::sort(lengths.begin(), lengths.end());
    auto quantile = [&](double q) { return static_cast<double>(lengths[static_cast<std::size_t>(q * 19999)]); };
    double mean = 0;
    for (int64_t n : lengths) mean += static_cast<double>(n) / 20000.0;
    const auto over_32k = static_cast<double>(lengths.end() - std::upper_bound(lengths.begin(), lengths.end(), 32768));

    // Tolerances are about 4 standard errors of each estimate for the heaviest tail (github); the
    // quantile estimates get noisier further out, and the mean is dominated by the few longest documents.
    CHECK(quantile(0.5) == Approx(preset.median).epsilon(0.05));
    CHECK(quantile(0.9) == Approx(preset.p90).epsilon(0.08));
    CHECK(quantile(0.99) == Approx(preset.p99).epsilon(0.15));
    CHECK(quantile(0.999) == Approx(preset.p999).epsilon(0.35));
    CHECK(mean == Approx(preset.mean).epsilon(0.2));
    CHECK(std::abs(over_32k - 20000 * preset.over_32k) <= 4 * std::sqrt(20000 * preset.over_32k));
  }
  // The paper's ordering: Wikipedia has the smallest share of documents over 32K.
  CHECK(length_preset("wikipedia").over_32k < length_preset("commoncrawl").over_32k);
  CHECK(length_preset("commoncrawl").over_32k < length_preset("github").over_32k);
}

TEST_CASE("synthetic documents are a pure function of the seed and their index", "[core][data]") {
  const LengthPreset& preset = length_preset("github");
  auto a = make_synthetic_documents(preset, 300, 5000, 1000, 7);
  auto b = make_synthetic_documents(preset, 300, 5000, 1000, 7);
  auto other = make_synthetic_documents(preset, 300, 5000, 1000, 8);
  CHECK(read_all(*a) == read_all(*b));
  CHECK(lengths_of(*a) != lengths_of(*other));
  CHECK(read_all(*a) != read_all(*other));

  std::vector<int64_t> lengths = lengths_of(*a);
  CHECK(*std::min_element(lengths.begin(), lengths.end()) >= 1);
  CHECK(*std::max_element(lengths.begin(), lengths.end()) == 5000);  // github's tail reaches the clip in 300 draws

  // Any range reads the same as the slice of the whole document, including across the walk's restarts.
  const auto longest = std::max_element(lengths.begin(), lengths.end()) - lengths.begin();
  std::vector<int32_t> whole = read_document(*a, longest);
  for (int64_t start : {0, 1, 255, 256, 257, 1000, 4990}) {
    std::vector<int32_t> part(10);
    a->read(longest, start, part);
    CHECK(part == std::vector<int32_t>(whole.begin() + start, whole.begin() + start + 10));
  }
}

TEST_CASE("synthetic tokens follow a sparse Markov chain a model can learn", "[core][data]") {
  auto source = make_synthetic_documents(length_preset("wikipedia"), 2000, 131072, 256, 3);
  std::map<int32_t, std::map<int32_t, int64_t>> next;  // id -> successor -> count
  int64_t transitions = 0;
  for (int64_t d = 0; d < source->num_documents(); ++d) {
    std::vector<int32_t> ids = read_document(*source, d);
    auto [lowest, highest] = std::minmax_element(ids.begin(), ids.end());
    REQUIRE((*lowest >= 0 && *highest < 256));
    for (std::size_t p = 1; p < ids.size(); ++p) {
      if (p % 256 == 0) continue;  // the walk restarts here
      ++next[ids[p - 1]][ids[p]];
      ++transitions;
    }
  }
  REQUIRE(transitions > 1'000'000);
  double entropy_bits = 0;
  for (const auto& [id, successors] : next) {
    CHECK(successors.size() <= 4);
    int64_t total = 0;
    for (const auto& [succ, count] : successors) total += count;
    for (const auto& [succ, count] : successors) {
      const double p = static_cast<double>(count) / static_cast<double>(total);
      entropy_bits -= static_cast<double>(count) / static_cast<double>(transitions) * std::log2(p);
    }
  }
  // 1.75 bits when an id's 4 successors are distinct; a few ids have colliding successors, which lowers it.
  CHECK(entropy_bits > 1.6);
  CHECK(entropy_bits < 1.76);
}

TEST_CASE("data.synthetic_length_scale shrinks every document by its factor before rounding", "[core][data]") {
  const auto whole = make_synthetic_documents(length_preset("wikipedia"), 2000, int64_t{1} << 40, 97, 3);
  const auto scaled = make_synthetic_documents(length_preset("wikipedia"), 2000, int64_t{1} << 40, 97, 3, 0.01);
  double sum_whole = 0, sum_scaled = 0;
  for (int64_t doc = 0; doc < 2000; ++doc) {
    const int64_t w = whole->document_length(doc), s = scaled->document_length(doc);
    // Both round the same draw: 0.01 x (w +- 0.5), then at least 1.
    CHECK(s >= std::max<int64_t>(1, std::llround(0.01 * (static_cast<double>(w) - 0.5))));
    CHECK(s <= std::max<int64_t>(1, std::llround(0.01 * (static_cast<double>(w) + 0.5))));
    sum_whole += static_cast<double>(w);
    sum_scaled += static_cast<double>(s);
  }
  CHECK(sum_scaled / sum_whole == Approx(0.01).epsilon(0.05));  // short documents round up to 1 token
  CHECK_THAT(scaled->describe(), Catch::Contains("lengths x 0.01"));
  // Clipping comes after the scale: a scale of 100 puts most documents at the cut.
  const auto clipped = make_synthetic_documents(length_preset("wikipedia"), 200, 1000, 97, 3, 100);
  int64_t at_cut = 0;
  for (int64_t doc = 0; doc < 200; ++doc) at_cut += clipped->document_length(doc) == 1000;
  CHECK(at_cut > 150);
}

TEST_CASE("open_documents builds the synthetic corpus the config describes", "[core][data]") {
  Config config;
  config.run.seed = 5;
  config.data.kind = "synthetic";
  config.data.preset = "commoncrawl";
  config.data.synthetic_documents = 50;
  config.data.synthetic_max_length = 1000;
  config.model.vocab_size = 97;
  auto source = open_documents(config);
  CHECK(source->num_documents() == 50);
  CHECK(source->describe() == "synthetic commoncrawl-like corpus (50 documents, seed 5)");
  for (const auto& ids : read_all(*source)) {
    CHECK(static_cast<int64_t>(ids.size()) <= 1000);
    CHECK(*std::max_element(ids.begin(), ids.end()) < 97);
  }
  CHECK(read_all(*source) ==
        read_all(*make_synthetic_documents(length_preset("commoncrawl"), 50, 1000, 97, 5)));
  CHECK_THAT(error_message<ConfigError>([] { length_preset("books"); }),
             Catch::Contains("data.preset: unknown preset 'books' (allowed: wikipedia, commoncrawl, github)"));
}
