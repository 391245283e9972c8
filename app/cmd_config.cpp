// trident config CONFIG [--set key.path=value]...: validates a config and prints it resolved, every key with its
// value (defaults filled in). Check a config here before submitting a job.
#include <fmt/core.h>

#include "app/commands.h"
#include "core/config/config.h"

namespace trident::app {

std::shared_ptr<ConfigArgs> add_config_args(CLI::App* cmd, bool optional) {
  auto args = std::make_shared<ConfigArgs>();
  CLI::Option* path = cmd->add_option("config", args->path, "YAML experiment config");
  if (!optional) path->required();
  cmd->add_option("--set", args->overrides, "Override a key, e.g. --set model.n_layer=4 (repeatable)")
      ->allow_extra_args(false);
  return args;
}

void add_config_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("config", "Validate a config file and print it resolved (defaults filled in)");
  auto args = add_config_args(cmd);
  cmd->callback([args] { fmt::print("{}", to_yaml(args->load())); });
}

}  // namespace trident::app
