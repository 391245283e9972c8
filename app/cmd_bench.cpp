// trident bench gemm|kernels|step|comm [--json]: measurements printed as a table (or JSON lines).
#include <memory>
#include <string>
#include <vector>

#include "app/bench/bench.h"
#include "app/commands.h"

namespace trident::app {

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<bench::Options>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure this machine: GEMM roof, kernels, steps, communication");
  cmd->require_subcommand(1);
  cmd->add_flag("--json", options->json, "Print one JSON object per measurement instead of a table");
  cmd->add_option("--repeat", options->min_seconds, "Seconds to time each measurement for (default 0.3)")
      ->check(CLI::PositiveNumber);

  CLI::App* gemm = cmd->add_subcommand("gemm", "sgemm GFLOP/s at the model's GEMM shapes (the MFU roof)");
  gemm->fallthrough()->callback([options] { bench::run_gemm(*options); });
  CLI::App* kernels = cmd->add_subcommand(
      "kernels", "Check every CPU kernel against its naive reference, then time it (GFLOP/s or GB/s)");
  kernels->fallthrough()->callback([options] { bench::run_kernels(*options); });

  CLI::App* step = cmd->add_subcommand(
      "step", "Time whole training steps: ms/step, tokens/s and MFU (default: GPT-2 small and the quickstart shape)");
  auto step_config = add_config_args(step, /*optional=*/true);
  step->fallthrough()->callback([options, step_config] {
    bench::run_step(*options, step_config->path, step_config->overrides);
  });

  CLI::App* comm = cmd->add_subcommand(
      "comm", "Under mpirun: send/recv, allreduce, allgather and alltoall latency and bandwidth per group size");
  comm->fallthrough()->callback([options] { bench::run_comm(*options); });
}

}  // namespace trident::app
