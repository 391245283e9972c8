#pragma once
// A profile of this run measured at start-up, for parallel.strategy: auto when parallel.select.profile names no
// file (parallel/cost/README.md describes the sections):
//   compute  forward + backward of one document at up to 8 lengths, halving from model.max_seq_len (within the
//            activation capacity) down to 16 tokens, on the run's own model, every rank at once as in training;
//            each length the mean call over 0.1 s (so a rank's share of a shared core counts as in a step);
//            alpha1, alpha2 and beta1 fitted by least squares (parallel/cost/fit.h)
//   network  for each group size the run uses and for the whole world: all-to-alls of a small and a large message
//            on the communicator the group's activations travel on (NCCL over device buffers on the GPU, MPI on the
//            CPU): latency, and bandwidth from the difference; intra_node is the largest group on one node,
//            inter_node the largest spanning nodes (each the other when there is none)
//   cluster  the run's nodes and ranks per node; device_memory_gb from device.memory_gb
//   model    the model's shape
// The numbers are rank 0's, which decides. Collective over the world.
#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/model/gpt.h"
#include "parallel/comm/run_groups.h"
#include "parallel/cost/profile.h"

namespace trident {

cost::Profile measure_run_profile(GPT& model, RunGroups& groups, const Config& config, int64_t capacity);

// "2 ranks on 1 node: 3.1 GB/s, 12 us; 4 ranks on 2 nodes: 0.11 GB/s, 40 us" for logs.
std::string describe_links(const cost::NetworkSection& network);

}  // namespace trident
