// Stage 1 under the strategies that take it: each rank's AdamW owns its range of the flat parameters, updates them
// and the ranks all-gather the parameters; every step equals stage 0's bit for bit, and the moments gathered for a
// checkpoint are stage 0's. Each [mpi] case runs as a 1-rank world and under mpirun with 2, 3 and 4 ranks. Checks use
// CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "app/train/step.h"
#include "parallel/lasp/config.h"
#include "parallel/static_sp/static_sp.h"
#include "parallel/zero/sharding.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

// The run's groups for every size a test case uses (collective: every rank makes the same ones).
RunGroups& run_groups() {
  static RunGroups groups(world(), {}, [] {
    std::vector<int> degrees;
    for (int d = 1; d <= world().size(); ++d)
      if (world().size() % d == 0) degrees.push_back(d);
    return degrees;
  }());
  return groups;
}

bool same_bits(const float* a, const float* b, int64_t n) {
  return std::equal(a, a + n, b, [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
}

}  // namespace

TEST_CASE("stage 1 trains every strategy that takes it to stage 0's parameters and moments, bit for bit",
          "[mpi][zero]") {
  struct Layout {
    const char* attention;
    const char* method;
    int degree;
  };
  const int W = world().size();
  for (const Layout& l : {Layout{"softmax", "dp", 1}, Layout{"linear", "lasp", 2}, Layout{"softmax", "ulysses", W},
                          Layout{"hybrid", "lasp2+ulysses", 2}, Layout{"softmax", "ring", W}}) {
    if (W % l.degree != 0 || (std::string(l.method).ends_with("ulysses") && 4 % l.degree != 0)) continue;
    Config c = tiny_strategy_config(l.attention, 64);
    lasp_config(c).variant = "lasp2";
    c.train.weight_decay = 0.1;  // both AdamW groups (decayed and not) cross the shard boundaries
    GPT whole_model(c.model, 256, test_allocator()), sharded_model(c.model, 256, test_allocator());
    whole_model.init_weights(3);
    sharded_model.init_weights(3);
    Sharding sharding(1, whole_model.num_params(), run_groups().group(W));
    AdamW whole_optimizer(whole_model.layout(), c.train, test_allocator());
    AdamW sharded_optimizer(sharded_model.layout(), c.train, test_allocator(), cpu_backend(), sharding.owned());
    CHECK(sharded_optimizer.size() == shard_ranges(whole_model.num_params(), W)[world().rank()].numel);
    StaticSequenceParallel strategy({run_groups(), cpu_backend(), c, 256}, l.method, l.degree);
    INFO(l.attention << " " << strategy.name() << " on " << W << " ranks, " << whole_model.num_params()
                     << " parameters");
    for (int step = 0; step < 4; ++step) {
      const Batch b = random_documents({17, 1, 30, 9, 40, 3 + step}, 20 + step);
      const StepStats a = train_step(whole_model, whole_optimizer, strategy, b, 1e-2, c.train);
      const StepStats s = train_step(sharded_model, sharded_optimizer, strategy, b, 1e-2, c.train, &sharding);
      CHECK(a.loss == s.loss);
      CHECK(a.grad_norm == s.grad_norm);
    }
    CHECK(same_bits(whole_model.params(), sharded_model.params(), whole_model.num_params()));
    const FlatRange mine = sharding.owned();
    CHECK(same_bits(whole_optimizer.m() + mine.offset, sharded_optimizer.m(), mine.numel));
    CHECK(same_bits(whole_optimizer.v() + mine.offset, sharded_optimizer.v(), mine.numel));
    // the checkpoint's moments: gathered on the group's rank 0, which is the world's
    CHECK(sharding.holds_lead());
    std::optional<AdamW> gathered;
    if (world().rank() == 0) gathered.emplace(whole_model.layout(), c.train, test_allocator());
    sharding.gather_optimizer(sharded_optimizer, gathered ? &*gathered : nullptr);
    if (gathered) {
      CHECK(gathered->steps_taken() == 4);
      CHECK(same_bits(whole_optimizer.m(), gathered->m(), whole_model.num_params()));
      CHECK(same_bits(whole_optimizer.v(), gathered->v(), whole_model.num_params()));
    }
  }
}
