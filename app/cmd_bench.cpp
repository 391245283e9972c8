// trident bench gemm|kernels [--backend cpu|cuda]|step|profile|comm|sp [--json], and each strategy family's own
// benchmarks (FlexSP: milp): measurements as a table (or JSON lines).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/bench/bench.h"
#include "app/commands.h"
#include "app/plan/batches.h"
#include "kernels/common/error.h"
#include "kernels/backends.h"
#include "kernels/cpu/blas.h"
#include "parallel/select/registry.h"

namespace trident::app {

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<bench::Options>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure this machine: GEMM roof, kernels, steps, communication");
  cmd->require_subcommand(1);
  cmd->add_flag("--json", options->json, "Print one JSON object per measurement instead of a table");
  cmd->add_option("--repeat", options->min_seconds, "Seconds to time each measurement for (default 0.3)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--blas", options->blas,
                  "The CPU's GEMM library (device.blas: one of the names shown; default: the config's, else "
                  "auto; bench gemm: every library side by side)")
      ->check(CLI::IsMember(cpu::blas_names()));

  CLI::App* gemm = cmd->add_subcommand("gemm", "sgemm GFLOP/s at the model's GEMM shapes (the MFU roof)");
  gemm->fallthrough()->callback([options] { bench::run_gemm(*options); });
  CLI::App* kernels = cmd->add_subcommand(
      "kernels", "Check every kernel (CPU: against its naive reference; CUDA: against the CPU kernel), then time it");
  auto backend = std::make_shared<std::string>("cpu");
  kernels->add_option("--backend", *backend, "Which kernels: cpu (default) or cuda (fp32 and bf16, on the first GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  kernels->fallthrough()->callback([options, backend] {
    if (*backend == "cpu") {
      bench::run_kernels(*options);
      return;
    }
    const BackendStatus cuda = backend_status("cuda");
    if (!cuda.usable) throw RuntimeError("bench kernels --backend cuda: " + cuda.detail);
#if TRIDENT_WITH_CUDA
    bench::run_kernels_cuda(*options);
#endif
  });

  CLI::App* step = cmd->add_subcommand(
      "step", "Time whole training steps: ms/step, tokens/s and MFU (default: GPT-2 small and the quickstart shape)");
  auto step_config = add_config_args(step, /*optional=*/true);
  step->fallthrough()->callback([options, step_config] {
    bench::run_step(*options, step_config->path, step_config->overrides);
  });

  CLI::App* profile = cmd->add_subcommand(
      "profile", "Fit the FlexSP cost model's compute and memory coefficients for CONFIG's model on this machine and "
                 "write them into a cluster profile file (other sections kept)");
  auto profile_config = add_config_args(profile);
  auto profile_out = std::make_shared<std::string>();
  profile->add_option("--out", *profile_out, "Profile file to write (created, or merged into)")->required();
  profile->fallthrough()->callback([options, profile_config, profile_out] {
    bench::run_profile(*options, profile_config->path, profile_config->overrides, *profile_out);
  });

  CLI::App* comm = cmd->add_subcommand(
      "comm", "Under mpirun: send/recv, allreduce, allgather and alltoall latency and bandwidth per group size, on "
              "one node and across nodes");
  auto comm_options = std::make_shared<bench::CommOptions>();
  comm->add_option("--max-bytes", comm_options->max_bytes,
                   "Largest message of the sweep 4 B, 16 B, ... (default 67108864 = 64 MiB; less for slow links)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 30));
  comm->add_option("--profile", comm_options->profile,
                   "Write the cluster profile's network section to FILE (other sections of an existing FILE are "
                   "kept); needs ranks on at least 2 nodes, 2 of them on one node");
  auto comm_config = add_config_args(comm, /*optional=*/true);  // only device.memory_gb, for a new profile
  comm->fallthrough()->callback([options, comm_options, comm_config] {
    if (!comm_config->path.empty()) comm_options->device_memory_gb = comm_config->load().device.memory_gb;
    bench::run_comm(*options, *comm_options);
  });

  CLI::App* sp = cmd->add_subcommand(
      "sp", "Under mpirun: LASP-1, LASP-2, Ulysses and Ring Attention, one attention layer forward + backward per "
            "group size T and length N: ms, tokens/s, bytes sent per rank");
  auto lengths = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{4096, 8192, 16384, 32768, 65536});
  auto max_case_seconds = std::make_shared<double>(2.0);
  auto budget_gib = std::make_shared<double>(0.0);
  sp->add_option("--lengths", *lengths, "Sequence lengths N, comma-separated (default 4096,8192,...,65536)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{INT32_MAX}));  // cu_seqlens are int32
  sp->add_option("--max-case-seconds", *max_case_seconds,
                 "Skip a method's longer lengths once a case (warm-up + 3 calls) is predicted to take longer "
                 "(default 2)")
      ->check(CLI::PositiveNumber);
  sp->add_option("--max-length-budget", *budget_gib,
                 "Instead of timing: the longest N per method and T whose one-layer buffers fit GIB per rank")
      ->check(CLI::PositiveNumber);
  sp->fallthrough()->callback([options, lengths, max_case_seconds, budget_gib] {
    std::vector<int64_t> sorted = *lengths;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    bench::run_sp(*options, sorted, *max_case_seconds, *budget_gib);
  });

  // Each strategy family's benchmarks of its own machinery, given what `trident plan` is given.
  for (const StrategyEntry* family : strategy_entries())
    for (const FamilyBench& family_bench : family->benches) {
      CLI::App* sub = cmd->add_subcommand(family_bench.name, family_bench.help);
      auto config = add_config_args(sub);
      auto cluster = std::make_shared<std::string>();
      auto source = std::make_shared<plan::BatchSource>();
      sub->add_option("--cluster", *cluster, "Cluster profile file (default: the strategy's configured one)");
      add_batch_source_args(sub, *source);
      sub->fallthrough()->callback([options, config, cluster, source, run = family_bench.run] {
        const Config c = config->load();
        run(c, {.profile = *cluster, .json = options->json,
                .batches = [&] { return plan::draw_batches(c, *source); }, .family = family_named});
      });
    }
}

}  // namespace trident::app
