#pragma once
// What the strategy tests share: a tiny model of either attention type, and batches of random documents.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/config/config.h"
#include "core/data/batch.h"
#include "parallel/comm/run_groups.h"
#include "parallel/cost/profile.h"

namespace trident::test {

inline constexpr int kTinyVocab = 37;

// 2 layers, 24 wide, 4 heads (Ulysses splits them over groups of 1, 2 or 4), linear chunks of 4 tokens (so short
// documents still cross chunk and rank boundaries).
inline Config tiny_strategy_config(const std::string& attention, int64_t max_seq_len) {
  Config c;
  c.model.n_layer = 2;
  c.model.n_embd = 24;
  c.model.n_head = 4;
  c.model.vocab_size = kTinyVocab;
  c.model.max_seq_len = max_seq_len;
  c.model.attention = attention;
  if (attention == "hybrid") c.model.layers = "LS";  // a linear layer, then a softmax one
  c.model.linear_chunk = 4;
  return c;
}

// Documents of the given lengths, random tokens; targets are the next token, -1 at each document's end.
inline Batch random_documents(const std::vector<int>& lengths, uint64_t seed) {
  Batch b;
  std::mt19937_64 rng(seed);
  for (int len : lengths) {
    std::vector<int32_t> ids(static_cast<std::size_t>(len) + 1);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % kTinyVocab);
    b.append_sequence(ids);
  }
  return b;
}

// The run's groups for every group size that divides the world (collective: every rank makes the same ones, once).
inline RunGroups& every_degree_groups() {
  static RunGroups groups(world(), {}, [] {
    std::vector<int> degrees;
    for (int d = 1; d <= world().size(); ++d)
      if (world().size() % d == 0) degrees.push_back(d);
    return degrees;
  }());
  return groups;
}

// A cluster profile of one node of `ranks` devices, for the strategies that plan with one (FlexSP).
inline cost::Profile one_node_profile(int ranks) {
  return cost::parse_profile(fmt::format(R"(
cluster: {{name: test, nodes: 1, devices_per_node: {}, device_memory_gb: 1}}
network:
  intra_node: {{bandwidth_gb_per_s: 1.0, latency_us: 20}}
  inter_node: {{bandwidth_gb_per_s: 1.0, latency_us: 20}}
compute: {{alpha1_s_per_token2: 1.0e-8, alpha2_s_per_token: 1.0e-4, beta1_s: 1.0e-4}}
)",
                                         ranks),
                             "test profile");
}

}  // namespace trident::test
