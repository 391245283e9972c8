// trident config CONFIG [--set key.path=value]...: validates a config and prints it resolved, every key with its
// value (defaults filled in). Check a config here before submitting a job.
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "app/commands.h"
#include "core/config/config.h"

namespace trident::app {

void add_config_command(CLI::App& app) {
  struct Options {
    std::string path;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("config", "Validate a config file and print it resolved (defaults filled in)");
  cmd->add_option("config", options->path, "YAML experiment config")->required();
  cmd->add_option("--set", options->overrides, "Override a key, e.g. --set model.n_layer=4 (repeatable)")
      ->allow_extra_args(false);
  cmd->callback([options] {
    Config config = load_config(options->path, options->overrides);
    fmt::print("{}", to_yaml(config));
  });
}

}  // namespace trident::app
