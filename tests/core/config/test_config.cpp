#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <unistd.h>

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "core/config/config.h"
#include "core/config/schema.h"
#include "support/config_errors.h"
#include "support/files.h"

using namespace trident;
using trident::test::check_config_error;
using trident::test::read_file;
namespace fs = std::filesystem;

namespace {

const fs::path kRepo = fs::path(__FILE__).parent_path() / "../../..";

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("trident_test_config_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

struct BadCase {
  std::string name;
  std::string yaml;  // the file text, read as "bad.yaml"
  std::vector<std::string> overrides;
  std::vector<std::string> fragments;  // each must appear in the error message
};

const std::vector<BadCase> kBadCases = {
    {"unknown key, with a suggestion and the section's keys",
     "model:\n  n_layers: 4\n",
     {},
     {"bad.yaml:2:3: unknown key 'model.n_layers' (did you mean 'model.n_layer'?)",
      "keys in 'model': n_layer, n_embd, n_head"}},
    {"unknown section", "modle:\n  n_layer: 4\n", {},
     {"bad.yaml:1:1: unknown section 'modle' (did you mean 'model'?)", "sections: run, model, train"}},
    {"string for an integer", "model:\n  n_layer: four\n", {},
     {"bad.yaml:2:12: model.n_layer: expected an integer, got 'four'"}},
    {"float for an integer", "train:\n  steps: 3.5\n", {},
     {"bad.yaml:2:10: train.steps: expected an integer, got '3.5'"}},
    {"mapping for a scalar", "model:\n  n_layer: {a: 1}\n", {},
     {"bad.yaml:2:12: model.n_layer: expected an integer, got a mapping"}},
    {"sequence for a string", "run:\n  dir: [a, b]\n", {},
     {"bad.yaml:2:8: run.dir: expected a non-empty string, got a sequence"}},
    {"scalar for a section", "model: 5\n", {},
     {"bad.yaml:1:8: 'model' is a section and expects a mapping of its keys (n_layer, n_embd", "got '5'"}},
    {"no value for an integer", "model:\n  n_layer:\n", {},
     {"bad.yaml:2:3: model.n_layer: expected an integer, got no value"}},
    {"no value for a required string", "run:\n  dir:\n", {},
     {"bad.yaml:2:3: run.dir: expected a non-empty string, got no value"}},
    {"empty required string", "run:\n  name: ''\n", {},
     {"bad.yaml:2:9: run.name: expected a non-empty string, got ''"}},
    {"negative size", "model:\n  n_layer: -1\n", {},
     {"bad.yaml:2:12: model.n_layer: -1 is out of range (allowed: 1 to 1024)"}},
    {"huge width", "model:\n  n_embd: 1000000000000\n", {},
     {"bad.yaml:2:11: model.n_embd: 1000000000000 is out of range (allowed: 1 to 65536)"}},
    {"threads far beyond any machine", "device:\n  threads: 100000\n", {},
     {"device.threads: 100000 is out of range (allowed: 0 to 1024)"}},
    {"zero size", "train:\n  batch_tokens: 0\n", {},
     {"bad.yaml:2:17: train.batch_tokens: 0 is out of range (allowed: >= 1)"}},
    {"integer overflow", "run:\n  seed: 99999999999999999999\n", {},
     {"run.seed: 99999999999999999999 is out of range (allowed: >= 0)"}},
    {"zero learning rate", "train:\n  lr: 0\n", {}, {"bad.yaml:2:7: train.lr: 0 is out of range (allowed: > 0)"}},
    {"beta at its open bound", "train:\n  beta2: 1.0\n", {},
     {"train.beta2: 1.0 is out of range (allowed: 0 <= value < 1)"}},
    {"non-finite float", "train:\n  lr: .nan\n", {}, {"train.lr: expected a finite number, got '.nan'"}},
    {"bad choice", "model:\n  attention: flash\n", {},
     {"bad.yaml:2:14: model.attention: 'flash' is not allowed (allowed: softmax, linear, hybrid)"}},
    {"hybrid without a pattern", "model:\n  attention: hybrid\n", {},
     {"model.layers = \"\" (default): model.attention: hybrid needs a pattern"}},
    {"a pattern for a model of one kind", "model:\n  layers: LLLS\n", {},
     {"model.layers = LLLS (bad.yaml:2:11): a layer pattern is for model.attention: hybrid, but model.attention = "
      "softmax (default)"}},
    {"a pattern with another letter", "model:\n  attention: hybrid\n  layers: LLXS\n", {},
     {"model.layers = LLXS (bad.yaml:3:11): the pattern has only L (linear) and S (softmax) layers, not 'X'"}},
    {"a pattern not dividing the layers", "model:\n  n_layer: 4\n  attention: hybrid\n  layers: LLS\n", {},
     {"model.layers = LLS (bad.yaml:4:11): the pattern is repeated to model.n_layer, so its length 3 must divide "
      "model.n_layer = 4 (bad.yaml:2:12)"}},
    {"a hybrid of one kind", "model:\n  attention: hybrid\n  layers: LL\n", {},
     {"model.layers = LL (bad.yaml:3:11): a hybrid has both kinds of layer (for one kind, set model.attention: "
      "linear)"}},
    {"bad feature map", "model:\n  linear:\n    qk_activation: relu\n", {},
     {"bad.yaml:3:20: model.linear.qk_activation: 'relu' is not allowed (allowed: silu, elu1, none)"}},
    {"the per-head norm is not a key", "", {"model.linear.output_norm=head"},
     {"unknown key 'model.linear.output_norm'"}},
    {"unknown linear key", "", {"model.linear.gate=true"},
     {"unknown key 'model.linear.gate'"}},
    {"heads not dividing the width", "model:\n  n_embd: 100\n  n_head: 3\n", {},
     {"model.n_head = 3 (bad.yaml:3:11) must divide model.n_embd = 100 (bad.yaml:2:11)"}},
    {"min_lr above lr", "train:\n  lr: 0.001\n  min_lr: 0.01\n", {},
     {"train.min_lr = 0.01 (bad.yaml:3:11) must be <= train.lr = 0.001 (bad.yaml:2:7)"}},
    {"warmup longer than training", "train:\n  steps: 5\n", {},
     {"train.warmup_steps = 10 (default) must be <= train.steps = 5 (bad.yaml:2:10)"}},
    {"more micro-batches than tokens", "train:\n  batch_tokens: 2\n  micro_batches: 4\n", {},
     {"train.micro_batches = 4 (bad.yaml:3:18) must be <= train.batch_tokens = 2 (bad.yaml:2:17)"}},
    {"text data without a path", "data:\n  kind: text\n", {},
     {"data.path = \"\" (default) must be non-empty when data.kind = text (bad.yaml:2:9)"}},
    {"a strategy no folder declares", "parallel:\n  strategy: atomm\n", {},
     {"bad.yaml:2:13: parallel.strategy: 'atomm' is not allowed (allowed: auto, "}},
    {"a strategy's section no folder declares", "parallel:\n  atomm:\n    sub_models: 2\n", {},
     {"bad.yaml:2:3: unknown key 'parallel.atomm'"}},
    {"YAML syntax error", "model:\n n_layer: 4\n  n_head: 2\n", {},
     {"bad.yaml:3:9: YAML syntax error: illegal map value"}},
    {"duplicate key", "model:\n  n_layer: 4\n  n_layer: 5\n", {},
     {"bad.yaml:3:3: duplicate key 'model.n_layer' (first given at bad.yaml:2:3)"}},
    {"duplicate section", "run:\n  seed: 1\nrun:\n  seed: 2\n", {},
     {"bad.yaml:3:1: duplicate key 'run' (first given at bad.yaml:1:1)"}},
    {"dotted key in the file", "model.n_layer: 4\n", {},
     {"bad.yaml:1:1: 'model.n_layer' contains '.'; write nested mappings instead"}},
    {"sequence at the top level", "- model\n- train\n", {},
     {"bad.yaml:1:1: the top level must be a mapping of sections (run, model", "got a sequence"}},
    {"scalar at the top level", "hello\n", {}, {"bad.yaml:1:1: the top level must be a mapping", "got 'hello'"}},
    {"--set without '='", "", {"model.n_layer"}, {"--set model.n_layer: expected key.path=value"}},
    {"--set with an empty key", "", {"=4"}, {"--set =4: empty key"}},
    {"--set of an unknown key", "", {"model.n_layers=4"},
     {"--set model.n_layers=4: unknown key 'model.n_layers' (did you mean 'model.n_layer'?)", "keys in 'model'"}},
    {"--set in an unknown section", "", {"foo.bar=1"}, {"--set foo.bar=1: unknown key 'foo.bar'", "sections: run"}},
    {"--set of a section", "", {"model=4"}, {"--set model=4: 'model' is a section, not a key; keys in 'model'"}},
    {"--set out of range", "", {"model.n_layer=0"},
     {"--set model.n_layer=0: model.n_layer: 0 is out of range (allowed: 1 to 1024)"}},
    {"--set of the wrong type", "", {"train.lr=fast"}, {"--set train.lr=fast: train.lr: expected a finite number"}},
    {"--set breaking a relation", "", {"model.n_head=3"},
     {"model.n_head = 3 (--set model.n_head=3) must divide model.n_embd = 256 (default)"}},
};

}  // namespace

TEST_CASE("bad configs are rejected naming the source, line, key and what is allowed", "[core][config]") {
  for (const BadCase& c : kBadCases) {
    INFO("case: " << c.name);
    check_config_error([&] { parse_config(c.yaml, "bad.yaml", c.overrides); }, c.fragments);
  }
}

TEST_CASE("a missing or unreadable config file is a ConfigError", "[core][config]") {
  check_config_error([] { load_config("no/such/config.yaml"); }, {"config file 'no/such/config.yaml' not found"});
  TempDir dir;
  check_config_error([&] { load_config(dir.path); }, {"cannot read config file", "it is a directory"});
  // Refused before reading: a device never ends, a FIFO blocks until someone writes to it, a huge file is no config.
  check_config_error([] { load_config("/dev/zero"); }, {"'/dev/zero'", "not a regular file"});
  const fs::path fifo = dir.path / "fifo.yaml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  check_config_error([&] { load_config(fifo); }, {"fifo.yaml", "not a regular file"});
  const fs::path huge = dir.path / "huge.yaml";
  std::ofstream(huge).close();
  fs::resize_file(huge, 17 << 20);
  check_config_error([&] { load_config(huge); }, {"huge.yaml' is 17825792 bytes, more than the 16777216 bytes"});
}

TEST_CASE("an empty config, comment or section gives the defaults", "[core][config]") {
  CHECK(parse_config("", "empty.yaml") == Config{});
  CHECK(parse_config("# nothing yet\n", "comment.yaml") == Config{});
  CHECK(parse_config("model:\n", "section.yaml") == Config{});
}

TEST_CASE("values are read with YAML scalar rules", "[core][config]") {
  Config c = parse_config("train:\n  lr: 1e-3\n  min_lr: 0\ndata:\n  split: 1\n  path: ~\n", "x.yaml");
  CHECK(c.train.lr == 1e-3);
  CHECK(c.train.min_lr == 0.0);
  CHECK(c.data.split == 1.0);
  CHECK(c.data.path.empty());
}

TEST_CASE("overrides given with --set apply after the file, in order", "[core][config]") {
  Config c = parse_config("model:\n  n_layer: 3\n", "x.yaml",
                          {"model.n_layer=2", "model.n_layer=6", "run.name=sweep-1", "train.lr=0.01"});
  CHECK(c.model.n_layer == 6);
  CHECK(c.run.name == "sweep-1");
  CHECK(c.train.lr == 0.01);
}

TEST_CASE("to_yaml round-trips every key exactly", "[core][config]") {
  Config c;
  c.run.name = "null";           // would read back as YAML null unless quoted
  c.run.dir = "runs/a: b # c";   // would read back as a mapping and a comment unless quoted
  c.model.attention = "linear";
  c.train.lr = 0.1 + 0.2;        // 0.30000000000000004: needs all 17 digits
  c.train.eps = 1e-12;
  c.train.grad_clip = 1.0;
  c.device.memory_gb = 1.5;
  c.train.resume = "runs/old/checkpoints/step_000100";
  std::string yaml = to_yaml(c);
  for (const std::string& key : config_keys())
    CHECK_THAT(yaml, Catch::Contains("  " + key.substr(key.rfind('.') + 1) + ": "));
  CHECK(parse_config(yaml, "resolved.yaml") == c);
  CHECK(parse_config(to_yaml(Config{}), "defaults.yaml") == Config{});
}

TEST_CASE("write_resolved_config writes the file atomically", "[core][config]") {
  TempDir tmp;
  fs::path dir = tmp.path / "runs" / "x";
  Config c;
  c.run.dir = dir.string();
  write_resolved_config(c, dir);
  c.model.n_layer = 7;
  write_resolved_config(c, dir);  // replaces the previous file
  CHECK_FALSE(fs::exists(dir / "config.resolved.yaml.tmp"));
  CHECK(load_config(dir / "config.resolved.yaml") == c);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
}

TEST_CASE("write_resolved_config fails cleanly when the directory cannot be created", "[core][config]") {
  TempDir tmp;
  std::ofstream(tmp.path / "file") << "not a directory\n";
  fs::path dir = tmp.path / "file" / "run";
  try {
    write_resolved_config(Config{}, dir);
    FAIL_CHECK("no RuntimeError was thrown");
  } catch (const RuntimeError& e) {
    CHECK(e.exit_code() == 1);
    CHECK_THAT(e.what(), Catch::Contains("cannot create directory '" + dir.string() + "'"));
  }
}

TEST_CASE("the schema's keys, the strategies' sections included, are unique and configs/README.md documents every "
          "one", "[core][config]") {
  std::vector<std::string> keys = config_keys();
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  std::string readme = read_file(kRepo / "configs/README.md");
  REQUIRE_FALSE(readme.empty());
  for (const std::string& key : keys) CHECK_THAT(readme, Catch::Contains("`" + key + "`"));
}

TEST_CASE("configs/quickstart.yaml is valid", "[core][config]") {
  Config c = load_config(kRepo / "configs/quickstart.yaml");
  CHECK(c.model.n_layer == 4);
  CHECK(c.model.vocab_size == 256);
  CHECK(c.data.kind == "text");
  CHECK(c.run.dir == "runs/quickstart");
}
