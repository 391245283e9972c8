#pragma once
// Each subcommand registers itself on the root CLI11 app; its callback throws trident::Error on failure.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/plan/batches.h"
#include "core/config/config.h"

namespace trident::app {

// The CONFIG argument and its --set overrides, shared by every subcommand that reads a config.
struct ConfigArgs {
  std::string path;
  std::vector<std::string> overrides;
  Config load() const { return load_config(path, overrides); }
};
// Registers CONFIG (positional; required unless `optional`) and --set on `cmd`.
std::shared_ptr<ConfigArgs> add_config_args(CLI::App* cmd, bool optional = false);
// Registers --lengths, --batch-sequences and --batches on `cmd`: the batches `trident plan` (and a strategy's own
// benchmark) draws (app/plan/batches.h).
void add_batch_source_args(CLI::App* cmd, plan::BatchSource& source);

void add_train_command(CLI::App& app);   // trident train CONFIG [--set k=v]...
void add_config_command(CLI::App& app);  // trident config CONFIG [--set k=v]...: validate and print resolved
void add_bench_command(CLI::App& app);   // trident bench gemm|kernels
void add_ckpt_command(CLI::App& app);    // trident ckpt verify|inspect DIR
void add_plan_command(CLI::App& app);    // trident plan CONFIG [--cluster FILE] [--json] | --replay RUN_DIR
void add_like_command(CLI::App& app);    // trident like TESTBED PROFILE: link rates at the testbed's ratios

}  // namespace trident::app
