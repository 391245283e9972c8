// Writing checkpoints: build in step_N.tmp/, fsync, rename into place, point `latest` at it, prune.
#include <ctime>
#include <map>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/hf_config.h"
#include "core/checkpoint/model_io.h"
#include "core/checkpoint/safetensors.h"
#include "core/common/atomic_file.h"
#include "core/common/test_delay.h"
#include "kernels/common/error.h"

namespace trident {

namespace fs = std::filesystem;

namespace {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

void remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw_runtime_error("cannot remove '{}': {}", path.string(), ec.message());
}

void rename_dir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw_runtime_error("cannot rename '{}' to '{}': {}", from.string(), to.string(), ec.message());
}

bool is_tmp_dir_name(const std::string& name) {
  return name.starts_with("step_") && name.ends_with(".tmp");
}

// Deletes checkpoints beyond the newest `keep` complete ones of step <= `step`, and stale *.tmp directories.
// Failures become warnings: the new checkpoint is already safe.
void prune(const fs::path& root, int64_t step, int64_t keep, SavedCheckpoint& saved) {
  auto remove = [&](const fs::path& path) {
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec)
      saved.warnings.push_back(fmt::format("cannot remove old checkpoint '{}': {}", path.string(), ec.message()));
    else
      saved.removed.push_back(path);
  };
  int64_t kept = 0;
  for (const fs::path& dir : list_checkpoints(root.parent_path())) {
    const int64_t dir_step = *checkpoint_step(dir.filename().string());
    if (dir_step > step) continue;  // from a run that went on past the checkpoint this one resumed from
    // Only complete checkpoints count toward `keep`, so a damaged one never displaces the last good one.
    if (dir_step == step || (kept < keep && verify_checkpoint(dir, false).ok()))
      ++kept;
    else
      remove(dir);
  }
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec))
    if (is_tmp_dir_name(entry.path().filename().string()) && entry.is_directory(ec)) remove(entry.path());
  if (ec) saved.warnings.push_back(fmt::format("cannot list '{}': {}", root.string(), ec.message()));
  if (!saved.removed.empty()) {
    try {
      fsync_directory(root);
    } catch (const RuntimeError& e) {
      saved.warnings.push_back(e.what());
    }
  }
}

// AdamW's moments of `range` (inside the range `optimizer` owns) and its step count, as the file `path`.
void write_moments(const fs::path& path, const AdamW& optimizer, const FlatRange& range,
                   const std::map<std::string, std::string>& metadata) {
  const FlatRange& owned = optimizer.owned();
  TRIDENT_CHECK(range.offset >= owned.offset && range.offset + range.numel <= owned.offset + owned.numel,
                "moments of [{}, {}) from an optimizer owning [{}, {})", range.offset, range.offset + range.numel,
                owned.offset, owned.offset + owned.numel);
  const int64_t at = range.offset - owned.offset;
  const HostFloats m(optimizer.backend(), optimizer.m() + at, range.numel);
  const HostFloats v(optimizer.backend(), optimizer.v() + at, range.numel);
  const int64_t adam_steps = optimizer.steps_taken();
  write_safetensors(path,
                    {{"m", StDType::F32, {range.numel}, m.data()},
                     {"v", StDType::F32, {range.numel}, v.data()},
                     {"step", StDType::I64, {}, &adam_steps}},
                    metadata);
}

// Fills `dir` with the checkpoint's files (strategy.safetensors only when a strategy keeps state; the optimizer's
// shards already there when given), each written to NAME.tmp, fsynced and renamed (write_file_atomically).
void write_files(const fs::path& dir, int64_t step, const GPT& model, const AdamW& optimizer, const Config& config,
                 int world_size, const nlohmann::json& selector, const StrategyTensors& strategy,
                 const std::vector<OptimizerShard>& shards, bool model_written) {
  if (!model_written) save_model(dir / "model.safetensors", model, {{"trident_step", std::to_string(step)}});
  test_delay("TRIDENT_TEST_CHECKPOINT_DELAY_MS");
  write_file_atomically(dir / "config.json", hf_config(config.model).dump(2) + "\n");
  std::vector<std::string> names = {"model.safetensors", "config.json"};
  if (shards.empty()) {
    write_moments(dir / "optimizer.safetensors", optimizer, optimizer.owned(), {{"format", "trident-adamw"}});
    names.insert(names.begin() + 1, "optimizer.safetensors");
  }
  for (const OptimizerShard& s : shards) names.push_back(s.file);
  if (!strategy.empty()) {
    std::vector<StTensor> tensors;
    for (const auto& [name, values] : strategy)
      tensors.push_back({name, StDType::F32, {static_cast<int64_t>(values.size())}, values.data()});
    write_safetensors(dir / "strategy.safetensors", tensors, {{"format", "trident-strategy"}});
    names.push_back("strategy.safetensors");
  }

  // The crc32 is of the bytes read back from the file, not of the buffers they were written from.
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const std::string& file : names) {
    std::error_code ec;
    const uintmax_t bytes = fs::file_size(dir / file, ec);
    if (ec) throw_runtime_error("cannot stat '{}': {}", (dir / file).string(), ec.message());
    files[file] = {{"bytes", bytes}, {"crc32", file_crc32(dir / file)}};
  }
  // Batches are a pure function of (seed, step), so seed and next_step are the whole data position.
  nlohmann::ordered_json state = {
      {"format", kCheckpointFormat}, {"step", step},     {"next_step", step},
      {"seed", config.run.seed},     {"world_size", world_size}, {"config", to_yaml(config)},
      {"files", files},              {"created", utc_now()},
  };
  if (!selector.is_null()) state["selector"] = selector;
  if (!shards.empty()) {
    nlohmann::ordered_json ranges = nlohmann::ordered_json::array();
    for (const OptimizerShard& s : shards)
      ranges.push_back({{"file", s.file}, {"offset", s.offset}, {"numel", s.numel}});
    state["optimizer_shards"] = ranges;
  }
  state["crc32"] = state_crc32(state);  // last: the crc32 of everything before it
  write_file_atomically(dir / "trainer_state.json", state.dump(2) + "\n");
  fsync_directory(dir);
}

}  // namespace

fs::path checkpoint_build_dir(const fs::path& run_dir, int64_t step) {
  return run_dir / "checkpoints" / (checkpoint_dir_name(step) + ".tmp");
}

fs::path begin_checkpoint(const fs::path& run_dir, int64_t step) {
  const fs::path root = run_dir / "checkpoints";
  const fs::path tmp_dir = checkpoint_build_dir(run_dir, step);
  std::error_code ec;
  // create_directories reports whether it created the last component: then run_dir's entry needs an fsync too.
  const bool new_root = fs::create_directories(root, ec);
  if (ec) throw_runtime_error("cannot create directory '{}': {}", root.string(), ec.message());
  if (new_root) fsync_directory(run_dir);
  remove_tree(tmp_dir);  // left by a save that was interrupted
  if (!fs::create_directory(tmp_dir, ec) || ec)
    throw_runtime_error("cannot create directory '{}': {}", tmp_dir.string(), ec.message());
  return tmp_dir;
}

std::string optimizer_shard_file(int index, int count) {
  return fmt::format("optimizer-{:05d}-of-{:05d}.safetensors", index, count);
}

OptimizerShard write_optimizer_shard(const fs::path& dir, int index, int count, const AdamW& optimizer,
                                     std::optional<FlatRange> range) {
  TRIDENT_CHECK(index >= 0 && index < count, "optimizer shard {} of {}", index, count);
  const FlatRange written = range.value_or(optimizer.owned());
  OptimizerShard shard{optimizer_shard_file(index, count), written.offset, written.numel};
  write_moments(dir / shard.file, optimizer, written,
                {{"format", "trident-adamw-shard"}, {"offset", std::to_string(shard.offset)},
                 {"numel", std::to_string(shard.numel)}});
  return shard;
}

SavedCheckpoint save_checkpoint(const fs::path& run_dir, int64_t step, const GPT& model, const AdamW& optimizer,
                                const Config& config, int world_size, int64_t keep, const nlohmann::json& selector,
                                const StrategyTensors& strategy, const std::vector<OptimizerShard>& shards,
                                bool model_written) {
  TRIDENT_CHECK(!model_written || !shards.empty(), "model.safetensors written by ranges beside a whole optimizer");
  TRIDENT_CHECK(step >= 0 && keep >= 1 && world_size >= 1, "step {}, keep {}, world_size {}", step, keep, world_size);
  int64_t covered = 0;
  for (const OptimizerShard& s : shards) {
    TRIDENT_CHECK(s.offset == covered, "optimizer shard {} starts at {}, not at {}", s.file, s.offset, covered);
    covered += s.numel;
  }
  TRIDENT_CHECK((shards.empty() ? optimizer.size() : covered) == model.num_params(),
                "the optimizer's moments cover {} of {} parameters", shards.empty() ? optimizer.size() : covered,
                model.num_params());
  const fs::path root = run_dir / "checkpoints";
  const std::string name = checkpoint_dir_name(step);
  const fs::path final_dir = root / name;
  // with shards, begin_checkpoint made it and their ranks wrote them there
  const fs::path tmp_dir = shards.empty() ? begin_checkpoint(run_dir, step) : checkpoint_build_dir(run_dir, step);
  std::error_code ec;
  try {
    write_files(tmp_dir, step, model, optimizer, config, world_size, selector, strategy, shards, model_written);
  } catch (...) {
    fs::remove_all(tmp_dir, ec);  // e.g. a full disk: give the space back
    throw;
  }

  // A checkpoint of the same step (left by a run resumed from an earlier one) is moved aside, not deleted first: a
  // crash between the two renames leaves both as *.tmp, and a resume falls back to the checkpoint before.
  SavedCheckpoint saved{final_dir, {}, {}};
  const fs::path replaced = root / (name + ".replaced.tmp");
  const bool replacing = fs::exists(final_dir, ec);
  if (replacing) {
    remove_tree(replaced);
    rename_dir(final_dir, replaced);
    saved.warnings.push_back(fmt::format("replaced the existing checkpoint '{}'", final_dir.string()));
  }
  try {
    rename_dir(tmp_dir, final_dir);
  } catch (...) {
    if (replacing) fs::rename(replaced, final_dir, ec);  // put the old one back
    throw;
  }
  fsync_directory(root);
  write_file_atomically(root / "latest", name + "\n");
  prune(root, step, keep, saved);  // also deletes `replaced`
  return saved;
}

}  // namespace trident
