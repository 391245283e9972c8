#pragma once
// The `network` section of a cluster profile (the cost model's input, format in the README), measured by
// `trident bench comm --profile FILE`. Bandwidths are per rank, bus bandwidth, in GB/s (1e9 bytes/s).
#include <filesystem>
#include <string>
#include <vector>

namespace trident::bench {

struct LinkMeasure {
  double bandwidth_gb_per_s = 0;
  double latency_us = 0;
};

struct AlltoallMeasure {
  int group_size = 0;
  int nodes = 0;  // nodes each group spans
  LinkMeasure link;
};

struct NetworkMeasure {
  LinkMeasure intra_node, inter_node;
  std::vector<AlltoallMeasure> alltoall;
};

// What a new file's `cluster` section says about the machine the measurement ran on.
struct ClusterShape {
  std::string name;
  int nodes = 1;
  int devices_per_node = 1;
  double device_memory_gb = 0;  // 0: unknown
};

// Throws ConfigError naming the file when `path` exists but is not a YAML mapping (checked before measuring, so a
// bad file fails at once rather than after the benchmark).
void check_profile_file(const std::filesystem::path& path);

// Replaces (or adds) the `network` section of `path`, keeping every other section as it was (comments are not
// kept); a new file gets `cluster` from `shape` too. Written atomically (tmp, fsync, rename).
void write_network_profile(const std::filesystem::path& path, const NetworkMeasure& network, const ClusterShape& shape);

}  // namespace trident::bench
