// trident train CONFIG [--set key.path=value]...: train the configured model.
#include <memory>
#include <string>
#include <vector>

#include "app/commands.h"
#include "core/config/config.h"
#include "core/train/trainer.h"

namespace trident::app {

void add_train_command(CLI::App& app) {
  struct Options {
    std::string path;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("train", "Train the model a config describes (outputs go to run.dir)");
  cmd->add_option("config", options->path, "YAML experiment config")->required();
  cmd->add_option("--set", options->overrides, "Override a key, e.g. --set train.steps=10 (repeatable)")
      ->allow_extra_args(false);
  cmd->callback([options] { run_training(load_config(options->path, options->overrides)); });
}

}  // namespace trident::app
