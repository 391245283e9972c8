#pragma once
// The strategies a run can use, from its config. A new strategy is one folder under parallel/ and one line in
// candidate_layouts (registry.cpp).
#include <memory>
#include <string>
#include <vector>

#include "parallel/strategy.h"

namespace trident {

// One candidate: a method on groups of sp_size ranks. method "lasp" is LASP with the variant
// parallel.lasp.variant names, measured on the group when that is auto (a fixed strategy only).
struct LayoutSpec {
  std::string method;  // dp, lasp, lasp1, lasp2, ulysses, ring, flexsp (Ulysses inside), flexsp-lasp, atom,
                       // pipeline
  int sp_size = 1;     // 0: planned per micro-batch (flexsp, flexsp-lasp)
};

// The layouts parallel.strategy allows on `world` ranks, in a fixed order (the selector takes the first of equally
// cheap ones): dp first, then by group size, methods in the order lasp1, lasp2, ulysses, ring.
//   auto      dp; atom (ATOM's averaging peers on the resident model) when parallel.atom.average_every > 0 on more
//             than one rank without a round deadline; for every power-of-two group size d >= 2 that divides the world: lasp1 and lasp2 (linear
//             attention; only the one parallel.lasp.variant names unless it is auto), ulysses (when model.n_head
//             divides by d), ring (softmax attention); when the world is a power of two of at least two ranks:
//             flexsp (Ulysses inside, when the world size divides model.n_head) and flexsp-lasp (linear attention),
//             unless parallel.flexsp.inner names the other
//   dp        dp
//   sp, lasp  parallel.sp.method on groups of parallel.sp.size
//   flexsp    FlexSP: groups of every power-of-two size, planned per micro-batch (sp_size 0), with
//             parallel.flexsp.inner inside (flexsp or flexsp-lasp)
//   atom      atom alone: one peer, its model swapped (parallel/atom); auto too when the model does not fit the
//             device resident (parallel/atom/placement.h: swaps)
//   pipeline  pipeline alone: the world's ranks are the stages of one pipeline (parallel/pipeline)
// A fixed layout the model or the world cannot run is a ConfigError naming the key (no collective).
std::vector<LayoutSpec> candidate_layouts(const Config& config, int world);

// The group sizes those layouts use (what RunGroups makes at start-up).
std::vector<int> candidate_degrees(const Config& config, int world);

// The strategies of those layouts (FlexSP needs env.profile). Collective over env.groups.world().
std::vector<std::unique_ptr<Strategy>> make_strategies(const StrategyEnv& env);

// The same layouts as pure candidates (no communicator), for `trident plan` on a described cluster of `world`
// ranks; "lasp" with variant auto is both lasp1 and lasp2. FlexSP is left out: `trident plan` plans it with
// parallel.strategy: flexsp.
std::vector<std::unique_ptr<Candidate>> plan_candidates(const Config& config, int world, int64_t capacity,
                                                        Device device);

}  // namespace trident
