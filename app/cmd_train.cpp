// trident train CONFIG [--set key.path=value]...: train the configured model.
#include "app/commands.h"
#include "app/train/train.h"

namespace trident::app {

void add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "Train the model a config describes (outputs go to run.dir)");
  auto args = add_config_args(cmd);
  cmd->callback([args] { run_training(args->load()); });
}

}  // namespace trident::app
