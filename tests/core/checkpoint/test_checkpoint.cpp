#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/checkpoint/checkpoint.h"
#include "kernels/common/error.h"
#include "support/files.h"
#include "support/fixtures.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;
namespace fs = std::filesystem;

namespace {

ModelConfig tiny_model(int64_t n_embd = 16, const std::string& attention = "softmax") {
  ModelConfig m;
  m.n_layer = 2;
  m.n_embd = n_embd;
  m.n_head = 2;
  m.vocab_size = 29;
  m.max_seq_len = 8;
  m.attention = attention;
  m.linear_chunk = 4;
  return m;
}

// A model and optimizer in a state distinguishable by `seed`: weights, both moments and the step count.
struct State {
  Config config;
  GPT model;
  AdamW optimizer;
  State(const ModelConfig& m, uint64_t seed)
      : config(make_config(m)),
        model(m, 8, test_allocator()),
        optimizer(model.layout(), config.train, test_allocator()) {
    model.init_weights(seed);
    auto m_values = test::random_normal(static_cast<std::size_t>(optimizer.size()), seed + 1);
    auto v_values = test::random_uniform(static_cast<std::size_t>(optimizer.size()), seed + 2, 0.0, 1e-3);
    std::memcpy(optimizer.m(), m_values.data(), m_values.size() * sizeof(float));
    std::memcpy(optimizer.v(), v_values.data(), v_values.size() * sizeof(float));
    optimizer.set_steps_taken(static_cast<int64_t>(seed % 1000));
  }
  static Config make_config(const ModelConfig& m) {
    Config c;
    c.model = m;
    c.run.seed = 77;
    return c;
  }
  std::vector<float> params() const { return {model.params(), model.params() + model.num_params()}; }
  std::vector<float> m() { return {optimizer.m(), optimizer.m() + optimizer.size()}; }
  std::vector<float> v() { return {optimizer.v(), optimizer.v() + optimizer.size()}; }
};

SavedCheckpoint save(const fs::path& run, int64_t step, State& s, int64_t keep = 3) {
  return save_checkpoint(run, step, s.model, s.optimizer, s.config, 1, keep);
}

std::vector<std::string> names(const std::vector<fs::path>& dirs) {
  std::vector<std::string> out;
  for (const fs::path& d : dirs) out.push_back(d.filename().string());
  return out;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& a, const std::string& b = "") {
  for (const std::string& line : lines)
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("checkpoint directory names are step_ and 8 zero-padded digits", "[core][checkpoint]") {
  CHECK(checkpoint_dir_name(42) == "step_00000042");
  CHECK(checkpoint_dir_name(123456789) == "step_123456789");
  CHECK(checkpoint_step("step_00000042") == 42);
  CHECK(checkpoint_step("step_123456789") == 123456789);
  for (const char* bad : {"step_42", "step_00000042.tmp", "step_-0000042", "step_000000042", "latest", "step_"})
    CHECK_FALSE(checkpoint_step(bad));
}

TEST_CASE("checkpoint save then load restores weights, moments and step bit-exactly", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_roundtrip");
  State saved(tiny_model(), 11);
  const SavedCheckpoint result = save_checkpoint(run, 5, saved.model, saved.optimizer, saved.config, 2, 3);
  CHECK(result.dir == run / "checkpoints" / "step_00000005");
  CHECK(result.warnings.empty());
  CHECK(fs::exists(result.dir / "model.safetensors"));
  CHECK_FALSE(fs::exists(run / "checkpoints" / "step_00000005.tmp"));
  CHECK(read_file(run / "checkpoints" / "latest") == "step_00000005\n");
  CHECK(latest_checkpoint(run) == result.dir);
  CHECK(verify_checkpoint(result.dir).ok());

  State loaded(tiny_model(), 99);
  REQUIRE(loaded.params() != saved.params());
  const TrainerState state = load_checkpoint(result.dir, loaded.model, loaded.optimizer);
  CHECK(loaded.params() == saved.params());  // float == float: bit-exact (no NaNs here)
  CHECK(loaded.m() == saved.m());
  CHECK(loaded.v() == saved.v());
  CHECK(loaded.optimizer.steps_taken() == 11);
  CHECK(state.step == 5);
  CHECK(state.next_step == 5);
  CHECK(state.seed == 77);
  CHECK(state.world_size == 2);
  CHECK(state.config_yaml == to_yaml(saved.config));
  CHECK(parse_config(state.config_yaml, "checkpoint") == saved.config);
  CHECK(state.created.size() == 20);  // 2024-05-01T12:34:56Z
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    CHECK(state.files.at(file).bytes == fs::file_size(result.dir / file));
    CHECK(state.files.at(file).crc32 == file_crc32(result.dir / file));
  }
  fs::remove_all(run);
}

TEST_CASE("checkpoint latest points at the newest and pruning keeps the newest checkpoint.keep", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_prune");
  State s(tiny_model(), 3);
  for (int64_t step : {10, 20, 30}) save(run, step, s, 2);
  const SavedCheckpoint last = save(run, 40, s, 2);
  CHECK(names(list_checkpoints(run)) == std::vector<std::string>{"step_00000040", "step_00000030"});
  CHECK(read_file(run / "checkpoints" / "latest") == "step_00000040\n");
  CHECK(names(last.removed) == std::vector<std::string>{"step_00000020"});

  SECTION("a damaged checkpoint does not count toward keep") {
    fs::resize_file(run / "checkpoints" / "step_00000040" / "optimizer.safetensors", 100);
    save(run, 50, s, 2);
    CHECK(names(list_checkpoints(run)) == std::vector<std::string>{"step_00000050", "step_00000030"});
  }
  SECTION("checkpoints past the one just written (a run resumed from an earlier one) are kept") {
    save(run, 35, s, 1);
    CHECK(names(list_checkpoints(run)) == std::vector<std::string>{"step_00000040", "step_00000035"});
  }
  SECTION("a checkpoint of the same step is replaced") {
    State other(tiny_model(), 4);
    const SavedCheckpoint again = save(run, 40, other, 2);
    CHECK(any_contains(again.warnings, "replaced", "step_00000040"));
    State loaded(tiny_model(), 5);
    load_checkpoint(again.dir, loaded.model, loaded.optimizer);
    CHECK(loaded.params() == other.params());
    CHECK(names(list_checkpoints(run)) == std::vector<std::string>{"step_00000040", "step_00000030"});
    CHECK_FALSE(fs::exists(run / "checkpoints" / "step_00000040.replaced.tmp"));
  }
  fs::remove_all(run);
}

TEST_CASE("checkpoint save removes stale .tmp directories of interrupted saves", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_stale");
  State s(tiny_model(), 3);
  save(run, 1, s);
  for (const char* stale : {"step_00000002.tmp", "step_00000007.tmp"}) {
    fs::create_directories(run / "checkpoints" / stale);
    std::ofstream(run / "checkpoints" / stale / "model.safetensors") << "half a file";
  }
  std::vector<std::string> warnings;
  CHECK(find_resume_checkpoint(run, [&](const std::string& w) { warnings.push_back(w); }) ==
        run / "checkpoints" / "step_00000001");
  CHECK(any_contains(warnings, "step_00000002.tmp", "interrupted"));
  CHECK(any_contains(warnings, "step_00000007.tmp", "interrupted"));

  save(run, 2, s);
  CHECK_FALSE(fs::exists(run / "checkpoints" / "step_00000002.tmp"));
  CHECK_FALSE(fs::exists(run / "checkpoints" / "step_00000007.tmp"));
  CHECK(verify_checkpoint(run / "checkpoints" / "step_00000002").ok());
  fs::remove_all(run);
}

TEST_CASE("corrupt checkpoints are reported naming the file, and resume falls back to a good one",
          "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_corrupt");
  State s(tiny_model(), 3);
  for (int64_t step : {1, 2, 3}) save(run, step, s, 5);
  const fs::path one = run / "checkpoints" / "step_00000001";
  const fs::path two = run / "checkpoints" / "step_00000002";
  const fs::path three = run / "checkpoints" / "step_00000003";

  {  // flip one bit of a weight
    std::fstream f(three / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-5, std::ios::end);
    char byte = 0;
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    f.seekp(-5, std::ios::end);
    f.write(&byte, 1);
  }
  const CheckpointCheck flipped = verify_checkpoint(three);
  REQUIRE(flipped.problems.size() == 1);
  CHECK_THAT(flipped.problems[0], Catch::Contains("model.safetensors") && Catch::Contains("crc32"));

  fs::resize_file(two / "optimizer.safetensors", fs::file_size(two / "optimizer.safetensors") - 4);
  const CheckpointCheck truncated = verify_checkpoint(two);
  REQUIRE(truncated.problems.size() == 1);
  CHECK_THAT(truncated.problems[0], Catch::Contains("optimizer.safetensors") && Catch::Contains("bytes"));

  std::vector<std::string> warnings;
  CHECK(find_resume_checkpoint(run, [&](const std::string& w) { warnings.push_back(w); }) == one);
  REQUIRE(warnings.size() == 2);
  CHECK_THAT(warnings[0], Catch::Contains("step_00000003") && Catch::Contains("model.safetensors"));
  CHECK_THAT(warnings[1], Catch::Contains("step_00000002") && Catch::Contains("optimizer.safetensors"));

  CHECK_THROWS_WITH(load_checkpoint(three, s.model, s.optimizer),
                    Catch::Contains("corrupt") && Catch::Contains("model.safetensors"));

  SECTION("missing and unreadable files") {
    fs::remove(one / "model.safetensors");
    CHECK(any_contains(verify_checkpoint(one).problems, "model.safetensors: missing"));
    std::ofstream(one / "trainer_state.json") << "{\"format\": 1, \"step\": ";
    CHECK(any_contains(verify_checkpoint(one).problems, "trainer_state.json", "not valid JSON"));
    fs::remove(one / "trainer_state.json");
    CHECK(any_contains(verify_checkpoint(one).problems, "trainer_state.json", "missing"));
    std::vector<std::string> none;
    CHECK_FALSE(find_resume_checkpoint(run, [&](const std::string& w) { none.push_back(w); }));
    CHECK(none.size() == 3);
  }
  SECTION("an edited trainer_state.json") {
    nlohmann::ordered_json state = nlohmann::ordered_json::parse(read_file(one / "trainer_state.json"));
    state["step"] = 3;  // as if it were the newer checkpoint
    std::ofstream(one / "trainer_state.json", std::ios::trunc) << state.dump(2);
    CHECK(any_contains(verify_checkpoint(one).problems, "trainer_state.json", "(edited or corrupt)"));
    state.erase("crc32");  // edited without a checksum: the directory's name still tells
    std::ofstream(one / "trainer_state.json", std::ios::trunc) << state.dump(2);
    CHECK(any_contains(verify_checkpoint(one).problems, "step 3, but the directory is step_00000001"));
    fs::rename(one, run / "checkpoints" / "step_00000009");  // and renamed: the model file tells
    state["step"] = 9;
    state["next_step"] = 9;
    std::ofstream(run / "checkpoints" / "step_00000009" / "trainer_state.json", std::ios::trunc) << state.dump(2);
    CHECK(any_contains(verify_checkpoint(run / "checkpoints" / "step_00000009").problems,
                       "model.safetensors was saved at step 1, but trainer_state.json says step 9"));
  }
  SECTION("a malformed safetensors file") {
    fs::remove(one / "trainer_state.json");  // no recorded crc32 to catch it first
    std::ofstream(one / "model.safetensors", std::ios::trunc) << std::string(16, 'x');
    CHECK(any_contains(verify_checkpoint(one).problems, "model.safetensors", "header length"));
  }
  fs::remove_all(run);
}

TEST_CASE("a strategy's own tensors round-trip through strategy.safetensors, checksummed", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_strategy");
  State s(tiny_model(16), 3);
  CHECK(load_strategy_tensors(save(run, 1, s).dir).empty());  // none kept: no file
  CHECK_FALSE(fs::exists(run / "checkpoints" / "step_00000001" / "strategy.safetensors"));
  const StrategyTensors kept = {{"diloco.outer_momentum", {0.5f, -1.25f, 3.0f}}, {"other", {}}};
  const fs::path dir = save_checkpoint(run, 2, s.model, s.optimizer, s.config, 1, 3, nullptr, kept).dir;
  CHECK(verify_checkpoint(dir).ok());
  CHECK(load_strategy_tensors(dir) == kept);
  std::ofstream(dir / "strategy.safetensors", std::ios::app) << "x";
  CHECK(any_contains(verify_checkpoint(dir).problems, "strategy.safetensors", "bytes"));
  fs::remove_all(run);
}

TEST_CASE("a checkpoint of another model shape is an error naming the tensor", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_shape");
  State narrow(tiny_model(16), 3);
  const fs::path dir = save(run, 1, narrow).dir;
  State wide(tiny_model(24), 3);
  CHECK_THROWS_AS(load_checkpoint(dir, wide.model, wide.optimizer), RuntimeError);
  CHECK_THROWS_WITH(load_checkpoint(dir, wide.model, wide.optimizer),
                    Catch::Contains("another model shape") && Catch::Contains("transformer.wte.weight") &&
                        Catch::Contains("[29, 16]") && Catch::Contains("[29, 24]"));
  State linear(tiny_model(16, "linear"), 3);
  const fs::path linear_dir = save(run, 2, linear).dir;
  CHECK_THROWS_WITH(load_checkpoint(linear_dir, narrow.model, narrow.optimizer),
                    Catch::Contains("transformer.wpe.weight"));
  fs::remove_all(run);
}

TEST_CASE("a run without checkpoints has no checkpoint to resume", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_empty");
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  CHECK_FALSE(find_resume_checkpoint(run, warn));
  CHECK_FALSE(find_resume_checkpoint(run / "no_such_dir", warn));
  fs::create_directories(run / "checkpoints");
  CHECK_FALSE(find_resume_checkpoint(run, warn));
  CHECK(warnings.empty());
  CHECK_FALSE(latest_checkpoint(run));
  CHECK(list_checkpoints(run).empty());
  CHECK_FALSE(verify_checkpoint(run / "nothing").ok());
  std::ofstream(run / "checkpoints" / "latest") << "../../etc\n";
  CHECK_THROWS_WITH(latest_checkpoint(run), Catch::Contains("not a checkpoint directory name"));
  fs::remove_all(run);
}

namespace {

// The linear-attention block before model.linear existed: no feature map, no gate, a per-head output norm.
ModelConfig old_linear_block() {
  ModelConfig m = tiny_model(16, "linear");
  m.linear_qk_activation = "none";
  m.linear_output_gate = false;
  m.linear_output_norm = "head";
  return m;
}

}  // namespace

TEST_CASE("a checkpoint of the old linear block is refused naming the gate it lacks", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_old_linear");
  State old(old_linear_block(), 3);
  const fs::path dir = save(run, 1, old).dir;
  State now(tiny_model(16, "linear"), 3);  // the default block: silu, gated, norm over the hidden dimension
  CHECK_THROWS_AS(load_checkpoint(dir, now.model, now.optimizer), RuntimeError);
  CHECK_THROWS_WITH(load_checkpoint(dir, now.model, now.optimizer),
                    Catch::Contains("no tensor 'transformer.h.0.attn.c_gate.weight'") &&
                        Catch::Contains("model.linear.output_gate"));
  // and the other way round: a gated checkpoint into a model without the gate names the extra tensor
  const fs::path gated = save(run, 2, now).dir;
  CHECK_THROWS_WITH(load_checkpoint(gated, old.model, old.optimizer),
                    Catch::Contains("'transformer.h.0.attn.c_gate.bias' that this model does not have"));
  fs::remove_all(run);
}

TEST_CASE("resuming into a model that computes differently with the same tensors is refused", "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_same_shapes");
  State saved(tiny_model(16, "linear"), 5);
  const fs::path dir = save(run, 1, saved).dir;
  ModelConfig elu = tiny_model(16, "linear");
  elu.linear_qk_activation = "elu1";
  elu.decay_layer_scaling = false;
  State other(elu, 5);
  CHECK_THROWS_AS(load_checkpoint(dir, other.model, other.optimizer), ConfigError);
  CHECK_THROWS_WITH(load_checkpoint(dir, other.model, other.optimizer),
                    Catch::Contains("model.linear.qk_activation: silu in the checkpoint, elu1 now") &&
                        Catch::Contains("model.decay_layer_scaling: true in the checkpoint, false now"));
  ModelConfig heads = tiny_model(16, "linear");
  heads.n_head = 4;  // the same tensors, other heads
  State four(heads, 5);
  CHECK_THROWS_WITH(load_checkpoint(dir, four.model, four.optimizer), Catch::Contains("model.n_head: 2"));
  State same(tiny_model(16, "linear"), 9);
  CHECK_NOTHROW(load_checkpoint(dir, same.model, same.optimizer));
  fs::remove_all(run);
}

TEST_CASE("a checkpoint of the first linear block, written before model.linear existed, is refused",
          "[core][checkpoint]") {
  const fs::path run = temp_dir("ckpt_before_linear_keys");
  State old(old_linear_block(), 3);
  const fs::path dir = save(run, 1, old).dir;
  // Remove the model.linear section from the recorded config, as trainer_state.json had it then.
  nlohmann::json state = nlohmann::json::parse(read_file(dir / "trainer_state.json"));
  std::string yaml = state["config"].get<std::string>();
  const std::size_t begin = yaml.find("  linear:\n");
  REQUIRE(begin != std::string::npos);
  std::size_t end = begin + 10;
  while (end < yaml.size() && yaml.compare(end, 4, "    ") == 0) end = yaml.find('\n', end) + 1;
  yaml.erase(begin, end - begin);
  REQUIRE(yaml.find("qk_activation") == std::string::npos);
  state["config"] = yaml;
  state.erase("crc32");  // nor had it recorded its own crc32 then
  std::ofstream(dir / "trainer_state.json", std::ios::trunc) << state.dump(2);
  // Even a model with the same tensors (no gate) does not resume it: it would silently train another block.
  ModelConfig gateless = tiny_model(16, "linear");
  gateless.linear_output_gate = false;
  State now(gateless, 8);
  CHECK_THROWS_AS(load_checkpoint(dir, now.model, now.optimizer), ConfigError);
  CHECK_THROWS_WITH(load_checkpoint(dir, now.model, now.optimizer),
                    Catch::Contains("Trident's first linear-attention block") && Catch::Contains("ill-conditioned"));
  fs::remove_all(run);
}
