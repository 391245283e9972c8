#pragma once
// parallel.atom.*: ATOM's swaps on one peer and its peers' averaging (parallel/atom/README.md).
// Declared, documented and registered in config.cpp beside it; configs/README.md lists the keys.
#include <cstdint>
#include <string>

#include "core/config/config.h"

namespace trident {

struct AtomConfig {
  int64_t sub_models = 0;            // sub-models the layers are split into; 0 = the fewest that fit (training)
  double host_memory_gb = 0;         // host memory for the whole model's store (GiB); 0 = this machine's memory
  int64_t prefetch = 1;              // sub-models loading ahead of the computing one (device slots - 1)
  std::string activations = "auto";  // auto | keep | recompute | offload
  int64_t average_every = 0;   // peers: 0 = gradients summed every step (exact); N = parameters averaged every N
  int64_t max_staleness = 1;   // peers: steps an averaging round may run in the background before it applies
  std::string averaging = "params";  // params | diloco: what a round applies (the average, or an outer step)
  double outer_lr = 0.7;             // diloco: the outer Nesterov step's learning rate
  double outer_momentum = 0.9;       // diloco: its momentum
  std::string average_split = "bandwidth";  // peers: a round's butterfly parts, by bandwidth | even
  double round_deadline_ms = 0;      // peers: 0 = every round waits for every peer; else rounds of those ready
  int64_t emulate_slow_rank = -1;    // peers: this rank's steps last emulate_slowdown times as long (-1: none)
  double emulate_slowdown = 1;
  double emulate_copy_gb_per_s = 0;  // cpu backend: an emulated host <-> device link (GB/s); 0 = memcpy

  bool operator==(const AtomConfig&) const = default;
};

const AtomConfig& atom_config(const Config& config);
AtomConfig& atom_config(Config& config);

}  // namespace trident
