#pragma once
// Training checkpoints: RUN_DIR/checkpoints/step_XXXXXXXX/ (XXXXXXXX = optimizer steps completed, zero-padded to 8
// digits) holding
//   model.safetensors      the weights under their Hugging Face GPT-2 names (core/checkpoint/model_io.h)
//   config.json            the model for Hugging Face transformers (core/checkpoint/hf_config.h): with softmax
//                          attention the directory opens with GPT2LMHeadModel.from_pretrained
//   optimizer.safetensors  AdamW moments "m" and "v" (F32, flat, num_params long) and "step" (I64 scalar); or, when
//                          the optimizer state is sharded (parallel.zero), one file a range instead,
//                          optimizer-IIIII-of-CCCCC.safetensors, each with the "m" and "v" of its range and "step",
//                          written by the rank that owns the range
//   strategy.safetensors   state a strategy keeps beyond the model and AdamW (F32 tensors it names: DiLoCo's outer
//                          momentum), when it has any
//   trainer_state.json     {"format": 1, "step", "next_step", "seed", "world_size", "config" (resolved YAML),
//                           "files": {name: {"bytes", "crc32"}}, "created" (UTC ISO 8601), and "selector" (the
//                           strategy selector's corrections and the strategies' own JSON state, FlexSP's corrections,
//                           opaque here: parallel/select/selector.h) when given, "optimizer_shards" ([{"file",
//                           "offset", "numel"}], the ranges in order, covering every parameter) when sharded, "crc32"
//                           (of the compact JSON of every other key, in order: state_crc32)}
// and RUN_DIR/checkpoints/latest, one line naming the newest directory written.
//
// A checkpoint is built in step_XXXXXXXX.tmp/, every file fsynced, then the directory is renamed into place, so a
// directory with a final name is complete; a crash leaves at worst a *.tmp directory that the next save removes.
// The crc32 of every file is recorded, so bit rot and truncation are caught before a resume trusts the bytes; the
// step is cross-checked against the directory name and model.safetensors' "trident_step" metadata, so an edited
// trainer_state.json cannot resume at another step with other weights.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checkpoint/strategy_tensors.h"
#include "core/config/config.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"

namespace trident {

inline constexpr int kCheckpointFormat = 1;

struct CheckpointFileRecord {
  uint64_t bytes = 0;
  std::string crc32;  // 8 lowercase hex digits
};

// One range of AdamW's moments in a file of its own (a sharded optimizer's: parallel.zero).
struct OptimizerShard {
  std::string file;  // optimizer-IIIII-of-CCCCC.safetensors
  int64_t offset = 0;
  int64_t numel = 0;
  bool operator==(const OptimizerShard&) const = default;
};

// What trainer_state.json records.
struct TrainerState {
  int64_t step = 0;       // optimizer steps completed
  int64_t next_step = 0;  // the loop index a resumed run starts at
  int64_t seed = 0;
  int64_t world_size = 1;
  std::string config_yaml;  // the resolved config of the run that wrote it (to_yaml)
  std::string created;      // UTC, e.g. 2024-05-01T12:34:56Z
  // model.safetensors, optimizer.safetensors, and config.json where recorded (checkpoints before it had none)
  std::map<std::string, CheckpointFileRecord> files;
  nlohmann::json selector;  // null when the checkpoint has none
  std::vector<OptimizerShard> optimizer_shards;  // empty: the whole state in optimizer.safetensors
};

struct SavedCheckpoint {
  std::filesystem::path dir;                   // the new checkpoint
  std::vector<std::filesystem::path> removed;  // pruned checkpoints and stale *.tmp directories (log them)
  std::vector<std::string> warnings;           // pruning failures: the checkpoint itself is safe
};

// Writes RUN_DIR/checkpoints/step_XXXXXXXX/ as described above, points `latest` at it, then prunes: among the
// checkpoints of step <= `step`, the newest `keep` complete ones stay and the rest are deleted, as are stale *.tmp
// directories. Checkpoints of a later step (left by a run resumed from an older checkpoint) are never deleted. A
// checkpoint of the same step is replaced. Throws RuntimeError naming the path on an I/O failure (the partial
// *.tmp directory is removed; earlier checkpoints are untouched). Call it on one rank: it owns checkpoints/.
//
// Test hook: if the environment variable TRIDENT_TEST_CHECKPOINT_DELAY_MS is set, sleeps that many milliseconds
// after writing model.safetensors, so a test can kill the process in the middle of a save.
// `strategy`: the tensors of strategy.safetensors (none: no file). `shards`: the sharded optimizer's ranges, which
// their ranks wrote into begin_checkpoint's directory (write_optimizer_shard), in order, covering every parameter;
// then no optimizer.safetensors is written and `optimizer` gives nothing but its step count. `model_written`: the
// ranks wrote model.safetensors into that directory by ranges (begin_model_file, parallel.zero.stage 3), and `model`
// gives nothing but its shape.
SavedCheckpoint save_checkpoint(const std::filesystem::path& run_dir, int64_t step, const GPT& model,
                                const AdamW& optimizer, const Config& config, int world_size, int64_t keep,
                                const nlohmann::json& selector = nullptr, const StrategyTensors& strategy = {},
                                const std::vector<OptimizerShard>& shards = {}, bool model_written = false);

// The directory the checkpoint of `step` is built in, RUN_DIR/checkpoints/step_XXXXXXXX.tmp/, made empty (what an
// interrupted save left there is removed): on the rank that owns checkpoints/, before the ranks of a sharded optimizer
// write their ranges into it. A RuntimeError naming the path on an I/O failure.
std::filesystem::path begin_checkpoint(const std::filesystem::path& run_dir, int64_t step);
// That directory's path (begin_checkpoint's result), made or not.
std::filesystem::path checkpoint_build_dir(const std::filesystem::path& run_dir, int64_t step);
// Shard `index` of `count`: the moments of the range `optimizer` owns (or of `range`, inside it) and its step count,
// written into `dir` as optimizer-IIIII-of-CCCCC.safetensors (to a temporary name, fsynced, renamed). Its record.
OptimizerShard write_optimizer_shard(const std::filesystem::path& dir, int index, int count, const AdamW& optimizer,
                                     std::optional<FlatRange> range = std::nullopt);
// "optimizer-00002-of-00004.safetensors": shard `index` of `count`.
std::string optimizer_shard_file(int index, int count);

// Every problem found in a checkpoint directory: a missing file, a size or crc32 mismatch (naming the file), an
// unreadable trainer_state.json, a malformed safetensors file. Never throws for a corrupt checkpoint. With
// `read_data` false only trainer_state.json is read and the other files' sizes compared (cheap: pruning uses it).
struct CheckpointCheck {
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};
CheckpointCheck verify_checkpoint(const std::filesystem::path& dir, bool read_data = true);

// The newest checkpoint under RUN_DIR/checkpoints/ that verifies, found by scanning every step_* directory (not
// trusting `latest`, which may name a corrupt one). Each corrupt or interrupted checkpoint passed over is reported
// through `warn` with its path and problems. Nothing when the run has no usable checkpoint.
using CheckpointWarning = std::function<void(const std::string&)>;
std::optional<std::filesystem::path> find_resume_checkpoint(const std::filesystem::path& run_dir,
                                                            const CheckpointWarning& warn);

// Verifies `dir`, then loads the weights into `model` and the moments of the range `optimizer` owns (all, or a shard's:
// parallel.zero.stage) and the step count into `optimizer`; with `owned_weights` (a model that holds no weights:
// parallel.zero.stage 3), the weights of that range into it, on the host, instead. A corrupt checkpoint, or one
// written for another model shape, is a RuntimeError naming the problem or the tensor; after an error the contents of
// `model` and `optimizer` are unspecified.
TrainerState load_checkpoint(const std::filesystem::path& dir, GPT& model, AdamW& optimizer,
                             std::vector<float>* owned_weights = nullptr);
// The tensors of a checkpoint's strategy.safetensors (verified by load_checkpoint); none when it has no such file.
StrategyTensors load_strategy_tensors(const std::filesystem::path& dir);

// Building blocks (also used by `trident ckpt`).

// The crc32 trainer_state.json records of itself: of `state`'s compact JSON without its "crc32" key (8 hex digits).
std::string state_crc32(const nlohmann::ordered_json& state);

// trainer_state.json of `dir`; a RuntimeError naming the file and field if missing or malformed.
TrainerState read_trainer_state(const std::filesystem::path& dir);
// "step_00000042"; the step of such a name, or nothing for any other name (including *.tmp).
std::string checkpoint_dir_name(int64_t step);
std::optional<int64_t> checkpoint_step(const std::string& dir_name);
// The complete-by-name checkpoint directories under RUN_DIR/checkpoints/, newest (highest step) first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& run_dir);
// The directory RUN_DIR/checkpoints/latest names, or nothing if there is no `latest`; a RuntimeError if `latest`
// does not hold a checkpoint directory name.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& run_dir);
// zlib crc32 of a whole file as 8 lowercase hex digits; a RuntimeError if it cannot be read.
std::string file_crc32(const std::filesystem::path& path);

}  // namespace trident
