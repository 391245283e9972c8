// trident: one binary, subcommands for training, planning, benchmarks and checkpoints.
// Exit codes: 0 success, 2 usage or configuration error, 1 runtime failure. Errors are one line on stderr.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "core/common/passive_wait.h"
#include "kernels/common/error.h"
#include "parallel/comm/communicator.h"
#include "version.h"

int main(int argc, char** argv) {
  trident::wait_passively_unless_told(argv);
  CLI::App app{"Trident: distributed GPT training with LASP, FlexSP and ATOM strategies", "trident"};
  app.set_version_flag("--version", std::string("trident ") + TRIDENT_VERSION + " (backends: " + TRIDENT_BACKENDS +
                                         TRIDENT_MPI_NOTE + ")");
  app.require_subcommand(1);
  trident::app::add_train_command(app);
  trident::app::add_config_command(app);
  trident::app::add_bench_command(app);
  trident::app::add_ckpt_command(app);
  trident::app::add_plan_command(app);
  trident::app::add_like_command(app);

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
