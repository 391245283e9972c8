#pragma once
// Synthetic documents with the long-tailed lengths of the FlexSP paper's corpora and learnable content, generated on
// demand from (run.seed, document index): nothing is stored, and any range of any document costs O(range).
//
// Lengths: ln(length) follows a two-component Gaussian mixture (so the length is a log-normal mixture), times
// data.synthetic_length_scale, rounded and clipped to [1, data.synthetic_max_length].
// - wikipedia is fitted (least squares on log quantiles, tail fractions, token shares and the mean) to the
//   statistics docs/methods.md §3.5 derives from the FlexSP code's 10^6-entry Wikipedia length list; the mixture
//   reproduces each within 1% (its own values: median 344, mean 1006, p90 2089, p99 10997, p99.9 37352, > 32K
//   0.131%).
// - commoncrawl and github are assumptions: docs/methods.md gives no statistics for them, only that Wikipedia has the
//   smallest share of sequences > 32K of the three and that FlexSP gains least on GitHub (the heaviest long tail).
//   The mixtures have those properties (a broad body plus a heavier tail); their stated numbers are their own.
//
// Tokens: a fixed sparse first-order Markov chain over the vocabulary, drawn from run.seed: each id has 4 successors,
// taken with probability 1/2, 1/4, 1/8, 1/8, so a model can bring its loss from ln(vocab_size) towards the chain's
// entropy of 1.75 bits (1.21 nats) per token. Each document walks the chain on its own random stream.
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/data/document_source.h"

namespace trident {

struct LengthComponent {
  double weight;  // probability of this component
  double mu;      // ln(length) ~ Normal(mu, sigma^2)
  double sigma;
};

struct LengthPreset {
  std::string_view name;
  std::array<LengthComponent, 2> mixture;
  // Statistics of the unclipped distribution, in tokens, that the mixture reproduces.
  double median, mean, p90, p99, p999;
  double over_32k;  // fraction of documents longer than 32768 tokens
};

inline constexpr std::array<LengthPreset, 3> kLengthPresets = {{
  //             weight  mu     sigma    weight  mu     sigma    median  mean  p90   p99    p99.9   > 32K
  {"wikipedia",   {{{0.844, 5.747, 1.573}, {0.156, 6.096, 0.791}}},  347, 1014, 2112, 10900,  37400, 0.0013},
  {"commoncrawl", {{{0.970, 6.400, 1.200}, {0.030, 8.600, 1.500}}},  626, 1701, 3165, 16127,  86037, 0.0039},
  {"github",      {{{0.900, 6.000, 1.300}, {0.100, 8.300, 1.600}}},  468, 2292, 3389, 32262, 166563, 0.0098},
}};

// The preset called `name` (data.preset); throws ConfigError for an unknown name.
const LengthPreset& length_preset(std::string_view name);

// `length_scale` multiplies each drawn length before rounding and clipping (data.synthetic_length_scale).
std::unique_ptr<DocumentSource> make_synthetic_documents(const LengthPreset& preset, int64_t num_documents,
                                                         int64_t max_length, int64_t vocab_size, uint64_t seed,
                                                         double length_scale = 1);

}  // namespace trident
