// trident bench gemm|kernels [--json]: measurements printed as a table (or JSON lines).
#include <memory>
#include <string>

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
}

}  // namespace trident::app
