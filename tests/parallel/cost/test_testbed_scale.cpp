// Scaling the emulated cluster's links to a testbed: the rates equal a hand computation, both sides' ratios are
// equal, and a profile that lacks what the arithmetic needs is an error naming the file and section.
#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "parallel/cost/testbed_scale.h"

namespace trident::cost {
namespace {

// The testbed: 2 layers of width 4 in bf16 move 8 * 2 * 4 * 2 = 128 bytes a token; a token computes in 1 ms; the
// links move 128,000 and 32,000 bytes/s, so moving a token takes 1x and 4x computing it.
const char* kTestbed = R"(network:
  intra_node: {bandwidth_gb_per_s: 1.28e-4, latency_us: 10}
  inter_node: {bandwidth_gb_per_s: 3.2e-5, latency_us: 20}
compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 1.0e-3, beta1_s: 0}
model: {name: big, n_layer: 2, n_embd: 4, bytes_per_value: 2}
)";
// Here: 1 layer of width 8 in fp32 moves 8 * 1 * 8 * 4 = 256 bytes a token, computed in 2 ms (4 ms at slowdown 2).
const char* kHere = R"(compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 2.0e-3, beta1_s: 0}
model: {name: small, n_layer: 1, n_embd: 8, bytes_per_value: 4}
)";

TEST_CASE("links scaled to a testbed equal the hand computation", "[cost][testbed]") {
  const ScaledLinks links =
      scale_links_to_testbed(parse_profile(kTestbed, "tb.yaml"), parse_profile(kHere, "here.yaml"), 2);
  CHECK(links.testbed.bytes_per_token == 128);
  CHECK(links.testbed.intra_ratio == Approx(1.0));
  CHECK(links.testbed.inter_ratio == Approx(4.0));
  CHECK(links.here.bytes_per_token == 256);
  CHECK(links.here.seconds_per_token == Approx(4e-3));
  // 256 bytes in 1 x 4 ms and in 4 x 4 ms.
  CHECK(links.here.intra_bytes_per_s == Approx(64000));
  CHECK(links.here.inter_bytes_per_s == Approx(16000));
  CHECK(links.here.intra_ratio == Approx(links.testbed.intra_ratio));
  CHECK(links.here.inter_ratio == Approx(links.testbed.inter_ratio));
  CHECK(tc_rate(links.here.intra_bytes_per_s) == "512kbit");
  CHECK(tc_rate(links.here.inter_bytes_per_s * 4) == "512kbit");
  CHECK(tc_rate(1e9 / 8 * 2.5) == "2500000kbit");
}

TEST_CASE("links scale with the models' exchange and compute", "[cost][testbed]") {
  const Profile testbed = parse_profile(kTestbed, "tb.yaml");
  const double base = scale_links_to_testbed(testbed, parse_profile(kHere, "here.yaml")).here.intra_bytes_per_s;
  // Twice the width moves twice the bytes a token: the link must be twice as fast for the same ratio.
  const char* wide = R"(compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 2.0e-3, beta1_s: 0}
model: {name: small, n_layer: 1, n_embd: 16, bytes_per_value: 4}
)";
  CHECK(scale_links_to_testbed(testbed, parse_profile(wide, "w.yaml")).here.intra_bytes_per_s == Approx(2 * base));
  // Computing twice as slowly leaves twice the time to move the same bytes.
  CHECK(scale_links_to_testbed(testbed, parse_profile(kHere, "here.yaml"), 2).here.intra_bytes_per_s ==
        Approx(base / 2));
}

TEST_CASE("attention's quadratic term counts at each side's longest sequence", "[cost][testbed]") {
  // The testbed's token of a 10,000-token sequence computes in 1 ms + 1e-7 s x 10,000 = 2 ms: moving it takes half
  // as long as computing it inside a node, so the link here may be twice as slow as without the quadratic term.
  const char* long_testbed = R"(network:
  intra_node: {bandwidth_gb_per_s: 1.28e-4, latency_us: 10}
  inter_node: {bandwidth_gb_per_s: 3.2e-5, latency_us: 20}
compute: {alpha1_s_per_token2: 1.0e-7, alpha2_s_per_token: 1.0e-3, beta1_s: 5}
model: {name: big, n_layer: 2, n_embd: 4, bytes_per_value: 2, max_seq_len: 10000}
)";
  const ScaledLinks links =
      scale_links_to_testbed(parse_profile(long_testbed, "tb.yaml"), parse_profile(kHere, "here.yaml"), 2);
  CHECK(links.testbed.seconds_per_token == Approx(2e-3));  // beta1 is a step's, not a token's
  CHECK(links.testbed.intra_ratio == Approx(0.5));
  CHECK(links.here.intra_bytes_per_s == Approx(128000));
  // Here's own longest sequence weighs its quadratic term the same way: 2 ms + 1e-6 s x 2,000 = 4 ms at slowdown 1.
  const char* long_here = R"(compute: {alpha1_s_per_token2: 1.0e-6, alpha2_s_per_token: 2.0e-3, beta1_s: 0}
model: {name: small, n_layer: 1, n_embd: 8, bytes_per_value: 4, max_seq_len: 2000}
)";
  const ScaledLinks both =
      scale_links_to_testbed(parse_profile(long_testbed, "tb.yaml"), parse_profile(long_here, "h.yaml"));
  CHECK(both.here.seconds_per_token == Approx(4e-3));
  CHECK(both.here.intra_bytes_per_s == Approx(128000));
}

TEST_CASE("a pipeline's stage boundary scales with each side's stages and width", "[cost][testbed]") {
  // The testbed: 4 stages (2 nodes x 2 devices) of a width-4 bf16 model, 1e6 parameters: a boundary moves 4 x 2 = 8
  // bytes a token one way while a stage computes its 1 ms / 4 = 0.25 ms: 8 / 32,000 B/s = 0.25 ms between nodes,
  // ratio 1. A round of fp32 parameters, 4e6 bytes, takes 125 s there: 125,000 tokens of 1 ms.
  const char* testbed = R"(cluster: {name: tb, nodes: 2, devices_per_node: 2, device_memory_gb: 1}
network:
  intra_node: {bandwidth_gb_per_s: 1.28e-4, latency_us: 10}
  inter_node: {bandwidth_gb_per_s: 3.2e-5, latency_us: 20}
compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 1.0e-3, beta1_s: 0}
model: {name: big, n_layer: 2, n_embd: 4, bytes_per_value: 2, parameters: 1000000}
)";
  // Here: 2 stages of a width-8 fp32 model (32 bytes a token) of 2 ms a token, 1 ms a stage (2 ms at slowdown 2):
  // ratio 1 needs 32 bytes in 2 ms, 16,000 B/s; a round of 4 x 1000 bytes takes 0.25 s there: 62.5 tokens of 4 ms.
  const char* here = R"(compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 2.0e-3, beta1_s: 0}
model: {name: small, n_layer: 1, n_embd: 8, bytes_per_value: 4, parameters: 1000}
)";
  const ScaledLinks links = scale_links_to_testbed(parse_profile(testbed, "tb.yaml"), parse_profile(here, "h.yaml"),
                                                   2, Exchange::pipeline, 2);
  CHECK(links.testbed.stages == 4);
  CHECK(links.testbed.bytes_per_token == 8);
  CHECK(links.testbed.seconds_per_token == Approx(2.5e-4));
  CHECK(links.testbed.inter_ratio == Approx(1.0));
  CHECK(links.testbed.round_tokens == Approx(125000));
  CHECK(links.here.stages == 2);
  CHECK(links.here.bytes_per_token == 32);
  CHECK(links.here.seconds_per_token == Approx(2e-3));
  CHECK(links.here.inter_bytes_per_s == Approx(16000));
  CHECK(links.here.inter_ratio == Approx(1.0));
  CHECK(links.here.round_tokens == Approx(62.5));
  // Without a parameter count there is no round to weigh; without the testbed's devices no stages to count.
  CHECK(scale_links_to_testbed(parse_profile(testbed, "tb.yaml"), parse_profile(kHere, "here.yaml"), 1,
                               Exchange::pipeline, 2)
            .here.round_tokens == 0);
  CHECK_THROWS_WITH(scale_links_to_testbed(parse_profile(kTestbed, "tb.yaml"), parse_profile(here, "h.yaml"), 1,
                                           Exchange::pipeline, 2),
                    Catch::Contains("tb.yaml") && Catch::Contains("'cluster'"));
  CHECK_THROWS_WITH(scale_links_to_testbed(parse_profile(testbed, "tb.yaml"), parse_profile(here, "h.yaml"), 1,
                                           Exchange::pipeline, 1),
                    Catch::Contains("at least 2 stages"));
}

TEST_CASE("the inter link can stand for the testbed's all-to-all over a group of its devices", "[cost][testbed]") {
  // kTestbed plus an all-to-all over 8 devices at 16,000 bytes/s: half its inter_node link, so moving a token over it
  // takes 8x computing it, and here's inter link halves to 8,000 bytes/s (256 bytes in 8 x 4 ms).
  // The rows belong inside network, after inter_node.
  const std::string with_rows = std::string(kTestbed).insert(
      std::string(kTestbed).find("compute:"), "  alltoall:\n    - {group_size: 8, nodes: 2, bandwidth_gb_per_s: "
                                              "1.6e-5, latency_us: 20}\n");
  const Profile tb = parse_profile(with_rows, "tb.yaml");
  const Profile here = parse_profile(kHere, "here.yaml");
  const ScaledLinks links = scale_links_to_testbed(tb, here, 2, Exchange::sequence, 0, 8);
  CHECK(links.alltoall_group == 8);
  CHECK(links.testbed.inter_bytes_per_s == Approx(16000));
  CHECK(links.testbed.inter_ratio == Approx(8.0));
  CHECK(links.here.inter_bytes_per_s == Approx(8000));
  CHECK(links.here.intra_bytes_per_s == Approx(64000));  // the intra link is the intra_node link still
  CHECK(scale_links_to_testbed(tb, here, 2).here.inter_bytes_per_s == Approx(16000));
  CHECK_THROWS_WITH(scale_links_to_testbed(tb, here, 2, Exchange::sequence, 0, 16),
                    Catch::Contains("tb.yaml") && Catch::Contains("no row of group_size 16") &&
                        Catch::Contains("it has: 8"));
  CHECK_THROWS_WITH(scale_links_to_testbed(tb, here, 2, Exchange::pipeline, 2, 8),
                    Catch::Contains("not an all-to-all"));
}

TEST_CASE("scaled lengths make the ratios equal at every length", "[cost][testbed]") {
  // The testbed: L0 = 1e-3 / 1e-6 = 1,000 tokens, a token of its longest (4,000) in 5 ms. Here: L0 = 2e-3 / 2e-5 =
  // 100 tokens, so lengths scale by 0.1 and here is taken at 400 tokens: 2 ms + 8 ms, times slowdown 2.
  const Profile tb = parse_profile(R"(network:
  intra_node: {bandwidth_gb_per_s: 1.28e-4, latency_us: 10}
  inter_node: {bandwidth_gb_per_s: 3.2e-5, latency_us: 20}
compute: {alpha1_s_per_token2: 1.0e-6, alpha2_s_per_token: 1.0e-3, beta1_s: 0}
model: {name: big, n_layer: 2, n_embd: 4, bytes_per_value: 2, max_seq_len: 4000}
)",
                                   "tb.yaml");
  const Profile here = parse_profile(R"(compute: {alpha1_s_per_token2: 2.0e-5, alpha2_s_per_token: 2.0e-3, beta1_s: 0}
model: {name: small, n_layer: 1, n_embd: 8, bytes_per_value: 4, max_seq_len: 4096}
)",
                                     "here.yaml");
  const ScaledLinks links = scale_links_to_testbed(tb, here, 2, Exchange::sequence, 0, 0, true);
  CHECK(links.length_scale == Approx(0.1));
  CHECK(links.here.max_seq_len == 400);
  CHECK(links.here.seconds_per_token == Approx(2e-2));
  CHECK(links.testbed.inter_ratio == Approx(0.8));  // 128 bytes / 32,000 bytes/s / 5 ms
  CHECK(links.here.inter_bytes_per_s == Approx(16000));  // 256 bytes / (0.8 x 20 ms)
  // At a length of 0 on both sides (alpha2 alone): 128 / 32,000 / 1 ms = 4 there, 256 / 16,000 / 4 ms = 4 here.
  CHECK(128.0 / links.testbed.inter_bytes_per_s / 1e-3 ==
        Approx(256.0 / links.here.inter_bytes_per_s / (2 * 2e-3)));
  // Without scaling, here is taken at its own 4,096 tokens.
  CHECK(scale_links_to_testbed(tb, here, 2).here.max_seq_len == 4096);
  CHECK(scale_links_to_testbed(tb, here, 2).length_scale == 1);
  CHECK_THROWS_WITH(scale_links_to_testbed(parse_profile(kTestbed, "flat.yaml"), here, 2, Exchange::sequence, 0, 0,
                                           true),
                    Catch::Contains("flat.yaml") && Catch::Contains("scaling lengths needs both > 0"));
  CHECK_THROWS_WITH(scale_links_to_testbed(tb, here, 2, Exchange::pipeline, 2, 0, true),
                    Catch::Contains("whatever its sequence's length"));
}

TEST_CASE("a profile without what the scaling needs is an error naming it", "[cost][testbed]") {
  const Profile here = parse_profile(kHere, "here.yaml");
  const Profile no_model = parse_profile("compute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 1.0e-3, beta1_s: 0}\n",
                                         "nomodel.yaml");
  CHECK_THROWS_WITH(scale_links_to_testbed(parse_profile(kTestbed, "tb.yaml"), no_model),
                    Catch::Contains("nomodel.yaml") && Catch::Contains("'model'"));
  CHECK_THROWS_WITH(scale_links_to_testbed(here, here), Catch::Contains("here.yaml") && Catch::Contains("'network'"));
  const Profile idle = parse_profile(
      "network:\n  intra_node: {bandwidth_gb_per_s: 1, latency_us: 1}\n  inter_node: {bandwidth_gb_per_s: 1, "
      "latency_us: 1}\ncompute: {alpha1_s_per_token2: 0, alpha2_s_per_token: 0, beta1_s: 0}\nmodel: {name: m, "
      "n_layer: 1, n_embd: 8}\n",
      "zero.yaml");
  CHECK_THROWS_WITH(scale_links_to_testbed(idle, here), Catch::Contains("zero.yaml") &&
                                                           Catch::Contains("alpha2_s_per_token") &&
                                                           Catch::Contains("no time a token"));
  CHECK_THROWS_AS(scale_links_to_testbed(parse_profile(kTestbed, "tb.yaml"), here, 0.5), ConfigError);
}

}  // namespace
}  // namespace trident::cost
