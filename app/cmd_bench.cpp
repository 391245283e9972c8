// trident bench gemm|kernels [--json]: measurements printed as a table (or JSON lines).
#include <memory>
#include <string>
#include <vector>

#include "app/bench/bench.h"
#include "app/commands.h"

namespace trident::app {

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<bench::Options>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure this machine: GEMM roof, kernels");
  cmd->require_subcommand(1);
  cmd->add_flag("--json", options->json, "Print one JSON object per measurement instead of a table");
  cmd->add_option("--repeat", options->min_seconds, "Seconds to time each measurement for (default 0.3)")
      ->check(CLI::PositiveNumber);

  CLI::App* gemm = cmd->add_subcommand("gemm", "sgemm GFLOP/s at the model's GEMM shapes (the MFU roof)");
  gemm->fallthrough()->callback([options] { bench::run_gemm(*options); });
  CLI::App* kernels = cmd->add_subcommand(
      "kernels", "Check every CPU kernel against its naive reference, then time it (GFLOP/s or GB/s)");
  kernels->fallthrough()->callback([options] { bench::run_kernels(*options); });

  auto step_config = std::make_shared<std::string>();
  auto step_overrides = std::make_shared<std::vector<std::string>>();
  CLI::App* step = cmd->add_subcommand(
      "step", "Time whole training steps: ms/step, tokens/s and MFU (default: GPT-2 small and the quickstart shape)");
  step->add_option("config", *step_config, "YAML config whose model and batch to time");
  step->add_option("--set", *step_overrides, "Override a config key (repeatable)")->allow_extra_args(false);
  step->fallthrough()->callback([options, step_config, step_overrides] {
    bench::run_step(*options, *step_config, *step_overrides);
  });
}

}  // namespace trident::app
