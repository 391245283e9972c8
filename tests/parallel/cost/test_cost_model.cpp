// The cost model's formulas on a described cluster.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/common/error.h"
#include "parallel/cost/group_cost_model.h"

namespace trident::cost {
namespace {

const char* kCluster = R"(cluster: {name: c, nodes: 2, devices_per_node: 4, device_memory_gb: 10}
network:
  intra_node: {bandwidth_gb_per_s: 100, latency_us: 5}
  inter_node: {bandwidth_gb_per_s: 10, latency_us: 20}
  alltoall:
    - {group_size: 4, nodes: 1, bandwidth_gb_per_s: 50, latency_us: 8}
compute: {alpha1_s_per_token2: 2.0e-9, alpha2_s_per_token: 1.0e-4, beta1_s: 0.5}
memory: {model_states_gb: 2, bytes_per_token: 1048576, reserved_gb: 4}
model: {n_layer: 10, n_embd: 1000, bytes_per_value: 2}
)";

GroupCostModel model() { return GroupCostModel::from_profile(parse_profile(kCluster, "c.yaml")); }

TEST_CASE("group time is compute over d plus beta1 plus the Ulysses all-to-alls", "[cost]") {
  const GroupCostModel m = model();
  CHECK(m.devices() == 8);
  CHECK(m.max_degree() == 8);
  const std::vector<int64_t> lengths = {1000, 3000};
  const double compute = 2.0e-9 * (1e6 + 9e6) + 1.0e-4 * 4000;
  // d = 1: no all-to-all
  CHECK(m.group_time_s(lengths, 1) == Approx(compute + 0.5));
  // d = 2 in one node: the intra-node link; 8 L = 80 all-to-alls of (4000/2) tokens x 1000 values x 2 bytes
  CHECK(m.group_time_s(lengths, 2) == Approx(compute / 2 + 0.5 + 80 * (5e-6 + 2000.0 * 2000 / 100e9)));
  // d = 4: the measured all-to-all entry overrides the link
  CHECK(m.group_time_s(lengths, 4) == Approx(compute / 4 + 0.5 + 80 * (8e-6 + 1000.0 * 2000 / 50e9)));
  // d = 8 spans both nodes: the inter-node link
  CHECK(m.nodes_spanned(8) == 2);
  CHECK(m.group_time_s(lengths, 8) == Approx(compute / 8 + 0.5 + 80 * (20e-6 + 500.0 * 2000 / 10e9)));
  CHECK(m.group_time_s({}, 8) == 0);
  // The all-to-alls' part alone, also under a correction (which scales the whole time of its degree).
  CHECK(m.group_exchange_s(lengths, 1) == 0);
  CHECK(m.group_exchange_s(lengths, 4) == Approx(80 * (8e-6 + 1000.0 * 2000 / 50e9)));
  CHECK(m.group_exchange_s(lengths, 8) == Approx(80 * (20e-6 + 500.0 * 2000 / 10e9)));
  CHECK(m.with_corrections({{8, 3.0}}).group_exchange_s(lengths, 8) == Approx(3 * 80 * (20e-6 + 500.0 * 2000 / 10e9)));
  CHECK(m.group_exchange_s({}, 8) == 0);
}

TEST_CASE("memory: model states plus tokens/d times bytes per token within device memory minus reserve", "[cost]") {
  const GroupCostModel m = model();
  // (10 - 4 - 2) GiB / 1 MiB = 4096 tokens per device
  CHECK(m.token_capacity(1) == 4096);
  CHECK(m.token_capacity(8) == 8 * 4096);
  CHECK(m.min_degree(1) == 1);
  CHECK(m.min_degree(4096) == 1);
  CHECK(m.min_degree(4097) == 2);
  CHECK(m.min_degree(8 * 4096) == 8);
  CHECK(m.min_degree(8 * 4096 + 1) == 0);
}

TEST_CASE("a cluster of devices that is not a power of two plans with the largest power of two", "[cost]") {
  std::string text = kCluster;
  text.replace(text.find("nodes: 2"), 8, "nodes: 3");
  const GroupCostModel m = GroupCostModel::from_profile(parse_profile(text, "c.yaml"));
  CHECK(m.devices() == 12);
  CHECK(m.max_degree() == 8);
}

TEST_CASE("the cost model names a missing section or impossible memory", "[cost]") {
  std::string no_network = kCluster;
  no_network.erase(no_network.find("network:"), no_network.find("compute:") - no_network.find("network:"));
  CHECK_THROWS_WITH(GroupCostModel::from_profile(parse_profile(no_network, "c.yaml")),
                    Catch::Contains("c.yaml") && Catch::Contains("no 'network' section") &&
                        Catch::Contains("bench comm"));
  std::string full = kCluster;
  full.replace(full.find("reserved_gb: 4"), 14, "reserved_gb: 8");
  CHECK_THROWS_WITH(GroupCostModel::from_profile(parse_profile(full, "c.yaml")),
                    Catch::Contains("c.yaml") && Catch::Contains("no room for one token"));
  std::string unknown = kCluster;
  unknown.replace(unknown.find("device_memory_gb: 10"), 20, "device_memory_gb: 0");
  CHECK_THROWS_AS(GroupCostModel::from_profile(parse_profile(unknown, "c.yaml")), ConfigError);
}

}  // namespace
}  // namespace trident::cost
