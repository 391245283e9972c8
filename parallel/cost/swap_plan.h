#pragma once
// ATOM's swap planner (docs/methods.md §4.2-4.3, ATOM): the model's layers split into contiguous sub-models that
// take turns on a device too small for the whole model, the next one loading while the current one computes. Pure:
// no MPI, no device.
//
// Schedule (one-deep prefetch, k sub-models; sub-model k stays resident from the forward into the backward):
//   forward   load_1, then compute_i while load_{i+1} runs:      t_fwd = load_1 + sum_{i<k} max(F_i, load_{i+1}) + F_k
//             + R, the resident compute (embeddings, LM head and loss, forward and backward)
//   backward  sub-models k .. 1, each but the last recomputing its forward from its boundary checkpoint before its
//             backward (B_i = F_i + backward_i; B_k = backward_k, its activations are still there), while the previous
//             one loads and its own gradients stream to the host:
//                                                              t_bwd = sum_{i>1} max(B_i, copy(load_{i-1}, drain_i))
//                                                                    + B_1 + drain_1
//             where load_{k-1} = 0: sub-model k - 1 is still in the other slot from the forward; a later pass of a
//             batch in several also loads each sub-model's accumulated gradients with it.
//   Offloading instead of recomputing: a stashed sub-model's activations go to the host beside the next forward and
//   come back beside a later backward (F_i <- max(F_i, copy(load_{i+1}, out_i)), the reload gains in_i), except
//   the last stashed one's, which stay on the device (B_i has no recompute).
//   copy(a, b) = a + b when both directions share one copy engine (the CPU backend's copy thread, and so far the CUDA
//   backend's one copy stream), max(a, b) with one engine per direction (a GPU's H2D and D2H engines, once loads
//   and drains run on a stream each).
// Device memory: while sub-model i computes and i + 1 (or i - 1) loads, both sit in their slots (weights and
// gradients) beside the computing one's activations and the resident bytes:
//   slot_i + slot_j + max(act_i, act_j) + resident <= budget   for every two neighbours i, j.
// The partition minimises t_fwd + t_bwd under that constraint: a DP over split points, O(L^3) for L layers.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace trident::cost {

// One layer as the swap planner sees it: measured or derived from the model's shape.
struct LayerCost {
  int64_t weight_bytes = 0;      // moved host -> device each time the layer loads
  int64_t grad_bytes = 0;        // moved device -> host after its backward
  int64_t activation_bytes = 0;  // device bytes its recomputed forward keeps for the backward (what offloading moves)
  double forward_s = 0;
  double backward_s = 0;  // without the recompute
};

struct SwapDevice {
  int64_t budget_bytes = 0;    // device memory the run may use
  int64_t resident_bytes = 0;  // always on the device: the tied embedding / LM head, boundary checkpoints, buffers
  // The compute of what is always there (embeddings, final norm, tied LM head and loss, forward + backward): the same
  // for every partition, it hides no copy here (the LM head runs between the last forward and its backward, which
  // load nothing). Counted in forward_s and compute_s.
  double resident_compute_s = 0;
  double h2d_bytes_per_s = 0;
  double d2h_bytes_per_s = 0;
  bool shared_copy_engine = true;  // loads and gradient drains queue on one engine
  // Sub-models that end at or below this layer recompute their forward before their backward (their layers'
  // activation_bytes are the workspace they take); the later ones keep their activations (in resident_bytes, their
  // activation_bytes 0). -1: every sub-model but the last recomputes.
  int recompute_below = -1;
  // Those sub-models offload their activations to the host instead of recomputing them (evaluate_swaps only).
  bool offload = false;
  // A later pass of a batch run in several: each backward load also brings the gradients the earlier passes
  // accumulated (the first pass finds them zero, which moves no bytes).
  bool accumulating = false;
};

struct SwapPlan {
  std::vector<int> starts;  // sub-model i is layers [starts[i], starts[i + 1]) (the last ends at the layer count)
  double forward_s = 0;
  double backward_s = 0;
  double compute_s = 0;      // sum of F_i and B_i (recompute included) and the resident compute: every copy hidden
  double exposed_copy_s = 0;  // forward_s + backward_s - compute_s
  int64_t peak_bytes = 0;    // the largest neighbour pair's memory, resident bytes included
  int sub_models() const { return static_cast<int>(starts.size()); }
  double step_s() const { return forward_s + backward_s; }
};

// The predicted times and peak memory of one partition (`starts` begins at 0, increasing, below layers.size()).
SwapPlan evaluate_swaps(std::span<const LayerCost> layers, const SwapDevice& device, std::vector<int> starts);

// The fastest partition that fits, with exactly `sub_models` sub-models when given (> 0), else any count; nullopt
// when none fits (a layer and its neighbour do not fit the budget).
std::optional<SwapPlan> plan_swaps(std::span<const LayerCost> layers, const SwapDevice& device, int sub_models = 0);

// "[0, 4) [4, 8) [8, 12)": the sub-models starting at `starts`, for the run log and `trident plan`.
std::string describe_swaps(std::span<const int> starts, int layers);

}  // namespace trident::cost
