#pragma once
// The cluster profile file (YAML; the format is documented in parallel/cost/README.md): what the cost model knows
// about a machine. Every section is optional in the file; the cost model says which ones it needs. Every key is
// validated: an unknown key, a missing key or a bad value is a ConfigError naming the file, line, key and what is
// allowed.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace trident::cost {

struct Link {
  double bandwidth_gb_per_s = 0;  // GB/s = 1e9 bytes/s per rank (bus bandwidth)
  double latency_us = 0;
};

// A measured all-to-all: bus bandwidth of a group of `group_size` ranks spread over `nodes` nodes.
struct AlltoallLink {
  int64_t group_size = 0;
  int64_t nodes = 0;
  Link link;
};

struct ClusterSection {
  std::string name;
  int64_t nodes = 1;
  int64_t devices_per_node = 1;
  double device_memory_gb = 0;  // GiB per device; 0 = unknown
};

struct NetworkSection {
  Link intra_node;
  Link inter_node;
  std::vector<AlltoallLink> alltoall;
  // Copies between host memory and one device (ATOM's swaps); optional.
  std::optional<Link> host_to_device;
  std::optional<Link> device_to_host;
};

// Per-device time of one sequence of s tokens on a group of d devices: (alpha1 s^2 + alpha2 s) / d + beta1.
struct ComputeSection {
  double alpha1_s_per_token2 = 0;
  double alpha2_s_per_token = 0;
  double beta1_s = 0;
  std::string fitted_from;
};

// Inside the model, for ATOM's swap planner (parallel/cost/swap_plan.h): one transformer block's forward and its
// backward, and what lies outside the blocks (embeddings, final norm, tied LM head and loss, forward + backward), each
// the time of one sequence of s tokens on one device: alpha1 s^2 + alpha2 s + beta1 (fitted_from unused).
struct LayersSection {
  ComputeSection block_forward, block_backward, outside;
};

struct MemorySection {
  // GiB per device: parameters, gradients, optimizer state. Absent: computed from the config where a run is planned
  // (`trident plan`'s FlexSP plan: the model, precision and parallel.zero).
  std::optional<double> model_states_gb;
  double bytes_per_token = 0;  // activation bytes per token held on a device
  double reserved_gb = 0;      // GiB per device kept free (framework, fragmentation)
};

// The model shape the all-to-all volume follows from.
struct ModelSection {
  std::string name;
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t bytes_per_value = 2;  // activation element size (bf16 = 2, fp32 = 4)
  int64_t max_seq_len = 0;      // the longest sequence the workload trains (0: not stated); `trident like` compares
                                // compute per token there
  int64_t parameters = 0;       // the model's parameter count (0: not stated); `trident like --exchange pipeline`
                                // weighs a round of parameter averaging with it
};

struct Profile {
  std::string source;  // the file it came from, for messages
  std::optional<ClusterSection> cluster;
  std::optional<NetworkSection> network;
  std::optional<ComputeSection> compute;
  std::optional<LayersSection> layers;
  std::optional<MemorySection> memory;
  std::optional<ModelSection> model;
};

// Parses YAML text; `source` names it in errors. Throws ConfigError.
Profile parse_profile(const std::string& yaml_text, const std::string& source);

// Reads and parses a profile file. Throws ConfigError (missing, unreadable or malformed file).
Profile read_profile(const std::filesystem::path& path);

// The YAML text of the sections `profile` has, in the order cluster, network, compute, layers, memory,
// model.
std::string profile_yaml(const Profile& profile);

// Throws ConfigError naming the file when `path` exists but is not a profile read_profile accepts. Writers call it
// before measuring, so a bad file fails at once rather than after the benchmark.
void check_profile_target(const std::filesystem::path& path);

// Writes the sections `update` has into `path`, keeping every other section of an existing file as it was
// (parsed and validated first: a malformed existing file is an error, never overwritten). Atomic (tmp + rename).
void merge_profile_into(const std::filesystem::path& path, const Profile& update);

}  // namespace trident::cost
