#pragma once
// Each subcommand registers itself on the root CLI11 app; its callback throws trident::Error on failure.
#include <CLI/CLI.hpp>

namespace trident::app {

void add_train_command(CLI::App& app);   // trident train CONFIG [--set k=v]...
void add_config_command(CLI::App& app);  // trident config CONFIG [--set k=v]...: validate and print resolved
void add_bench_command(CLI::App& app);   // trident bench gemm|kernels

}  // namespace trident::app
