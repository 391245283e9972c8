#pragma once
// The link rates that make this machine, running a small model, communicate as much relative to its compute as a
// named testbed does running its own model (docs/emucluster.md, "Scaled to a testbed"). The quantity matched is the
// ratio of seconds spent moving a token's activations to seconds spent computing it, per device:
//
//   ratio = (bytes_per_token / link_bytes_per_s) / seconds_per_token,   bytes_per_token = 8 L d b,
//   seconds_per_token = alpha2 + alpha1 S   (a token of a sequence of S = model.max_seq_len tokens; alpha2 when 0)
//
// (sequence parallelism's exchange: 4 all-to-alls forward and 4 backward per layer, each moving a token's d values
// of b bytes; Ring Attention and FlexSP's groups move the same order), for the link inside a node and the link
// between nodes. Equal ratios give, for each link,
//
//   link_here = link_testbed * (bytes_per_token_here / bytes_per_token_testbed)
//                            * (seconds_per_token_testbed / seconds_per_token_here).
//
// Each side's longest sequence sets how much attention's quadratic term weighs: on FlexSP's testbed (GPT-7B, 384K)
// it is ~10x the linear term, as on a small model at 4K here, so the two are compared where each trains longest.
//
// Matching device FLOP/s per link byte/s instead would be wrong whenever the models differ: a model of width d moves
// d values a token per layer for ~72 d^2 FLOPs, so a model 16x narrower than the testbed's spends 16x more of its
// step communicating on the same hardware ratio.
#include <string>

#include "parallel/cost/profile.h"

namespace trident::cost {

// One machine running one model, per device.
struct ScaledSide {
  std::string source;          // the profile file
  std::string model;           // the model section's name
  int64_t max_seq_len = 0;     // S (0: not stated)
  double seconds_per_token = 0;  // alpha2 + alpha1 S (here: as measured, times `slowdown`)
  double bytes_per_token = 0;  // 8 L d b
  double intra_bytes_per_s = 0, inter_bytes_per_s = 0;
  double intra_ratio = 0, inter_ratio = 0;  // seconds moving a token / seconds computing it
};

struct ScaledLinks {
  ScaledSide testbed, here;
};

// `testbed` needs its network, compute (a positive time a token) and model sections; `here` (written by `trident bench profile`)
// its compute and model sections. `slowdown` multiplies here's alpha2: the ranks that will share this machine's cores
// compute that much slower than the profile measured (>= 1). ConfigError naming the file and the missing section or
// value otherwise.
ScaledLinks scale_links_to_testbed(const Profile& testbed, const Profile& here, double slowdown = 1);

// A rate in bits per second in tc's notation, rounded down to whole kbit ("412345kbit").
std::string tc_rate(double bytes_per_s);

}  // namespace trident::cost
