// trident: one binary, subcommands for training, planning, benchmarks and checkpoints.
// Exit codes: 0 success, 2 usage or configuration error, 1 runtime failure. Errors are one line on stderr.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "kernels/common/error.h"
#include "parallel/comm/communicator.h"
#include "version.h"

namespace {

// OpenMP threads wait passively (they sleep at a barrier instead of spinning) unless OMP_WAIT_POLICY says otherwise.
// Measured on 2 cores (GPT-2 small, B=4, T=64): the same step time on an idle machine, and 1.2-1.4x faster with one
// competing busy process, where spinning threads burn the time slices the working ones need (scripts/bench_cpu.sh).
// OpenMP reads the variable once, when it loads before main, so the process runs itself again with it set.
void wait_passively_unless_told(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: then run on with OpenMP's default
}

}  // namespace

int main(int argc, char** argv) {
  wait_passively_unless_told(argv);
  CLI::App app{"Trident: distributed GPT training with LASP, FlexSP and ATOM strategies", "trident"};
  app.set_version_flag("--version", std::string("trident ") + TRIDENT_VERSION + " (backends: " + TRIDENT_BACKENDS + ")");
  app.require_subcommand(1);
  trident::app::add_train_command(app);
  trident::app::add_config_command(app);
  trident::app::add_bench_command(app);
  trident::app::add_ckpt_command(app);
  trident::app::add_plan_command(app);

  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "trident: usage error: %s (see trident --help)\n", e.what());
    return 2;
  } catch (const trident::Error& e) {
    std::fprintf(stderr, "trident: %s: %s\n", e.exit_code() == 2 ? "config error" : "error", e.what());
    trident::abort_job_if_distributed(e.exit_code());  // the other ranks would wait in their next collective
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident: error: %s\n", e.what());
    trident::abort_job_if_distributed(1);
    return 1;
  }
}
