// Stage 1 under the strategies that take it: each rank's AdamW owns its range of the flat parameters, updates them
// and the ranks all-gather the parameters; every step equals stage 0's bit for bit, and the ranges each rank writes
// into a checkpoint are stage 0's moments, loaded back at any range. Stages 2 and 3 against stage 0: the sums in
// another order, equal to rounding. Each [mpi] case runs as a 1-rank world and under mpirun with 2, 3 and 4 ranks. Checks use
// CHECK, never REQUIRE, so a rank with a wrong result still joins the collectives that follow.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "app/train/step.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_io.h"
#include "parallel/lasp/config.h"
#include "parallel/static_sp/static_sp.h"
#include "core/model/recompute.h"
#include "parallel/zero/config.h"
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

namespace {

// A model whose gradients stage 2 (and weights, stage 3) keeps in the source: its layers run one at a time through
// the runner, over the source holding this rank's range of them (as training places it:
// parallel/placement/recompute.cpp), initialised with `seed`'s weights.
struct ShardedModel {
  ShardedModel(const Config& c, Sharding& sharding, uint64_t seed, const std::string& recompute = "none")
      : model(c.model, 256, test_allocator(), cpu_backend(), Precision::fp32,
              resident_model_memory(c.model, 256, recompute, kept(sharding))),
        source(model, test_allocator(), sharding.device_group(), sharding.ranges(), sharding.across(),
               sharding.shards_weights()),
        runner(model, resident_swapping(c.model, recompute, kept(sharding)), test_allocator()),
        sharding_(sharding) {
    runner.set_source(&source);
    sharding.use_shards(&source);
    if (sharding.shards_weights()) sharding.set_weights(initial_weights(model.layout(), seed, sharding.owned()).data());
    else model.init_weights(seed);
  }
  ~ShardedModel() { sharding_.use_shards(nullptr); }
  static InSource kept(const Sharding& sharding) {
    return sharding.shards_weights() ? InSource::states : InSource::gradients;
  }
  // The whole weights, from the model or (stage 3) from every rank's range.
  std::vector<float> weights() {
    if (!sharding_.shards_weights()) return {model.params(), model.params() + model.num_params()};
    std::vector<float> whole = sharding_.weights_on_group_lead();
    whole.resize(static_cast<std::size_t>(model.num_params()));
    world().broadcast(whole.data(), model.num_params(), CommType::f32, 0);
    return whole;
  }
  GPT model;
  ModelShards source;
  SubModelRunner runner;

 private:
  Sharding& sharding_;
};

bool close_to(const float* a, const float* b, int64_t n, double tolerance) {
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::abs(a[i] - b[i]) > worst) worst = std::abs(a[i] - b[i]), at = i;
  UNSCOPED_INFO("largest difference " << worst << " at " << at << ": " << a[at] << " vs " << b[at]);
  return worst <= tolerance;
}

}  // namespace

TEST_CASE("stages 2 and 3 train every strategy that takes them to stage 0's parameters, gradients reduce-scattered "
          "and (stage 3) weights gathered layer by layer", "[mpi][zero]") {
  struct Layout {
    const char* attention;
    const char* method;
    int degree;
    const char* recompute;
  };
  const int W = world().size();
  for (const int stage : {2, 3})
  for (const Layout& l : {Layout{"softmax", "dp", 1, "none"}, Layout{"linear", "lasp", 2, "none"},
                          Layout{"softmax", "ulysses", W, "selective"}, Layout{"hybrid", "lasp2+ulysses", 2, "full"},
                          Layout{"softmax", "ring", W, "none"}}) {
    if (W % l.degree != 0 || (std::string(l.method).ends_with("ulysses") && 4 % l.degree != 0)) continue;
    Config c = tiny_strategy_config(l.attention, 64);
    lasp_config(c).variant = "lasp2";
    c.train.weight_decay = 0.1;
    c.train.micro_batches = 2;  // two passes reduced apart, summed in the shard
    GPT whole_model(c.model, 256, test_allocator());
    whole_model.init_weights(3);
    Sharding sharding(stage, whole_model.num_params(), every_degree_groups().group(W));
    ShardedModel sharded(c, sharding, 3, l.recompute);
    CHECK(sharded.model.grads() == nullptr);
    CHECK(sharded.model.holds_weights() == (stage == 2));
    AdamW whole_optimizer(whole_model.layout(), c.train, test_allocator());
    AdamW sharded_optimizer(sharded.model.layout(), c.train, test_allocator(), cpu_backend(), sharding.owned());
    StaticSequenceParallel whole_strategy({every_degree_groups(), cpu_backend(), c, 256}, l.method, l.degree);
    StaticSequenceParallel sharded_strategy({.groups = every_degree_groups(), .backend = cpu_backend(), .config = c,
                                             .capacity_tokens = 256, .shards = &sharded.source},
                                            l.method, l.degree);
    INFO(l.attention << " " << whole_strategy.name() << " on " << W << " ranks, stage " << stage << ", recompute "
                     << l.recompute);
    for (int step = 0; step < 4; ++step) {
      // one replica may run more micro-batches than another: the others reduce zeros (and gather) for it
      const Batch b = random_documents({17, 1, 30, 9, 40, 3 + step, 60, 2}, 20 + step);
      const StepStats a = train_step(whole_model, whole_optimizer, whole_strategy, b, 1e-2, c.train);
      const StepStats s = train_step(sharded.model, sharded_optimizer, sharded_strategy, b, 1e-2, c.train, &sharding);
      CHECK(std::abs(a.loss - s.loss) <= 1e-6 * a.loss);
      CHECK(std::abs(a.grad_norm - s.grad_norm) <= 1e-5 * a.grad_norm);
      // an evaluation: forward passes only, as many on every rank of the group
      const Batch e = random_documents({33, 5, 12, 50, 7}, 90 + step);
      const StepSums ea = whole_strategy.evaluate(whole_model, e), es = sharded_strategy.evaluate(sharded.model, e);
      CHECK(std::abs(ea.loss_sum - es.loss_sum) <= 1e-6 * ea.loss_sum);
    }
    // the sums' order differs from stage 0's: AdamW's normalised update turns a last-bit difference in a near-zero
    // gradient into one in its parameter's lr-sized step, so weights are compared absolutely
    CHECK(close_to(whole_model.params(), sharded.weights().data(), whole_model.num_params(), 2e-4));
    const FlatRange mine = sharding.owned();
    CHECK(close_to(whole_optimizer.m() + mine.offset, sharded_optimizer.m(), mine.numel, 1e-6));
  }
}

TEST_CASE("stages 2 and 3: ranks that run fewer passes in a step make the rest's collectives, so every range is the "
          "sum", "[mpi][zero]") {
  const int W = world().size(), rank = world().rank();
  const Config c = tiny_strategy_config("hybrid", 64);
  GPT whole(c.model, 256, test_allocator());
  whole.init_weights(7);
  for (const int stage : {2, 3}) {
  INFO("stage " << stage);
  Sharding sharding(stage, whole.num_params(), every_degree_groups().group(W));
  ShardedModel sharded(c, sharding, 7);
  // rank r runs r training passes (rank 0 none); the step says W - 1
  whole.zero_grads();
  sharded.model.zero_grads();
  sharded.source.begin_step(W - 1);
  for (int k = 0; k < rank; ++k) {
    const Batch b = random_documents({9 + k, 20, 3}, static_cast<uint64_t>(100 * rank + k));
    const TokenBatch view{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
                          b.num_sequences()};
    whole.forward_backward(view, 0.01f);
    sharded.model.forward_backward(view, 0.01f);
  }
  sharded.source.finish_step();
  world().allreduce_sum(whole.grads(), whole.num_params(), CommType::f32);
  const FlatRange mine = sharding.owned();
  INFO(W << " ranks, this one ran " << rank << " passes");
  CHECK(close_to(whole.grads() + mine.offset, sharded.source.grads(), mine.numel, 1e-6));
  // an evaluation where rank r runs r forward passes and skips one in the middle: the losses are the whole model's
  sharded.source.begin_step(W + 1, false);
  for (int k = 0; k <= rank + 1; ++k) {
    if (k == 1) {
      sharded.source.skip_pass();
      continue;
    }
    const Batch b = random_documents({11 + k, 4}, static_cast<uint64_t>(50 * rank + k));
    const TokenBatch view{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
                          b.num_sequences()};
    CHECK(std::abs(whole.forward_loss(view) - sharded.model.forward_loss(view)) <= 1e-5);
  }
  sharded.source.finish_step();
  // a step that runs more passes than it said is refused
  sharded.source.begin_step(0);
  const Batch b = random_documents({5}, 3);
  const TokenBatch view{b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
                        b.num_sequences()};
  if (W == 1) {
    sharded.model.forward_backward(view, 0.01f);
    CHECK_THROWS_WITH(sharded.source.finish_step(), Catch::Contains("ran 1 passes in a step said to have"));
  }
  }
}

TEST_CASE("stages 2 and 3 over groups smaller than the world sum each range across the groups", "[mpi][zero]") {
  const int W = world().size();
  if (W != 4) return;  // two groups of two: parallel.zero.group: node on two nodes of two ranks
  for (const int stage : {2, 3}) {
  INFO("stage " << stage);
  Config c = tiny_strategy_config("softmax", 64);
  zero_config(c).stage = stage;
  c.train.micro_batches = 3;
  GPT whole_model(c.model, 256, test_allocator());
  whole_model.init_weights(5);
  std::unique_ptr<Sharding> sharding = make_sharding(c, 2, every_degree_groups(), whole_model.num_params());
  REQUIRE(sharding->shards_gradients());
  REQUIRE(sharding->across() != nullptr);
  CHECK(sharding->across()->size() == 2);
  ShardedModel sharded(c, *sharding, 5);
  AdamW whole_optimizer(whole_model.layout(), c.train, test_allocator());
  AdamW sharded_optimizer(sharded.model.layout(), c.train, test_allocator(), cpu_backend(), sharding->owned());
  StaticSequenceParallel whole_strategy({every_degree_groups(), cpu_backend(), c, 256}, "dp", 1);
  StaticSequenceParallel sharded_strategy({.groups = every_degree_groups(), .backend = cpu_backend(), .config = c,
                                           .capacity_tokens = 256, .shards = &sharded.source},
                                          "dp", 1);
  for (int step = 0; step < 3; ++step) {
    const Batch b = random_documents({17, 1, 30, 9, 40, 3 + step, 25}, 40 + step);
    const StepStats a = train_step(whole_model, whole_optimizer, whole_strategy, b, 1e-2, c.train);
    const StepStats s = train_step(sharded.model, sharded_optimizer, sharded_strategy, b, 1e-2, c.train,
                                   sharding.get());
    CHECK(std::abs(a.loss - s.loss) <= 1e-6 * a.loss);
    CHECK(std::abs(a.grad_norm - s.grad_norm) <= 1e-5 * a.grad_norm);
  }
  CHECK(close_to(whole_model.params(), sharded.weights().data(), whole_model.num_params(), 2e-4));
  }
}

TEST_CASE("stage 2's model keeps no gradient buffer, stage 3's no weights either, and the source what memory_bytes "
          "says", "[zero]") {
  const Config c = tiny_strategy_config("softmax", 64);
  const int64_t P = model_layout(c.model).num_params;
  for (const Precision precision : {Precision::fp32, Precision::bf16})
  for (const InSource kept : {InSource::gradients, InSource::states})
  for (const char* recompute : {"none", "selective", "full"}) {
    INFO(recompute << (kept == InSource::states ? ", stage 3" : ", stage 2")
                   << (precision == Precision::bf16 ? ", bf16" : ""));
    Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 30});
    GPT model(c.model, 256, allocator, cpu_backend(), precision, resident_model_memory(c.model, 256, recompute, kept));
    SubModelRunner runner(model, resident_swapping(c.model, recompute, kept), allocator);
    CHECK(model.holds_weights() == (kept == InSource::gradients));
    CHECK(static_cast<int64_t>(allocator.in_use()) ==
          resident_memory_bytes(c.model, 256, precision, Device::cpu, recompute, kept));
    const int64_t weights = kept == InSource::states ? (precision == Precision::bf16 ? 6 : 4) * P : 0;
    CHECK(resident_memory_bytes(c.model, 256, precision, Device::cpu, recompute, kept) ==
          resident_memory_bytes(c.model, 256, precision, Device::cpu, recompute, InSource::nothing) - 4 * P - weights);
    const std::size_t before = allocator.in_use();
    const std::vector<FlatRange> ranges = shard_ranges(P, 1);
    ModelShards source(model, allocator, world(), ranges, nullptr, kept == InSource::states);
    CHECK(static_cast<int64_t>(allocator.in_use() - before) ==
          ModelShards::memory_bytes(c.model, P, kept == InSource::states, precision));
  }
}

TEST_CASE("stage 3 draws, reads and writes its range of the weights alone: the whole's slice, every tensor still "
          "checked, the file written by ranges byte for byte save_model's", "[zero]") {
  const Config c = tiny_strategy_config("hybrid", 64);
  GPT model(c.model, 16, test_allocator());
  model.init_weights(9);
  const std::vector<float> whole = initial_weights(model.layout(), 9);
  CHECK(same_bits(whole.data(), model.params(), model.num_params()));
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / fmt::format("trident_zero_range_{}.safetensors", ::getpid());
  save_model(file, model);
  for (const FlatRange& r : shard_ranges(model.num_params(), 3)) {
    INFO("range [" << r.offset << ", " << r.offset + r.numel << ")");
    const std::vector<float> drawn = initial_weights(model.layout(), 9, r);
    CHECK(static_cast<int64_t>(drawn.size()) == r.numel);
    CHECK(same_bits(whole.data() + r.offset, drawn.data(), r.numel));
    const std::vector<float> read = load_model_range(file, model.layout(), r);
    CHECK(same_bits(whole.data() + r.offset, read.data(), r.numel));
  }
  Config other = c;
  other.model.n_layer += 1;  // a file of another shape is refused, whatever the range
  CHECK_THROWS_WITH(load_model_range(file, model_layout(other.model), {0, 16}), Catch::Contains("has no tensor"));
  // the same file written by ranges, the last range first
  const std::filesystem::path ranged = file.string() + ".ranged";
  begin_model_file(ranged, model.layout());
  const std::vector<FlatRange> ranges = shard_ranges(model.num_params(), 3);
  for (auto r = ranges.rbegin(); r != ranges.rend(); ++r) write_model_range(ranged, *r, whole.data() + r->offset);
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  CHECK(bytes(ranged) == bytes(file));
  CHECK_THROWS_WITH(write_model_range(ranged.string() + ".missing", ranges[0], whole.data()),
                    Catch::Contains("cannot open"));
  std::filesystem::remove(file);
  std::filesystem::remove(ranged);
}
