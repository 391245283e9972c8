// Cluster profile files: the documented format parses, every malformed file is an error naming the file, line and
// key, and writing a section keeps the others.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/common/error.h"
#include "parallel/cost/profile.h"

namespace trident::cost {
namespace {

namespace fs = std::filesystem;

const char* kFull = R"(cluster:
  name: a100-8x8
  nodes: 8
  devices_per_node: 8
  device_memory_gb: 40
network:
  intra_node: {bandwidth_gb_per_s: 150.0, latency_us: 5.0}
  inter_node: {bandwidth_gb_per_s: 12.5,  latency_us: 10.0}
  alltoall:
    - {group_size: 2,  nodes: 1, bandwidth_gb_per_s: 140.0, latency_us: 6.0}
    - {group_size: 16, nodes: 2, bandwidth_gb_per_s: 11.0,  latency_us: 20.0}
compute:
  alpha1_s_per_token2: 1.0e-10
  alpha2_s_per_token: 1.0e-5
  beta1_s: 0.002
  fitted_from: "by hand"
layers:
  block_forward: {alpha1_s_per_token2: 1.0e-12, alpha2_s_per_token: 1.0e-7, beta1_s: 1.0e-5}
  block_backward: {alpha1_s_per_token2: 2.0e-12, alpha2_s_per_token: 2.5e-7, beta1_s: 2.0e-5}
  outside: {alpha1_s_per_token2: 0, alpha2_s_per_token: 3.0e-6, beta1_s: 1.0e-4}
memory:
  model_states_gb: 16
  bytes_per_token: 500000
model: {name: gpt, n_layer: 32, n_embd: 4096, max_seq_len: 8192, parameters: 6658396160}
)";

std::string error_of(const std::string& yaml) {
  try {
    parse_profile(yaml, "p.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("the documented profile format parses", "[cost]") {
  const Profile p = parse_profile(kFull, "p.yaml");
  REQUIRE(p.cluster);
  CHECK(p.cluster->name == "a100-8x8");
  CHECK(p.cluster->nodes == 8);
  CHECK(p.cluster->device_memory_gb == 40);
  REQUIRE(p.network);
  CHECK(p.network->intra_node.bandwidth_gb_per_s == 150.0);
  CHECK(p.network->inter_node.latency_us == 10.0);
  REQUIRE(p.network->alltoall.size() == 2);
  CHECK(p.network->alltoall[1].group_size == 16);
  CHECK(p.network->alltoall[1].nodes == 2);
  CHECK(p.network->alltoall[1].link.bandwidth_gb_per_s == 11.0);
  REQUIRE(p.compute);
  CHECK(p.compute->alpha1_s_per_token2 == 1.0e-10);
  CHECK(p.compute->fitted_from == "by hand");
  REQUIRE(p.layers);
  CHECK(p.layers->block_forward.alpha2_s_per_token == 1.0e-7);
  CHECK(p.layers->block_backward.alpha1_s_per_token2 == 2.0e-12);
  CHECK(p.layers->outside.beta1_s == 1.0e-4);
  REQUIRE(p.memory);
  CHECK(p.memory->bytes_per_token == 500000);
  CHECK(p.memory->reserved_gb == 0);
  REQUIRE(p.model);
  CHECK(p.model->n_layer == 32);
  CHECK(p.model->bytes_per_value == 2);  // the default
  CHECK(p.model->max_seq_len == 8192);
  CHECK(p.model->parameters == 6658396160);
  // every section is optional in the file
  CHECK_FALSE(parse_profile("network: {intra_node: {bandwidth_gb_per_s: 1, latency_us: 0}, inter_node: "
                            "{bandwidth_gb_per_s: 1, latency_us: 0}}", "n.yaml").compute);
  CHECK_FALSE(parse_profile("", "empty.yaml").cluster);
}

TEST_CASE("what profile_yaml writes reads back equal", "[cost]") {
  const Profile p = parse_profile(kFull, "p.yaml");
  const Profile q = parse_profile(profile_yaml(p), "again.yaml");
  CHECK(q.cluster->devices_per_node == p.cluster->devices_per_node);
  CHECK(q.network->alltoall[0].link.latency_us == p.network->alltoall[0].link.latency_us);
  CHECK(q.compute->alpha2_s_per_token == p.compute->alpha2_s_per_token);
  CHECK(q.memory->model_states_gb == p.memory->model_states_gb);
  CHECK(q.layers->block_backward.alpha2_s_per_token == p.layers->block_backward.alpha2_s_per_token);
  CHECK(q.layers->outside.alpha2_s_per_token == p.layers->outside.alpha2_s_per_token);
  CHECK(q.model->n_embd == p.model->n_embd);
  CHECK(q.model->max_seq_len == p.model->max_seq_len);
  CHECK(q.model->parameters == p.model->parameters);
  Profile unstated = p;
  unstated.model->max_seq_len = 0;  // not written, and read back as not stated
  unstated.model->parameters = 0;
  CHECK(profile_yaml(unstated).find("max_seq_len") == std::string::npos);
  CHECK(profile_yaml(unstated).find("parameters") == std::string::npos);
}

TEST_CASE("a malformed profile is an error naming the file, line and key", "[cost]") {
  using Catch::Contains;
  CHECK_THAT(error_of("cluster: {nodes: 2, devices_per_node: 8, device_memory_gb: 40, gpus: 3}"),
             Contains("p.yaml:1:") && Contains("cluster.gpus") && Contains("unknown key"));
  CHECK_THAT(error_of("clutser: {}"), Contains("p.yaml:1:1") && Contains("clutser") && Contains("unknown section"));
  CHECK_THAT(error_of("cluster:\n  nodes: two\n  devices_per_node: 8\n  device_memory_gb: 40\n"),
             Contains("p.yaml:2:10") && Contains("cluster.nodes") && Contains("expected an integer, got 'two'"));
  CHECK_THAT(error_of("cluster: {nodes: 0, devices_per_node: 8, device_memory_gb: 40}"),
             Contains("cluster.nodes") && Contains("out of range"));
  CHECK_THAT(error_of("cluster: {nodes: 2, device_memory_gb: 40}"),
             Contains("cluster") && Contains("missing key 'devices_per_node'"));
  CHECK_THAT(error_of("compute: {alpha1_s_per_token2: -1, alpha2_s_per_token: 0, beta1_s: 0}"),
             Contains("compute.alpha1_s_per_token2") && Contains("-1 is out of range"));
  CHECK_THAT(error_of("compute: {alpha1_s_per_token2: .nan, alpha2_s_per_token: 0, beta1_s: 0}"),
             Contains("compute.alpha1_s_per_token2") && Contains("finite"));
  CHECK_THAT(error_of("network:\n  intra_node: {bandwidth_gb_per_s: 0, latency_us: 1}\n"),
             Contains("network.intra_node.bandwidth_gb_per_s") && Contains("> 0"));
  CHECK_THAT(error_of("network:\n  intra_node: 5\n"), Contains("network.intra_node") && Contains("expected a mapping"));
  CHECK_THAT(error_of("network:\n  intra_node: {bandwidth_gb_per_s: 1, latency_us: 1}\n  inter_node: "
                      "{bandwidth_gb_per_s: 1, latency_us: 1}\n  alltoall: {group_size: 2}\n"),
             Contains("network.alltoall") && Contains("expected a list"));
  CHECK_THAT(error_of("network:\n  intra_node: {bandwidth_gb_per_s: 1, latency_us: 1}\n  inter_node: "
                      "{bandwidth_gb_per_s: 1, latency_us: 1}\n  alltoall:\n    - {group_size: 2, nodes: 1, "
                      "bandwidth_gb_per_s: 1, latency_us: 1}\n    - {group_size: 2, nodes: 1, bandwidth_gb_per_s: 2, "
                      "latency_us: 1}\n"),
             Contains("network.alltoall[1]") && Contains("a second entry for group_size 2"));
  CHECK_THAT(error_of("cluster: [1, 2]"), Contains("cluster") && Contains("expected a mapping"));
  CHECK_THAT(error_of("- 1\n- 2\n"), Contains("p.yaml") && Contains("expected a mapping"));
  CHECK_THAT(error_of("cluster: {nodes: 2\n"), Contains("p.yaml:") && Contains("YAML syntax error"));
  const std::string fit = "{alpha1_s_per_token2: 0, alpha2_s_per_token: 1.0e-7, beta1_s: 0}";
  CHECK_THAT(error_of("layers: {block_forward: " + fit + ", outside: " + fit + "}"),
             Contains("layers") && Contains("missing key 'block_backward'"));
  CHECK_THAT(error_of("layers: {block_forward: " + fit + ", block_backward: {alpha1_s_per_token2: 0, "
                      "alpha2_s_per_token: -1.0e-7, beta1_s: 0}, outside: " + fit + "}"),
             Contains("layers.block_backward.alpha2_s_per_token") && Contains("out of range"));
  CHECK_THAT(error_of("layers: {block_forward: " + fit + ", block_backward: " + fit + ", outside: " + fit +
                      ", head: " + fit + "}"),
             Contains("layers.head") && Contains("unknown key"));
  CHECK_THAT(error_of("layers: {block_forward: {alpha2_s_per_token: 1, fitted_from: x}, block_backward: " + fit +
                      ", outside: " + fit + "}"),
             Contains("layers.block_forward.fitted_from") && Contains("unknown key"));
  CHECK_THAT(error_of("memory: {model_states_gb: 1, bytes_per_token: 0}"),
             Contains("memory.bytes_per_token") && Contains("> 0"));
}

TEST_CASE("a missing or unreadable profile file is an error naming it", "[cost]") {
  const fs::path dir = fs::temp_directory_path() / "trident_test_profile_missing";
  fs::create_directories(dir);
  CHECK_THROWS_WITH(read_profile(dir / "nope.yaml"), Catch::Contains("nope.yaml") && Catch::Contains("not found"));
  CHECK_THROWS_WITH(read_profile(dir), Catch::Contains("is a directory"));
  fs::remove_all(dir);
}

TEST_CASE("merging sections into a profile keeps the others and writes atomically", "[cost]") {
  const fs::path dir = fs::temp_directory_path() / "trident_test_profile_merge";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "cluster.yaml";
  {
    std::ofstream out(file);
    out << kFull;
  }
  Profile update;
  update.compute = ComputeSection{3e-10, 4e-5, 0.5, "measured"};
  merge_profile_into(file, update);
  const Profile merged = read_profile(file);
  CHECK(merged.compute->alpha1_s_per_token2 == 3e-10);
  CHECK(merged.compute->fitted_from == "measured");
  // the others as they were
  CHECK(merged.network->alltoall.size() == 2);
  CHECK(merged.network->alltoall[1].link.bandwidth_gb_per_s == 11.0);
  CHECK(merged.cluster->nodes == 8);
  CHECK(merged.memory->model_states_gb == 16);
  CHECK_FALSE(fs::exists(dir / "cluster.yaml.tmp"));
  // a new file gets exactly the sections given
  const fs::path fresh = dir / "new.yaml";
  merge_profile_into(fresh, update);
  const Profile created = read_profile(fresh);
  CHECK(created.compute);
  CHECK_FALSE(created.network);
  // a malformed existing file is refused, never overwritten
  const fs::path bad = dir / "bad.yaml";
  {
    std::ofstream out(bad);
    out << "cluster: {gpus: 3}\n";
  }
  CHECK_THROWS_WITH(merge_profile_into(bad, update), Catch::Contains("bad.yaml") && Catch::Contains("cluster.gpus"));
  CHECK(read(bad) == "cluster: {gpus: 3}\n");
  fs::remove_all(dir);
}

TEST_CASE("a network-only update creates a new profile or replaces just the network of an existing one", "[cost]") {
  const fs::path dir = fs::temp_directory_path() / "trident_test_profile_network";
  fs::remove_all(dir);
  fs::create_directories(dir);
  Profile update;
  update.network = NetworkSection{{150.0, 2.5}, {12.5, 20.0}, {{4, 2, {9.75, 30.0}}}, Link{25.0, 10.0}, {}};
  // (a) a new file, with the cluster section bench comm adds to one
  const fs::path fresh = dir / "new.yaml";
  CHECK_NOTHROW(check_profile_target(fresh));
  update.cluster = ClusterSection{"2 nodes x 2 ranks", 2, 2, 0};
  merge_profile_into(fresh, update);
  const Profile created = read_profile(fresh);
  REQUIRE(created.network);
  CHECK(created.network->intra_node.bandwidth_gb_per_s == 150.0);
  CHECK(created.network->inter_node.latency_us == 20.0);
  REQUIRE(created.network->alltoall.size() == 1);
  CHECK(created.network->alltoall[0].group_size == 4);
  CHECK(created.network->alltoall[0].link.bandwidth_gb_per_s == 9.75);
  CHECK(created.cluster->devices_per_node == 2);
  REQUIRE(created.network->host_to_device);  // ATOM's copy link round-trips; the absent one stays absent
  CHECK(created.network->host_to_device->bandwidth_gb_per_s == 25.0);
  CHECK_FALSE(created.network->device_to_host);
  CHECK_FALSE(created.compute);
  // (b) an existing file with compute sections keeps them and its cluster
  update.cluster.reset();
  const fs::path file = dir / "cluster.yaml";
  {
    std::ofstream out(file);
    out << kFull;
  }
  const Profile before = read_profile(file);
  CHECK_NOTHROW(check_profile_target(file));
  merge_profile_into(file, update);
  const Profile merged = read_profile(file);
  REQUIRE(merged.network);
  CHECK(merged.network->inter_node.bandwidth_gb_per_s == 12.5);
  CHECK(merged.network->alltoall.size() == 1);
  CHECK(merged.cluster->nodes == before.cluster->nodes);
  CHECK(merged.cluster->name == before.cluster->name);
  CHECK(merged.compute->alpha1_s_per_token2 == before.compute->alpha1_s_per_token2);
  CHECK(merged.memory->model_states_gb == before.memory->model_states_gb);
  CHECK(merged.model->n_embd == before.model->n_embd);
  // a bad existing file is refused before anything is measured
  const fs::path bad = dir / "bad.yaml";
  {
    std::ofstream out(bad);
    out << "- a list\n";
  }
  CHECK_THROWS_WITH(check_profile_target(bad), Catch::Contains("bad.yaml"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trident::cost
