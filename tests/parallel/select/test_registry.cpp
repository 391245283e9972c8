// The strategy registry is a table (parallel/select/registry.h): a strategy defined here, outside the project's
// folders, plugs in through register_strategy alone, is chosen by parallel.strategy, listed under auto, and trains;
// an unknown parallel.strategy names the registered ones.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/optim/adamw.h"
#include "kernels/common/error.h"
#include "parallel/select/registry.h"
#include "parallel/select/selector.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

TokenBatch whole(const Batch& b) {
  return {b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
          b.num_sequences()};
}

// Every rank runs the whole batch on its own replica: exact at any world size, and nothing but the Strategy
// interface.
class Solo final : public Strategy {
 public:
  explicit Solo(int64_t capacity) : capacity_(capacity) {}
  std::string name() const override { return "solo"; }
  std::string method() const override { return "solo"; }
  int degree() const override { return 1; }
  Feasibility feasible(const Batch& batch) const override {
    if (batch.num_tokens() <= capacity_) return {};
    return {false, "the batch does not fit one rank's activations"};
  }
  cost::StepEstimate estimate(const Batch& batch, const cost::StepCostModel& cost) const override {
    const double s = cost.compute_s(batch.sequence_lengths(), 1);
    return {.seconds = s, .compute_s = s};
  }
  StepSums train(GPT& model, const Batch& batch, float loss_weight) override {
    const double loss = model.forward_backward(whole(batch), loss_weight);
    return sums(loss, batch);
  }
  StepSums evaluate(GPT& model, const Batch& batch) override { return sums(model.forward_loss(whole(batch)), batch); }

 private:
  static StepSums sums(double loss, const Batch& batch) {
    return {.loss_sum = loss,
            .targets = static_cast<double>(batch.num_targets()),
            .tokens = static_cast<double>(batch.num_tokens())};
  }
  int64_t capacity_;
};

const StrategyEntry& solo_entry() {
  static const StrategyEntry entry{
      .names = {"solo"},
      .alone = [](const Config&, int) { return std::vector<CandidateSpec>{{"solo", 1}}; },
      .make = [](const StrategyEnv& env, const CandidateSpec&) -> std::unique_ptr<Strategy> {
        return std::make_unique<Solo>(env.capacity_tokens);
      },
      .under_auto = [](const Config&, int) { return std::vector<CandidateSpec>{{"solo", 1}}; }};
  return entry;
}

// Registered for one test: the other tests of this executable see the built-in table.
struct SoloRegistered {
  SoloRegistered() { register_strategy(solo_entry()); }
  ~SoloRegistered() { unregister_strategy(solo_entry()); }
  SoloRegistered(const SoloRegistered&) = delete;
  SoloRegistered& operator=(const SoloRegistered&) = delete;
};

}  // namespace

TEST_CASE("a strategy registered through the table alone is chosen by name, listed under auto, and trains",
          "[select][registry]") {
  const SoloRegistered registered;
  Config c = tiny_strategy_config("softmax", 64);
  CHECK(parse_config("parallel:\n  strategy: solo\n", "solo.yaml").parallel.strategy == "solo");  // a config value
  c.parallel.strategy = "solo";
  const std::vector<CandidateSpec> alone = run_candidates(c, 1);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].method == "solo");
  CHECK(alone[0].family == &solo_entry());

  RunGroups groups(world(), {}, candidate_degrees(c, 1));  // one rank: this test is not run under mpirun
  const StrategyEnv env{groups, cpu_backend(), c, 256};
  Selector selector(make_strategies(env), std::nullopt, Selector::Mode::measured, world());
  GPT model(c.model, 256, test_allocator()), reference(c.model, 256, test_allocator());
  model.init_weights(5);
  reference.init_weights(5);
  AdamW optimizer(model.layout(), c.train, test_allocator()), reference_optimizer(reference.layout(), c.train,
                                                                                   test_allocator());
  for (uint64_t step = 0; step < 3; ++step) {
    const Batch batch = random_documents({20, 7, 33}, step);
    const float weight = 1.0f / static_cast<float>(batch.num_targets());
    const Selector::Choice choice = selector.choose(batch);
    REQUIRE(choice.strategy);
    CHECK(choice.strategy->name() == "solo");
    model.zero_grads();
    const StepSums sums = choice.strategy->train(model, batch, weight);
    optimizer.step(model.params(), model.grads(), 1e-3f, 1.0f);
    reference.zero_grads();
    CHECK(sums.loss_sum == reference.forward_backward(whole(batch), weight));
    reference_optimizer.step(reference.params(), reference.grads(), 1e-3f, 1.0f);
  }
  CHECK(std::equal(model.params(), model.params() + model.num_params(), reference.params()));

  c.parallel.strategy = "auto";
  const std::vector<CandidateSpec> under_auto = run_candidates(c, 1);
  REQUIRE(!under_auto.empty());
  CHECK(under_auto.front().method == "dp");
  CHECK(under_auto.back().method == "solo");

  c.parallel.strategy = "nonesuch";
  CHECK_THROWS_WITH(run_candidates(c, 1), Catch::Contains("parallel.strategy: 'nonesuch' is not a registered "
                                                             "strategy") &&
                                                 Catch::Contains("solo"));
}

TEST_CASE("an unregistered strategy is no longer a config value", "[select][registry]") {
  { const SoloRegistered registered; }
  CHECK_THROWS_WITH(parse_config("parallel:\n  strategy: solo\n", "solo.yaml"),
                    Catch::Contains("solo.yaml:2:13: parallel.strategy: 'solo' is not allowed"));
}

TEST_CASE("the built-in strategy table, in the order auto lists candidates", "[select][registry]") {
  std::vector<std::string> names;
  for (const StrategyEntry* e : strategy_entries()) names.insert(names.end(), e->names.begin(), e->names.end());
  CHECK(names == std::vector<std::string>{"dp", "atom", "sp", "lasp", "flexsp", "pipeline"});
  {
    const SoloRegistered registered;
    CHECK(strategy_entries().back() == &solo_entry());
  }
  CHECK(strategy_entries().back()->names.front() == "pipeline");
}
