#pragma once
// What ATOM's swaps moved (parallel/atom/swapper.h), reported per step in metrics.jsonl.
#include <cstdint>

namespace trident {

// The swaps of the passes since the last LayerSwapper::take_stats().
struct SwapStats {
  int sub_models = 0;
  int64_t passes = 0;
  int64_t loads = 0;           // sub-model (and embedding) loads
  int64_t h2d_bytes = 0;       // weights and, between micro-batches, gradients to the device
  int64_t d2h_bytes = 0;       // gradients back to the store
  double exposed_s = 0;        // time the compute waited for copies
  double copy_s = 0;           // time the copy engine was busy
};

}  // namespace trident
