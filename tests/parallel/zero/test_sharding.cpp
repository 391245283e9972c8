// Stage 1 under the strategies that take it: each rank's AdamW owns its range of the flat parameters, updates them
// and the ranks all-gather the parameters; every step equals stage 0's bit for bit, and the ranges each rank writes
// into a checkpoint are stage 0's moments, loaded back at any range. Each [mpi] case runs as a 1-rank world and under mpirun with 2, 3 and 4 ranks. Checks use
// CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "app/train/step.h"
#include "core/checkpoint/checkpoint.h"
#include "parallel/lasp/config.h"
#include "parallel/static_sp/static_sp.h"
#include "parallel/zero/sharding.h"
#include "support/fixtures.h"
#include "support/strategy_fixtures.h"

using namespace trident;
using namespace trident::test;

namespace {

bool same_bits(const float* a, const float* b, int64_t n) {
  return std::equal(a, a + n, b, [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; });
}

// The checkpoint of a sharded optimizer: each rank writes its own range (the files hold stage 0's moments), the lead
// the rest; it verifies, and loads into an optimizer owning every parameter and into ranges of another group size.
void check_sharded_checkpoint(const Config& c, const GPT& model, const AdamW& whole, const AdamW& sharded,
                              Sharding& sharding) {
  int32_t pid = world().rank() == 0 ? static_cast<int32_t>(::getpid()) : 0;
  world().broadcast(&pid, 1, CommType::i32, 0);  // one run directory for every rank
  const std::filesystem::path run = std::filesystem::temp_directory_path() / fmt::format("trident_zero_{}", pid);
  const std::vector<OptimizerShard> shards = sharding.write_optimizer(run, 4, sharded);
  CHECK(shards.size() == static_cast<std::size_t>(world().size()));
  if (world().rank() == 0) {
    save_checkpoint(run, 4, model, sharded, c, world().size(), 1, nullptr, {}, shards);
    CHECK(verify_checkpoint(run / "checkpoints" / "step_00000004").ok());
  }
  world().barrier();
  const std::filesystem::path dir = run / "checkpoints" / "step_00000004";
  CHECK(read_trainer_state(dir).optimizer_shards == shards);
  GPT loaded(c.model, 256, test_allocator());
  AdamW all(model.layout(), c.train, test_allocator());
  load_checkpoint(dir, loaded, all);
  CHECK(all.steps_taken() == whole.steps_taken());
  CHECK(same_bits(whole.m(), all.m(), model.num_params()));
  CHECK(same_bits(whole.v(), all.v(), model.num_params()));
  const FlatRange other = shard_ranges(model.num_params(), world().size() + 1)[static_cast<std::size_t>(world().rank())];
  AdamW resharded(model.layout(), c.train, test_allocator(), cpu_backend(), other);
  load_checkpoint(dir, loaded, resharded);
  CHECK(same_bits(whole.m() + other.offset, resharded.m(), other.numel));
  CHECK(same_bits(whole.v() + other.offset, resharded.v(), other.numel));
  world().barrier();
  if (world().rank() == 0) std::filesystem::remove_all(run);
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
    Sharding sharding(1, whole_model.num_params(), every_degree_groups().group(W));
    AdamW whole_optimizer(whole_model.layout(), c.train, test_allocator());
    AdamW sharded_optimizer(sharded_model.layout(), c.train, test_allocator(), cpu_backend(), sharding.owned());
    CHECK(sharded_optimizer.size() == shard_ranges(whole_model.num_params(), W)[world().rank()].numel);
    StaticSequenceParallel strategy({every_degree_groups(), cpu_backend(), c, 256}, l.method, l.degree);
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
    if (W > 1) check_sharded_checkpoint(c, sharded_model, whole_optimizer, sharded_optimizer, sharding);
  }
}
