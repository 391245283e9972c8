// trident train CONFIG [--set key.path=value]...: train the configured model.
#include "app/commands.h"
#include "app/train/signals.h"
#include "app/train/train.h"

namespace trident::app {

void add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "Train the model a config describes (outputs go to run.dir)");
  auto args = add_config_args(cmd);
  // The stop handlers first: a SIGTERM while the config loads is a stop request too, and a rank that fails on its
  // config exits with that error's code even when srun is already terminating the job's other tasks.
  cmd->callback([args] {
    install_stop_signal_handlers();
    run_training(args->load());
  });
}

}  // namespace trident::app
