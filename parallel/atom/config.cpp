#include "parallel/atom/config.h"

#include "core/config/schema.h"

namespace trident {

namespace {

// DiLoCo's outer step is applied by averaging rounds.
void check(const Config& config, const KeyRelations& relations) {
  const AtomConfig& atom = atom_config(config);
  relations.require(atom.averaging != "diloco" || atom.average_every >= 1, "parallel.atom.averaging",
                    "needs rounds: set", "parallel.atom.average_every");
}

}  // namespace

// Collected by the build into strategy_config_sections() (core/config/schema.h).
ConfigSection atom_config_section() {
  return {.strategies = {"atom"},
          .keys = {
      {"parallel.atom.sub_models", IntField{section_member(&AtomConfig::sub_models), 0, 4096},
       "ATOM: contiguous sub-models the layers are split into for swapping; 0 = any count (the fastest that fits by "
       "the swap schedule with a profile, else the one that recomputes the fewest layers)"},
      {"parallel.atom.host_memory_gb",
       FloatField{.member = section_member(&AtomConfig::host_memory_gb), .min = 0},
       "ATOM: host memory (GiB) the whole model's store must fit: fp32 weights, gradients and AdamW m and v, 16 "
       "bytes a parameter; 0 = this machine's physical memory"},
      {"parallel.atom.activations",
       StringField{section_member(&AtomConfig::activations), {"auto", "keep", "recompute", "offload"}},
       "ATOM: keep (every layer's activations stay on the device: no recompute), recompute (backward recomputes every "
       "sub-model's forward but the last one's from its input), offload (the fewest leading sub-models that fit a "
       "pass move their activations to the host after their forward and back before their backward, beside the "
       "compute) or auto (the fewest recomputed that fit a pass; with a profile that has network.host_to_device, "
       "that or the fewest offloaded, whichever the swap schedule predicts faster, and where no pass holds a batch "
       "the fastest predicted in several passes)"},
      {"parallel.atom.average_every", IntField{section_member(&AtomConfig::average_every), 0},
       "ATOM peers (more than one rank): 0 = exact, the peers' gradients summed every step (data parallelism of "
       "replicas); N = each peer updates its own replica and the peers average their parameters every N steps, "
       "weighted by tokens, in the background"},
      {"parallel.atom.max_staleness", IntField{section_member(&AtomConfig::max_staleness), 0},
       "ATOM peers averaging: steps a round runs in the background before the peer applies it (waiting for it if "
       "need be; sooner when the next round starts first); 0: each round applies at once"},
      {"parallel.atom.averaging",
       StringField{section_member(&AtomConfig::averaging), {"params", "diloco"}},
       "ATOM peers averaging: params (a round applies the peers' token-weighted average) or diloco (the average's "
       "distance from the last round's parameters is an outer gradient, applied by Nesterov momentum SGD with "
       "parallel.atom.outer_lr and outer_momentum; also on one peer)"},
      {"parallel.atom.outer_lr",
       FloatField{.member = section_member(&AtomConfig::outer_lr), .min = 0, .min_open = true},
       "ATOM diloco: the outer step's learning rate (1 with momentum 0 is params averaging)"},
      {"parallel.atom.outer_momentum",
       FloatField{.member = section_member(&AtomConfig::outer_momentum), .min = 0, .max = 1,
                  .max_open = true},
       "ATOM diloco: the outer step's Nesterov momentum"},
      {"parallel.atom.average_split",
       StringField{section_member(&AtomConfig::average_split), {"bandwidth", "even"}},
       "ATOM peers averaging: a round is a butterfly all-reduce whose parts each peer sums; bandwidth = parts in "
       "proportion to each peer's bandwidth, measured at start-up (even when every peer is on one node), even = "
       "equal parts"},
      {"parallel.atom.round_deadline_ms",
       FloatField{.member = section_member(&AtomConfig::round_deadline_ms), .min = 0},
       "ATOM peers averaging: 0 = each round is an allreduce over every peer; > 0 = a round takes the peers ready "
       "within this many ms of the first, so a slow peer misses rounds instead of holding the others back (needs MPI "
       "with MPI_THREAD_MULTIPLE)"},
      {"parallel.atom.emulate_slow_rank",
       IntField{section_member(&AtomConfig::emulate_slow_rank), -1},
       "ATOM peers: the rank whose steps are slowed by parallel.atom.emulate_slowdown, an emulated slow peer "
       "(-1: none)"},
      {"parallel.atom.emulate_slowdown",
       FloatField{.member = section_member(&AtomConfig::emulate_slowdown), .min = 1},
       "ATOM peers: the emulated slow peer's steps last this many times as long (it sleeps after computing)"},
      {"parallel.atom.prefetch", IntField{section_member(&AtomConfig::prefetch), 1, 64},
       "ATOM: sub-models loading ahead of the one computing (device slots = prefetch + 1)"},
      {"parallel.atom.emulate_copy_gb_per_s",
       FloatField{.member = section_member(&AtomConfig::emulate_copy_gb_per_s), .min = 0},
       "ATOM on the cpu backend: each copy between the host store and device memory lasts at least bytes / this "
       "rate (GB/s), an emulated PCIe link; 0 = as fast as memcpy (the only value on the cuda backend)"},
  }, .check = check};
}

const AtomConfig& atom_config(const Config& config) {
  return config.parallel.sections.get<AtomConfig>();
}
AtomConfig& atom_config(Config& config) {
  return config.parallel.sections.get<AtomConfig>();
}

}  // namespace trident
