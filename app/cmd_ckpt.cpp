// trident ckpt verify|inspect DIR: check a checkpoint against its recorded sizes and crc32s, or print what it holds.
// DIR is a checkpoint directory (RUN_DIR/checkpoints/step_XXXXXXXX) or a run directory, which means the checkpoint
// its checkpoints/latest names. Exit codes: 0 OK, 1 corrupt or unreadable, 2 DIR is not a checkpoint at all.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "app/commands.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors.h"
#include "kernels/common/error.h"

namespace trident::app {

namespace {

namespace fs = std::filesystem;

fs::path resolve_checkpoint(const std::string& arg) {
  const fs::path dir(arg);
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw_config_error("'{}' does not exist", arg);
  if (!fs::is_directory(dir, ec))
    throw_config_error("'{}' is not a directory: give a checkpoint directory or a run directory", arg);
  for (const char* file : {"trainer_state.json", "model.safetensors", "optimizer.safetensors"})
    if (fs::exists(dir / file, ec)) return dir;
  if (!fs::is_directory(dir / "checkpoints", ec))
    throw_config_error("'{}' is neither a checkpoint directory (no trainer_state.json, model.safetensors or "
                       "optimizer.safetensors) nor a run directory (no checkpoints/)", arg);
  const std::optional<fs::path> latest = latest_checkpoint(dir);
  if (!latest)
    throw_config_error("run directory '{}' has no checkpoints/latest (no checkpoint was completed); give a "
                       "checkpoints/step_XXXXXXXX directory instead", arg);
  if (!fs::is_directory(*latest, ec))
    throw_runtime_error("'{}' names '{}', which does not exist", (dir / "checkpoints" / "latest").string(),
                        latest->filename().string());
  fmt::print("checkpoints/latest of run '{}' is {}\n", arg, latest->filename().string());
  return *latest;
}

void verify(const std::string& arg) {
  const fs::path dir = resolve_checkpoint(arg);
  const CheckpointCheck check = verify_checkpoint(dir);
  if (check.ok()) {
    fmt::print("OK {}\n", dir.string());
    return;
  }
  fmt::print("CORRUPT {}\n", dir.string());
  for (const std::string& problem : check.problems) fmt::print("  {}\n", problem);
  throw_runtime_error("checkpoint '{}' is corrupt ({} problem{})", dir.string(), check.problems.size(),
                      check.problems.size() == 1 ? "" : "s");
}

// Prints one safetensors file's tensors; returns false (after printing why) if it cannot be read.
bool print_tensors(const fs::path& path) {
  try {
    const SafetensorsFile file(path);
    std::vector<StTensor> tensors = file.tensors();
    // In file order, which for Trident's files is the parameter layout order.
    std::sort(tensors.begin(), tensors.end(), [](const StTensor& a, const StTensor& b) {
      return std::less<const void*>()(a.data, b.data);
    });
    int64_t elements = 0;
    std::size_t width = 0;
    for (const StTensor& t : tensors) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      elements += n;
      width = std::max(width, t.name.size());
    }
    fmt::print("{} ({} tensors, {} elements)\n", path.filename().string(), tensors.size(), elements);
    for (const StTensor& t : tensors)
      fmt::print("  {:<{}}  {:<4}  [{}]\n", t.name, width, st_dtype_name(t.dtype), fmt::join(t.shape, ", "));
    return true;
  } catch (const RuntimeError& e) {
    fmt::print("{}: cannot read: {}\n", path.filename().string(), e.what());
    return false;
  }
}

void inspect(const std::string& arg) {
  const fs::path dir = resolve_checkpoint(arg);
  bool readable = true;
  fmt::print("checkpoint  {}\n", dir.string());
  std::string config;
  std::vector<std::string> optimizer_files;  // optimizer.safetensors, or a sharded optimizer's files
  try {
    const TrainerState state = read_trainer_state(dir);
    for (const OptimizerShard& s : state.optimizer_shards) optimizer_files.push_back(s.file);
    fmt::print("step        {} (next step {})\nworld size  {}\nseed        {}\ncreated     {}\nfiles\n", state.step,
               state.next_step, state.world_size, state.seed, state.created);
    for (const auto& [name, record] : state.files)
      fmt::print("  {:<37} {:>14} bytes  crc32 {}\n", name, record.bytes, record.crc32);
    for (const OptimizerShard& s : state.optimizer_shards)
      fmt::print("  {} holds AdamW's moments of parameters [{}, {})\n", s.file, s.offset, s.offset + s.numel);
    config = state.config_yaml;
  } catch (const RuntimeError& e) {
    fmt::print("{}\n", e.what());
    readable = false;
  }
  readable = print_tensors(dir / "model.safetensors") && readable;
  if (optimizer_files.empty()) optimizer_files = {"optimizer.safetensors"};
  for (const std::string& file : optimizer_files) readable = print_tensors(dir / file) && readable;
  if (!config.empty())  // unindented, so it can be copied out as a config file
    fmt::print("config (resolved YAML)\n{}{}", config, config.ends_with('\n') ? "" : "\n");
  if (!readable)
    throw_runtime_error("checkpoint '{}' is not fully readable; `trident ckpt verify {}` lists every problem",
                        dir.string(), arg);
}

}  // namespace

void add_ckpt_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("ckpt", "Verify or inspect a checkpoint");
  cmd->require_subcommand(1);
  const char* help = "checkpoint directory, or a run directory (uses its checkpoints/latest)";
  CLI::App* verify_cmd =
      cmd->add_subcommand("verify", "Check every file against its recorded size and crc32 (exit 0 OK, 1 corrupt)");
  verify_cmd->add_option("dir", *dir, help)->required();
  verify_cmd->callback([dir] { verify(*dir); });
  CLI::App* inspect_cmd =
      cmd->add_subcommand("inspect", "Print the step, files, every tensor's dtype and shape, and the config");
  inspect_cmd->add_option("dir", *dir, help)->required();
  inspect_cmd->callback([dir] { inspect(*dir); });
}

}  // namespace trident::app
