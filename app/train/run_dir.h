#pragma once
// Opening a run: run.dir created and locked for one run at a time, the log set up, and where the run resumes from.
#include <filesystem>
#include <optional>

#include "core/common/run_lock.h"
#include "core/config/config.h"
#include "parallel/comm/communicator.h"

namespace trident {

struct RunDir {
  std::filesystem::path path;
  bool lead = false;             // rank 0: it writes the run's files
  std::optional<RunLock> lock;  // rank 0's, held until the run ends, however it ends
};

// Creates run.dir, takes its lock on rank 0 (every rank learns whether it got it: a ConfigError naming the holder
// when another run has it) and starts the log there (trident.log). Collective over `ranks`.
RunDir open_run_dir(const Config& config, Communicator& ranks);

// The checkpoint to resume from, per train.resume, or nothing for a fresh run. A run directory that already holds
// a run is refused rather than overwritten, unless train.resume is auto and the run stopped before its first
// checkpoint (nothing to resume, nothing a restart could overwrite): it starts again from step 0, and rank 0 keeps
// the stopped run's metrics aside (restart_metrics_aside).
std::optional<std::filesystem::path> resume_point(const Config& config, const std::filesystem::path& run_dir);

// A fresh start in a run directory whose run stopped before its first checkpoint: its metrics.jsonl moves to the
// first free metrics.jsonl.stopped-N, so the new run's steps are not mixed with the old ones and nothing is lost.
void restart_metrics_aside(const std::filesystem::path& run_dir);

}  // namespace trident
