// ATOM's swap planner: the DP finds the best partition (against every partition enumerated), the schedule's
// formulas on hand-checked cases, and budgets nothing fits.
#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <vector>

#include "kernels/common/error.h"
#include "parallel/cost/swap_plan.h"

namespace trident::cost {
namespace {

// Every partition of `layers` (2^(L-1) of them), the fastest that fits, with `count` sub-models when > 0.
std::optional<SwapPlan> exhaustive(const std::vector<LayerCost>& layers, const SwapDevice& device, int count) {
  const int L = static_cast<int>(layers.size());
  std::optional<SwapPlan> best;
  for (uint32_t mask = 0; mask < (1u << (L - 1)); ++mask) {
    std::vector<int> starts = {0};
    for (int l = 1; l < L; ++l)
      if (mask & (1u << (l - 1))) starts.push_back(l);
    if (count > 0 && static_cast<int>(starts.size()) != count) continue;
    const SwapPlan p = evaluate_swaps(layers, device, starts);
    if (p.peak_bytes > device.budget_bytes) continue;
    if (!best || p.step_s() < best->step_s()) best = p;
  }
  return best;
}

LayerCost uniform(double forward_s, double backward_s, int64_t bytes) {
  return {.weight_bytes = bytes, .grad_bytes = bytes, .activation_bytes = bytes / 2, .forward_s = forward_s,
          .backward_s = backward_s};
}

TEST_CASE("the swap planner's DP finds the fastest partition that fits", "[cost][swap]") {
  std::mt19937_64 rng(11);
  int checked = 0, none = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int L = 1 + static_cast<int>(rng() % 10);
    std::vector<LayerCost> layers;
    int64_t total = 0;
    for (int l = 0; l < L; ++l) {
      const int64_t w = 100 + static_cast<int64_t>(rng() % 900);
      layers.push_back({.weight_bytes = w, .grad_bytes = w, .activation_bytes = static_cast<int64_t>(rng() % 500),
                        .forward_s = 0.1 + static_cast<double>(rng() % 100) / 100,
                        .backward_s = 0.2 + static_cast<double>(rng() % 200) / 100});
      total += 2 * w + layers.back().activation_bytes;
    }
    SwapDevice device{.budget_bytes = 200 + static_cast<int64_t>(rng() % static_cast<uint64_t>(total + 1)),
                      .resident_bytes = static_cast<int64_t>(rng() % 200),
                      .h2d_bytes_per_s = 200 + static_cast<double>(rng() % 2000),
                      .d2h_bytes_per_s = 200 + static_cast<double>(rng() % 2000),
                      .shared_copy_engine = rng() % 2 == 0};
    const int count = rng() % 3 == 0 ? 1 + static_cast<int>(rng() % L) : 0;
    INFO("trial " << trial << ": " << L << " layers, budget " << device.budget_bytes << ", count " << count);
    const std::optional<SwapPlan> dp = plan_swaps(layers, device, count), all = exhaustive(layers, device, count);
    REQUIRE(dp.has_value() == all.has_value());
    if (!dp) {
      ++none;
      continue;
    }
    CHECK(dp->step_s() == Approx(all->step_s()).epsilon(1e-12));
    CHECK(dp->peak_bytes <= device.budget_bytes);
    if (count > 0) CHECK(dp->sub_models() == count);
    ++checked;
  }
  CHECK(checked > 100);  // most instances have a plan, and some have none
  CHECK(none > 10);
}

TEST_CASE("the swap schedule: loads hidden under compute cost only the first load and the last drain",
          "[cost][swap]") {
  // 4 layers, forward 1 s, backward 2 s, 50 bytes each way at 100 B/s: 0.5 s per load or drain
  const std::vector<LayerCost> layers(4, uniform(1, 2, 50));
  const SwapDevice device{.budget_bytes = 1000, .h2d_bytes_per_s = 100, .d2h_bytes_per_s = 100};
  const SwapPlan p = evaluate_swaps(layers, device, {0, 1, 2, 3});
  CHECK(p.forward_s == Approx(0.5 + 3 * 1 + 1));      // load_1, then each compute hides the next load
  // the last sub-model's backward (2 s, no recompute: its activations are still there) hides its drain, the one
  // before it is still in the other slot; recompute + backward (3 s) hides load + drain (1 s); the first one's
  // drain comes last, exposed
  CHECK(p.backward_s == Approx(2 + 3 * 3 + 0.5));
  CHECK(p.compute_s == Approx(4 * 1 + 3 * 3 + 2));
  CHECK(p.exposed_copy_s == Approx(0.5 + 0.5));
  CHECK(p.peak_bytes == 50 + 50 + 50 + 50 + 25);       // two slots of weights and gradients, one's activations
  CHECK(describe_swaps(p.starts, 4) == "[0, 1) [1, 2) [2, 3) [3, 4)");
  // the resident compute (embeddings, LM head, loss) adds to the step and to the compute, never to the exposed time
  SwapDevice with_head = device;
  with_head.resident_compute_s = 1.5;
  const SwapPlan h = evaluate_swaps(layers, with_head, {0, 1, 2, 3});
  CHECK(h.step_s() == Approx(p.step_s() + 1.5));
  CHECK(h.compute_s == Approx(p.compute_s + 1.5));
  CHECK(h.exposed_copy_s == Approx(p.exposed_copy_s));
  CHECK(plan_swaps(layers, with_head)->starts == plan_swaps(layers, device)->starts);
  // a later pass of the batch: each backward load brings 0.5 s of gradients too, still hidden under 3 s
  SwapDevice later = device;
  later.accumulating = true;
  CHECK(evaluate_swaps(layers, later, {0, 1, 2, 3}).step_s() == Approx(p.step_s()));
  // loads of 2.5 s, and as long again for the gradients: the last sub-model's 2 s backward under its neighbour's
  // gradients and its own drain (3 s), the middle ones' 3 s under load + gradients + drain (5.5 s), the first's 3 s
  // and then its drain
  later.h2d_bytes_per_s = 20;
  const SwapPlan slow = evaluate_swaps(layers, later, {0, 1, 2, 3});
  CHECK(slow.backward_s == Approx((2.5 + 0.5) + 2 * (2.5 + 2.5 + 0.5) + (3 + 0.5)));
}

TEST_CASE("the swap schedule with offloaded activations: no recompute, the activations' copies beside the compute",
          "[cost][swap]") {
  // the layers above; sub-models ending at layer 3 or below stash their activations: 0 and 1 move them (25 bytes,
  // 0.25 s each way), 2 keeps them in its workspace for its backward, which follows 3's
  const std::vector<LayerCost> layers(4, uniform(1, 2, 50));
  SwapDevice device{.budget_bytes = 1000, .h2d_bytes_per_s = 100, .d2h_bytes_per_s = 100, .recompute_below = 3,
                    .offload = true};
  const SwapPlan p = evaluate_swaps(layers, device, {0, 1, 2, 3});
  CHECK(p.forward_s == Approx(0.5 + 3 * 1 + 1));  // load + activations out (0.75 s) hide under each 1 s forward
  // no recompute: each 2 s backward hides its neighbour's load, activations in and its own drain (at most 1.25 s);
  // the first one's drain comes last, exposed
  CHECK(p.backward_s == Approx(2 + 3 * 2 + 0.5));
  CHECK(p.compute_s == Approx(4 * 1 + 4 * 2));
  CHECK(p.exposed_copy_s == Approx(0.5 + 0.5));
  CHECK(p.peak_bytes == 50 + 50 + 50 + 50 + 2 * 25);  // two slots, and two workspaces of activations
  // the same sub-models recomputing: 3 s more compute
  SwapDevice recomputing = device;
  recomputing.offload = false;
  CHECK(evaluate_swaps(layers, recomputing, {0, 1, 2, 3}).compute_s == Approx(p.compute_s + 3));
  // a link at half the speed: loads of 1 s, activations of 0.5 s; the forwards of 0 and 1 now wait 0.5 s each
  device.h2d_bytes_per_s = device.d2h_bytes_per_s = 50;
  CHECK(evaluate_swaps(layers, device, {0, 1, 2, 3}).forward_s == Approx(1 + 1.5 + 1.5 + 1 + 1));
}

TEST_CASE("the swap schedule: loads slower than compute are exposed, and a bigger budget hides more",
          "[cost][swap]") {
  // loads of 2 s against forwards of 1 s: each forward pair exposes 1 s
  const std::vector<LayerCost> layers(4, uniform(1, 2, 200));
  SwapDevice device{.budget_bytes = 4 * 200 + 100, .h2d_bytes_per_s = 100, .d2h_bytes_per_s = 1e9,
                    .shared_copy_engine = false};
  const SwapPlan p = evaluate_swaps(layers, device, {0, 1, 2, 3});
  CHECK(p.forward_s == Approx(2 + 3 * 2 + 1));
  CHECK(p.backward_s == Approx(2 + 3 * 3));  // recompute + backward (3 s) still hides the 2 s loads
  CHECK(p.exposed_copy_s == Approx(2 + 3 * 1));  // the first load, and 1 s of each later one
  // the budget that holds two layers a side fits only single layers; more budget never makes the plan slower
  double previous = std::numeric_limits<double>::infinity();
  for (int64_t budget : {900, 1300, 1700, 2500, 5000}) {
    device.budget_bytes = budget;
    const std::optional<SwapPlan> best = plan_swaps(layers, device);
    REQUIRE(best.has_value());
    CHECK(best->step_s() <= previous + 1e-12);
    previous = best->step_s();
  }
}

TEST_CASE("the swap planner: a budget below one layer and its neighbour has no plan; bad partitions are refused",
          "[cost][swap]") {
  const std::vector<LayerCost> layers(3, uniform(1, 2, 100));
  const SwapDevice tiny{.budget_bytes = 240, .h2d_bytes_per_s = 1, .d2h_bytes_per_s = 1};
  CHECK_FALSE(plan_swaps(layers, tiny).has_value());     // one layer alone is 250 bytes
  const SwapDevice one{.budget_bytes = 260, .h2d_bytes_per_s = 1, .d2h_bytes_per_s = 1};
  CHECK_FALSE(plan_swaps(layers, one).has_value());      // fits alone, but never beside a neighbour
  CHECK(plan_swaps(std::vector<LayerCost>(1, uniform(1, 2, 100)), one).has_value());  // a lone layer needs none
  CHECK_FALSE(plan_swaps(layers, SwapDevice{.budget_bytes = 1000000, .h2d_bytes_per_s = 1, .d2h_bytes_per_s = 1}, 4));
  CHECK_THROWS_AS(evaluate_swaps(layers, one, {1, 2}), RuntimeError);
  CHECK_THROWS_AS(evaluate_swaps(layers, one, {0, 2, 2}), RuntimeError);
  CHECK_THROWS_AS(evaluate_swaps(layers, one, {0, 3}), RuntimeError);
}

}  // namespace
}  // namespace trident::cost
