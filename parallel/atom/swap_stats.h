#pragma once
// What ATOM's swaps moved (parallel/atom/swapper.h) and its peers' averaging did (parallel/atom/averager.h),
// reported per step in metrics.jsonl.
#include <cstdint>

namespace trident {

// The swaps of the passes since the last LayerSwapper::take_stats().
struct SwapStats {
  int sub_models = 0;
  int64_t passes = 0;          // forward (and backward) passes over the model
  int64_t loads = 0;           // sub-model (and embedding) loads
  int64_t h2d_bytes = 0;       // weights, between micro-batches gradients, and offloaded activations to the device
  int64_t d2h_bytes = 0;       // gradients back to the store, offloaded activations to the host
  int64_t activation_bytes = 0;  // of those, offloaded activations (both ways)
  double exposed_s = 0;        // time the compute waited for copies
  double copy_s = 0;           // time the copy engine was busy
  double copy_cpu_s = 0;       // the copy thread's CPU time: on the CPU backend its memcpy shares the compute's cores
};

// What a step's parameter averaging did (parallel/atom/averager.h).
struct AveragingStats {
  int64_t started = 0;   // rounds this peer offered its parameters to
  bool applied = false;  // a round's average was applied
  int64_t staleness = 0;  // when applied: steps since that round started
  int peers = 0;          // when applied: the peers in that round (fewer than all when some missed its deadline)
  int peers_alive = 0;    // the peers the rounds still count on (fewer than all once some died: docs/elastic.md)
  double wait_s = 0;     // time the step waited for a round
  int64_t thread_bytes = 0;  // bytes handed to a round started on the averaging thread's own communicator (which
                             // the run's communicators do not count)
};

}  // namespace trident
