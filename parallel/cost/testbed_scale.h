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
// A pipeline (exchange `pipeline`, ATOM's baseline: one stage a device) moves instead a token's d values of b bytes
// over a stage boundary each way while a stage computes its 1/k of the token (k stages: the testbed's devices, the
// ranks here), so there bytes_per_token = d b and seconds_per_token = (alpha2 + alpha1 S) / k, for both links. ATOM's
// peers average their fp32 parameters instead, off the step's path: round_tokens = (4 P / inter link) / seconds a
// token (the whole model on one device) is how many tokens a peer computes while one round crosses the link.
//
// A testbed's largest groups may see a slower all-to-all than its inter_node link (FlexSP's: 10.3 GB/s a device for
// 16 GPUs on 2 nodes, 4.9 GB/s for 64 on 8). With `alltoall_group` G the inter link is scaled from the network.alltoall
// row of G devices instead, so that an all-to-all over every rank here, spanning every emulated node, stands for one
// over G devices there: static SP at all ranks here pays what static SP at degree G pays there.
//
// Lengths scale too (`scale_lengths`). Each side computes a token of a length-L sequence in alpha2 (1 + L / L0), where
// L0 = alpha2 / alpha1 is the length at which attention costs as much as the rest. A sequence of L tokens there and
// one of L x L0_here / L0_testbed here weigh attention alike, so with length_scale = L0_here / L0_testbed and here's
// side taken at the testbed's longest sequence times it (not at its own), the two ratios are equal at every length,
// not only the longest: a benchmark that draws the testbed's document lengths times length_scale
// (data.synthetic_length_scale) then communicates, document by document, as the testbed does.
//
// Matching device FLOP/s per link byte/s instead would be wrong whenever the models differ: a model of width d moves
// d values a token per layer for ~72 d^2 FLOPs, so a model 16x narrower than the testbed's spends 16x more of its
// step communicating on the same hardware ratio.
#include <string>

#include "parallel/cost/profile.h"

namespace trident::cost {

// What the benchmark's ranks exchange: sequence parallelism's all-to-alls (FlexSP, LASP, auto) or a pipeline's
// stage boundaries (ATOM's baseline).
enum class Exchange { sequence, pipeline };

// One machine running one model, per device.
struct ScaledSide {
  std::string source;          // the profile file
  std::string model;           // the model section's name
  int64_t max_seq_len = 0;     // S (0: not stated)
  double seconds_per_token = 0;  // alpha2 + alpha1 S (here: as measured, times `slowdown`)
  double bytes_per_token = 0;  // 8 L d b
  double intra_bytes_per_s = 0, inter_bytes_per_s = 0;
  double intra_ratio = 0, inter_ratio = 0;  // seconds moving a token / seconds computing it
  int64_t stages = 1;          // pipeline: the stages a token's compute is shared by
  int64_t parameters = 0;      // pipeline: P (0: not stated)
  double round_tokens = 0;     // pipeline: tokens one device computes (whole model) while 4 P bytes cross the inter
                               // link
};

struct ScaledLinks {
  ScaledSide testbed, here;
  int64_t alltoall_group = 0;  // the testbed's inter link is its all-to-all over this many devices (0: inter_node)
  double length_scale = 1;     // scale_lengths: L0_here / L0_testbed (here.max_seq_len is the testbed's times it)
};

// `testbed` needs its network, compute (a positive time a token) and model sections; `here` (written by `trident bench
// profile`) its compute and model sections. `slowdown` multiplies here's seconds a token: the ranks that will share
// this machine's cores compute that much slower than the profile measured (>= 1). `pipeline` also needs the testbed's
// cluster section (its stages: nodes x devices_per_node) and here's stage count (`stages_here` >= 2). ConfigError
// naming the file and the missing section or value otherwise. `alltoall_group` > 0 (sequence exchange only) takes the
// testbed's inter link from its network.alltoall row of that group_size; ConfigError if it has none. `scale_lengths`
// (sequence exchange only) needs both sides' alpha1 > 0 and the testbed's model.max_seq_len.
ScaledLinks scale_links_to_testbed(const Profile& testbed, const Profile& here, double slowdown = 1,
                                   Exchange exchange = Exchange::sequence, int64_t stages_here = 0,
                                   int64_t alltoall_group = 0, bool scale_lengths = false);

// A rate in bits per second in tc's notation, rounded down to whole kbit ("412345kbit").
std::string tc_rate(double bytes_per_s);

}  // namespace trident::cost
