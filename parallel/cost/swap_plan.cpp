#include "parallel/cost/swap_plan.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "kernels/common/error.h"

namespace trident::cost {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

// Sums over layer ranges [a, b) in O(1).
class Ranges {
 public:
  Ranges(std::span<const LayerCost> layers, const SwapDevice& device) : device_(device) {
    const std::size_t n = layers.size();
    weight_.assign(n + 1, 0), grad_.assign(n + 1, 0), act_.assign(n + 1, 0);
    forward_.assign(n + 1, 0), backward_.assign(n + 1, 0);
    for (std::size_t l = 0; l < n; ++l) {
      const LayerCost& c = layers[l];
      TRIDENT_CHECK(c.weight_bytes >= 0 && c.grad_bytes >= 0 && c.activation_bytes >= 0 && c.forward_s >= 0 &&
                        c.backward_s >= 0,
                    "layer {}: negative bytes or seconds", l);
      weight_[l + 1] = weight_[l] + c.weight_bytes;
      grad_[l + 1] = grad_[l] + c.grad_bytes;
      act_[l + 1] = act_[l] + c.activation_bytes;
      forward_[l + 1] = forward_[l] + c.forward_s;
      backward_[l + 1] = backward_[l] + c.backward_s;
    }
  }

  double load_s(int a, int b) const { return static_cast<double>(weight_[b] - weight_[a]) / device_.h2d_bytes_per_s; }
  // What a backward brings besides the weights: the gradients accumulated by the batch's earlier passes.
  double grads_in_s(int a, int b) const {
    return device_.accumulating ? static_cast<double>(grad_[b] - grad_[a]) / device_.h2d_bytes_per_s : 0.0;
  }
  double drain_s(int a, int b) const { return static_cast<double>(grad_[b] - grad_[a]) / device_.d2h_bytes_per_s; }
  double forward_s(int a, int b) const { return forward_[b] - forward_[a]; }
  // Whether the sub-model ending at b gives up its activations after its forward (never the last one's: its
  // backward comes first).
  bool stashed(int b) const {
    return b != layers() && (device_.recompute_below < 0 || b <= device_.recompute_below);
  }
  // Offloading: whether its activations go to the host and back (the last of the stashed ones stays in its
  // workspace: its backward follows the next one's; with recompute_below -1 it is not known, and moves here).
  bool moves(int b) const {
    return device_.offload && stashed(b) && (device_.recompute_below < 0 || b < device_.recompute_below);
  }
  double activations_out_s(int a, int b) const {
    return moves(b) ? static_cast<double>(act(a, b)) / device_.d2h_bytes_per_s : 0.0;
  }
  double activations_in_s(int a, int b) const {
    return moves(b) ? static_cast<double>(act(a, b)) / device_.h2d_bytes_per_s : 0.0;
  }
  // With the recompute of its forward where the device says so.
  double backward_s(int a, int b) const {
    const bool recomputed = stashed(b) && !device_.offload;
    return (recomputed ? forward_s(a, b) : 0.0) + backward_[b] - backward_[a];
  }
  int layers() const { return static_cast<int>(forward_.size()) - 1; }
  int64_t slot(int a, int b) const { return weight_[b] - weight_[a] + grad_[b] - grad_[a]; }
  int64_t act(int a, int b) const { return act_[b] - act_[a]; }
  double copy_s(double load, double drain) const {
    return device_.shared_copy_engine ? load + drain : std::max(load, drain);
  }
  // Device bytes while [a, b) and its neighbour [b, c) both sit on the device, the computing one's activations
  // beside them (both of theirs when offloading: the two take turns in two workspaces).
  int64_t pair_bytes(int a, int b, int c) const {
    const int64_t acts = device_.offload ? act(a, b) + act(b, c) : std::max(act(a, b), act(b, c));
    return device_.resident_bytes + slot(a, b) + slot(b, c) + acts;
  }
  int64_t alone_bytes(int a, int b) const { return device_.resident_bytes + slot(a, b) + act(a, b); }

  // The terms a partition pays for the neighbours [a, b), [b, c): the forward's compute of the first against the
  // second's load (and the first's activations going out), the backward's recompute and backward of the second
  // against the first's load (and its activations coming back) and its own drain. When [b, c) is the last, [a, b)
  // is still in the other slot from the forward: no load.
  double forward_pair_s(int a, int b, int c) const {
    return std::max(forward_s(a, b), copy_s(load_s(b, c), activations_out_s(a, b)));
  }
  double backward_pair_s(int a, int b, int c) const {
    const double reload = (c == layers() ? 0.0 : load_s(a, b)) + grads_in_s(a, b) + activations_in_s(a, b);
    return std::max(backward_s(b, c), copy_s(reload, drain_s(b, c)));
  }
  double pair_s(int a, int b, int c) const { return forward_pair_s(a, b, c) + backward_pair_s(a, b, c); }
  // What the first sub-model [0, b) pays alone: its load before the forward, its backward, then its drain (nothing
  // is left to hide it).
  double first_s(int b) const { return load_s(0, b) + backward_s(0, b) + drain_s(0, b); }

 private:
  const SwapDevice& device_;
  std::vector<int64_t> weight_, grad_, act_;
  std::vector<double> forward_, backward_;
};

void check_device(const SwapDevice& d) {
  TRIDENT_CHECK(d.h2d_bytes_per_s > 0 && d.d2h_bytes_per_s > 0, "swap planning needs positive copy bandwidths");
  TRIDENT_CHECK(d.budget_bytes > 0 && d.resident_bytes >= 0, "swap planning needs a positive device budget");
  TRIDENT_CHECK(d.resident_compute_s >= 0, "swap planning needs a resident compute time >= 0");
}

}  // namespace

SwapPlan evaluate_swaps(std::span<const LayerCost> layers, const SwapDevice& device, std::vector<int> starts) {
  check_device(device);
  const int L = static_cast<int>(layers.size());
  TRIDENT_CHECK(!starts.empty() && starts[0] == 0 && std::is_sorted(starts.begin(), starts.end()) &&
                    std::adjacent_find(starts.begin(), starts.end()) == starts.end() && starts.back() < L,
                "a swap partition starts at layer 0 and splits {} layers at increasing points", L);
  const Ranges r(layers, device);
  std::vector<int> bounds = starts;
  bounds.push_back(L);
  const int k = static_cast<int>(starts.size());
  SwapPlan plan;
  plan.starts = std::move(starts);
  plan.forward_s = r.load_s(0, bounds[1]) + r.forward_s(bounds[k - 1], L) + device.resident_compute_s;
  plan.backward_s = r.backward_s(0, bounds[1]) + r.drain_s(0, bounds[1]);
  plan.peak_bytes = r.alone_bytes(0, bounds[1]);
  double compute_s = r.forward_s(0, L) + r.backward_s(0, bounds[1]) + device.resident_compute_s;
  for (int i = 0; i + 1 < k; ++i) {
    const int a = bounds[i], b = bounds[i + 1], c = bounds[i + 2];
    plan.forward_s += r.forward_pair_s(a, b, c);
    plan.backward_s += r.backward_pair_s(a, b, c);
    plan.peak_bytes = std::max(plan.peak_bytes, r.pair_bytes(a, b, c));
    compute_s += r.backward_s(b, c);
  }
  plan.compute_s = compute_s;
  plan.exposed_copy_s = plan.step_s() - plan.compute_s;
  return plan;
}

std::optional<SwapPlan> plan_swaps(std::span<const LayerCost> layers, const SwapDevice& device, int sub_models) {
  check_device(device);
  const int L = static_cast<int>(layers.size());
  TRIDENT_CHECK(L > 0, "swap planning needs at least one layer");
  if (sub_models > L) return std::nullopt;
  const Ranges r(layers, device);
  // best[n][a][b]: the least cost of layers [0, b) in n + 1 sub-models (n = 0 when the count is free), the last
  // [a, b), every neighbour pair within the budget; F of the last one is added when the partition ends.
  const int counts = sub_models > 0 ? sub_models : 1;
  auto at = [L](int n, int a, int b) { return (static_cast<std::size_t>(n) * (L + 1) + a) * (L + 1) + b; };
  std::vector<double> best(static_cast<std::size_t>(counts) * (L + 1) * (L + 1), kNone);
  std::vector<int> from(best.size(), -1);
  for (int b = 1; b <= L; ++b)
    if (r.alone_bytes(0, b) <= device.budget_bytes) best[at(0, 0, b)] = r.first_s(b);
  for (int n = 0; n < counts; ++n)
    for (int b = 1; b < L; ++b)
      for (int a = 0; a < b; ++a) {
        const double here = best[at(n, a, b)];
        if (here == kNone) continue;
        const int next = sub_models > 0 ? n + 1 : 0;
        if (next >= counts) continue;
        for (int c = b + 1; c <= L; ++c) {
          if (r.pair_bytes(a, b, c) > device.budget_bytes) continue;
          const double t = here + r.pair_s(a, b, c);
          if (t < best[at(next, b, c)]) best[at(next, b, c)] = t, from[at(next, b, c)] = a;
        }
      }
  const int last = counts - 1;
  double best_total = kNone;
  int best_a = -1;
  for (int a = 0; a < L; ++a)
    if (const double t = best[at(last, a, L)] + r.forward_s(a, L); t < best_total) best_total = t, best_a = a;
  if (best_a < 0) return std::nullopt;
  std::vector<int> starts;  // the split points, walked back from the last sub-model to layer 0
  for (int n = last, a = best_a, b = L;;) {
    starts.push_back(a);
    if (a == 0) break;
    const int prev = from[at(n, a, b)];
    b = a, a = prev;
    if (sub_models > 0) --n;
  }
  std::reverse(starts.begin(), starts.end());
  return evaluate_swaps(layers, device, std::move(starts));
}

std::string describe_swaps(std::span<const int> starts, int layers) {
  std::string out;
  for (std::size_t i = 0; i < starts.size(); ++i)
    out += fmt::format("{}[{}, {})", i ? " " : "", starts[i], i + 1 < starts.size() ? starts[i + 1] : layers);
  return out;
}

}  // namespace trident::cost
