#pragma once
// parallel.lasp.variant: auto — pick LASP-1 or LASP-2 for this SP group from a measurement of what separates them.
// Both compute the same local kernels; they differ in how the boundary states move: LASP-1's forward (and backward)
// is a chain of T-1 dependent hops of one H*D*D fp32 state, LASP-2's one allgather of T states. Their costs depend
// on the group's links (latency per hop against allgather bandwidth), so they are timed on the group itself, on
// states of the model's size, rather than guessed.
#include <cstdint>

#include "parallel/comm/communicator.h"
#include "parallel/lasp/lasp.h"

namespace trident {

struct LaspVariantTimes {
  double lasp1_s = 0;  // one forward's state chain (T-1 hops): its slowest rank (the last)
  double lasp2_s = 0;  // one allgather of every rank's state: its slowest rank
  // The faster; LASP-2 on a tie (it is never slower in compute, docs/methods.md §2.2).
  LaspVariant faster() const { return lasp1_s < lasp2_s ? LaspVariant::lasp1 : LaspVariant::lasp2; }
};

// Collective over `sp`: every rank gets the same times (gathered from the group, so all ranks decide alike).
// `repeats` timed rounds of each pattern after one warm-up round; a rank's median round counts.
LaspVariantTimes measure_lasp_variants(Communicator& sp, int64_t state_floats, int repeats = 7);

}  // namespace trident
