#include "app/train/run_dir.h"

#include <algorithm>
#include <array>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/checkpoint/checkpoint.h"
#include "core/metrics/log.h"
#include "kernels/common/error.h"

namespace trident {

namespace fs = std::filesystem;

namespace {

// Every checkpoint rewrites RUN_DIR/checkpoints/latest by renaming a new file over it, which cannot replace a
// directory (or anything else that is not a file): said before the run starts, not at its first checkpoint.
std::string latest_file_problem(const fs::path& run_dir) {
  const fs::path latest = run_dir / "checkpoints" / "latest";
  std::error_code error;
  const fs::file_status status = fs::symlink_status(latest, error);
  if (status.type() == fs::file_type::not_found || fs::is_regular_file(status)) return "";
  return fmt::format("'{}' is {}, but it must be the file each checkpoint rewrites with the newest checkpoint's name "
                     "(nothing could replace it): move it aside (mv '{}' '{}.aside') and start again",
                     latest.string(), fs::is_directory(status) ? "a directory" : "not a regular file", latest.string(),
                     latest.string());
}

}  // namespace

RunDir open_run_dir(const Config& config, Communicator& ranks) {
  RunDir run{.path = config.run.dir, .lead = ranks.rank() == 0, .lock = std::nullopt};
  std::error_code error;
  fs::create_directories(run.path, error);
  if (error) throw_runtime_error("cannot create run.dir '{}': {}", run.path.string(), error.message());
  std::array<char, 256> holder{};
  std::array<char, 512> latest{};  // what is wrong with checkpoints/latest, said by the lead
  if (run.lead) {
    std::string who;
    run.lock = RunLock::try_acquire(run.path, &who);
    std::copy_n(who.begin(), std::min(who.size(), holder.size() - 1), holder.begin());
    const std::string problem = latest_file_problem(run.path);
    std::copy_n(problem.begin(), std::min(problem.size(), latest.size() - 1), latest.begin());
  }
  if (ranks.size() > 1) {
    ranks.broadcast(holder.data(), holder.size(), CommType::u8, 0);
    ranks.broadcast(latest.data(), latest.size(), CommType::u8, 0);
  }
  if (holder[0] != '\0')
    throw_config_error("run.dir '{}' is in use by another run ({}): wait for it to end, or choose another run.dir",
                       run.path.string(), holder.data());
  if (latest[0] != '\0') throw_config_error("{}", latest.data());
  setup_logging(run.path, ranks.rank());
  return run;
}

std::optional<fs::path> resume_point(const Config& config, const fs::path& run_dir) {
  const std::string& resume = config.train.resume;
  if (resume != "auto" && resume != "never") {
    if (!fs::is_directory(resume))
      throw_config_error("train.resume: checkpoint directory '{}' not found", resume);
    return fs::path(resume);
  }
  std::optional<fs::path> found;
  if (resume == "auto")
    found = find_resume_checkpoint(run_dir, [](const std::string& warning) { spdlog::warn("{}", warning); });
  std::error_code error;
  const bool no_checkpoints = !fs::exists(run_dir / "checkpoints") || fs::is_empty(run_dir / "checkpoints", error);
  if (!found && fs::exists(run_dir / "metrics.jsonl") && !(resume == "auto" && no_checkpoints))
    throw_config_error("run.dir '{}' already holds a run (metrics.jsonl) {}: choose another run.dir "
                       "(--set run.dir=...) or move the old run away",
                       run_dir.string(),
                       resume == "never" ? "and train.resume is never" : "without a usable checkpoint to resume");
  return found;
}

void restart_metrics_aside(const fs::path& run_dir) {
  const fs::path metrics = run_dir / "metrics.jsonl";
  if (!fs::exists(metrics)) return;
  fs::path aside;
  for (int n = 1; fs::exists(aside = run_dir / fmt::format("metrics.jsonl.stopped-{}", n)); ++n) {
  }
  std::error_code error;
  fs::rename(metrics, aside, error);
  if (error)
    throw_runtime_error("cannot move '{}' aside to '{}': {}", metrics.string(), aside.string(), error.message());
  spdlog::warn("run.dir '{}' holds a run that stopped before its first checkpoint: starting again from step 0 "
               "(train.resume: auto); its metrics are kept in {}", run_dir.string(), aside.filename().string());
}

}  // namespace trident
