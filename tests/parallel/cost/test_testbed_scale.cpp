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
