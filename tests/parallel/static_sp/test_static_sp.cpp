// Every static candidate (method and group size) through the Strategy interface equals the single-rank step: the
// same global batch, the gradient of the whole batch on every rank. Each [mpi] case runs as a 1-rank world (ctest)
// and under mpirun with 2 and 4 ranks; candidates whose group size does not divide the world are skipped there.
// Checks use CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "parallel/lasp/config.h"
#include "parallel/sp/model_op.h"
#include "parallel/static_sp/static_sp.h"
#include "support/assert_close.h"
#include "support/strategy_fixtures.h"
#include "support/fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

Config tiny_config(const std::string& attention) {
  Config c = tiny_strategy_config(attention, 64);
  lasp_config(c).variant = "lasp2";
  return c;
}


StrategyEnv env_for(const Config& c, int64_t capacity) { return {every_degree_groups(), cpu_backend(), c, capacity}; }

// The gradient the single-rank step computes: forward and backward of the whole batch on this rank alone.
std::vector<float> single_rank_gradient(GPT& model, const Batch& b) {
  const TokenBatch whole{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
                         b.num_sequences()};
  int64_t targets = 0;
  for (int32_t t : b.targets) targets += t >= 0;
  model.zero_grads();
  model.forward_backward(whole, 1.0f / static_cast<float>(targets));
  return {model.grads(), model.grads() + model.num_params()};
}

}  // namespace

TEST_CASE("every static candidate (method and group size) equals the single-rank step", "[mpi][static_sp]") {
  struct Layout {
    const char* attention;
    const char* method;
    int degree;
    int heads = 4;
  };
  const int W = world().size();
  // The hybrids ("LS": a linear layer, then a softmax one) run each pair of methods, and Ring beside LASP on groups
  // the heads do not divide (3 heads) or that are larger than the head count (2 heads on 4 ranks). USP on one node
  // of 4 ranks: Ulysses over 2 x Ring over 2 with 2 heads, all Ulysses with 4, all Ring with 3.
  for (const Layout& l : {Layout{"softmax", "dp", 1}, Layout{"linear", "dp", 1}, Layout{"linear", "lasp", W},
                          Layout{"linear", "ulysses", 2}, Layout{"softmax", "ulysses", W},
                          Layout{"softmax", "ring", W}, Layout{"softmax", "ring", 2}, Layout{"hybrid", "dp", 1},
                          Layout{"hybrid", "lasp1+ulysses", W}, Layout{"hybrid", "lasp2+ulysses", 2},
                          Layout{"hybrid", "lasp2+ulysses", W},
                          Layout{"hybrid", "lasp2+ring", W}, Layout{"hybrid", "lasp1+ring", W, 3},
                          Layout{"hybrid", "lasp2+ring", W, 2}, Layout{"hybrid", "ulysses", 2},
                          Layout{"softmax", "usp", W, 2}, Layout{"hybrid", "lasp1+usp", W, 2},
                          Layout{"hybrid", "lasp2+usp", W, 4}, Layout{"hybrid", "lasp2+usp", 2, 2},
                          Layout{"softmax", "usp", W, 4}, Layout{"softmax", "usp", W, 3}}) {
    const bool ulysses = std::string(l.method).ends_with("ulysses");
    if (W % l.degree != 0 || (ulysses && l.heads % l.degree != 0)) continue;
    Config c = tiny_config(l.attention);
    c.model.n_head = l.heads;
    GPT model(c.model, 256, test_allocator());
    model.init_weights(5);
    // USP: 103 tokens, so that its Ulysses groups' slices differ in size
    const bool usp = std::string(l.method).ends_with("usp");
    const Batch b = random_documents({17, 1, 30, 9, 40, usp ? 6 : 3}, 11);
    const std::vector<float> expected = single_rank_gradient(model, b);
    StaticSequenceParallel strategy(env_for(c, 256), l.method, l.degree);
    INFO(l.attention << " " << strategy.name() << " on " << W << " ranks, " << l.heads << " heads");
    CHECK(strategy.feasible(b).ok);
    model.zero_grads();
    const StepSums sums = strategy.train(model, b, 1.0f / 100.0f);
    CHECK(sums.tokens == b.num_tokens());
    std::vector<float> got(model.grads(), model.grads() + model.num_params());
    // rescale: the reference used 1 / targets, the strategy 1 / 100
    for (float& g : got) g *= 100.0f / static_cast<float>(sums.targets);
    check_close_per_tensor("gradient through " + strategy.name(), model.layout(), got, expected, 1e-5);
    const StepSums eval = strategy.evaluate(model, b);
    CHECK(eval.targets == sums.targets);
    CHECK(eval.loss_sum == Approx(sums.loss_sum).epsilon(1e-5));
  }
}

TEST_CASE("a batch beyond a rank's activation capacity is infeasible, with the reason", "[mpi][static_sp]") {
  const Config c = tiny_config("linear");
  const Batch b = random_documents({40, 20}, 3);  // 60 tokens
  const int W = world().size();
  StaticSequenceParallel dp(env_for(c, 16), "dp", 1);
  // data parallelism splits the documents, never a document: the 40-token one stays whole on one rank
  const Feasibility f = dp.feasible(b);
  CHECK_FALSE(f.ok);
  CHECK_THAT(f.reason, Catch::Contains("above its activation capacity of 16"));
  StaticSequenceParallel lasp(env_for(c, (60 + W - 1) / W), "lasp", W);
  CHECK(lasp.feasible(b).ok);  // a group of W holds the batch in slices of 60 / W
}

TEST_CASE("a static candidate the model cannot run is a configuration error naming the key", "[static_sp]") {
  const Config linear = tiny_config("linear"), softmax = tiny_config("softmax");
  CHECK_THROWS_AS(check_static_candidate(softmax.model, "lasp", 1, 1), ConfigError);
  CHECK_THROWS_WITH(check_static_candidate(linear.model, "ring", 1, 1), Catch::Contains("parallel.sp.method: 'ring'"));
  CHECK_THROWS_WITH(check_static_candidate(linear.model, "ulysses", 3, 3), Catch::Contains("model.n_head = 4"));
  CHECK_THROWS_WITH(check_static_candidate(linear.model, "lasp", 3, 4), Catch::Contains("parallel.sp.size = 3"));
  const Config hybrid = tiny_config("hybrid");  // 4 heads
  CHECK_THROWS_WITH(check_static_candidate(hybrid.model, "lasp2+ulysses", 3, 3),
                    Catch::Contains("parallel.sp.softmax_method: 'ulysses'") && Catch::Contains("model.n_head = 4"));
  CHECK_THROWS_WITH(check_static_candidate(hybrid.model, "ring", 2, 2),
                    Catch::Contains("parallel.sp.method: 'ring'") &&
                        Catch::Contains("parallel.sp.softmax_method: ring"));
  CHECK_THROWS_WITH(check_static_candidate(hybrid.model, "lasp2", 2, 2),
                    Catch::Contains("model.attention is 'hybrid'"));
  CHECK_THROWS_WITH(check_static_candidate(linear.model, "lasp2+ring", 2, 2),
                    Catch::Contains("parallel.sp.softmax_method") && Catch::Contains("model.attention is 'linear'"));
  CHECK_THROWS_WITH(check_static_candidate(hybrid.model, "ulysses+ring", 2, 2), Catch::Contains("only LASP"));
  check_static_candidate(hybrid.model, "lasp1+ring", 3, 3);  // Ring takes any group size
  CHECK_THROWS_WITH(check_static_candidate(linear.model, "usp", 2, 2), Catch::Contains("USP here is softmax-only"));
}

TEST_CASE("USP's Ulysses degree divides the group, the heads and a node's ranks", "[static_sp]") {
  CHECK(usp_ulysses_degree(8, 4, 4) == 4);    // 2 nodes of 4: Ulysses inside each, a ring of 2 across
  CHECK(usp_ulysses_degree(8, 2, 4) == 2);    // 2 heads: Ulysses over pairs, a ring of 4
  CHECK(usp_ulysses_degree(4, 8, 8) == 4);    // the group inside one node: all Ulysses
  CHECK(usp_ulysses_degree(4, 3, 4) == 1);    // 3 heads: all Ring
  CHECK(usp_ulysses_degree(12, 6, 4) == 2);
  CHECK(usp_ulysses_degree(8, 8, 0) == 1);    // nodes of different sizes: Ring across all
}
