// Reading checkpoints: trainer_state.json, verification against the recorded sizes and crc32s, finding the newest
// usable checkpoint, loading it.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <string_view>
#include <system_error>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_io.h"
#include "core/checkpoint/safetensors.h"
#include "kernels/common/error.h"

namespace trident {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
// Files a checkpoint holds since a later version: checked where trainer_state.json records them, so checkpoints
// written before them still verify and load.
constexpr const char* kOptionalFiles[] = {"config.json", "strategy.safetensors"};

TrainerState parse_state_file(const fs::path& dir) {
  const fs::path path = dir / "trainer_state.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_runtime_error("trainer_state.json: missing or unreadable");
  const nlohmann::ordered_json j = [&] {
    try {
      return nlohmann::ordered_json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw_runtime_error("trainer_state.json: not valid JSON ({})", e.what());
    }
  }();
  if (!j.is_object()) throw_runtime_error("trainer_state.json: not a JSON object");
  if (const auto crc = j.find("crc32"); crc != j.end()) {  // checkpoints written before it have none
    if (!crc->is_string()) throw_runtime_error("trainer_state.json: 'crc32' is not a string");
    if (const std::string actual = state_crc32(j); actual != crc->get<std::string>())
      throw_runtime_error("trainer_state.json: its contents have crc32 {}, but it records {} (edited or corrupt)",
                          actual, crc->get<std::string>());
  }
  auto integer = [&](const char* key, int64_t min) {
    if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() < min)
      throw_runtime_error("trainer_state.json: '{}' is missing or not an integer >= {}", key, min);
    return j.at(key).get<int64_t>();
  };
  auto string = [&](const char* key) {
    if (!j.contains(key) || !j.at(key).is_string())
      throw_runtime_error("trainer_state.json: '{}' is missing or not a string", key);
    return j.at(key).get<std::string>();
  };
  const int64_t format = integer("format", 1);
  if (format != kCheckpointFormat)
    throw_runtime_error("trainer_state.json: format {} is not the one this trident reads ({}); use a newer trident",
                        format, kCheckpointFormat);
  TrainerState s{integer("step", 0), integer("next_step", 0), integer("seed", std::numeric_limits<int64_t>::min()),
                 integer("world_size", 1), string("config"), string("created"), {}, nullptr, {}};
  if (!j.contains("files") || !j.at("files").is_object())
    throw_runtime_error("trainer_state.json: 'files' is missing or not an object");
  if (const std::optional<int64_t> named = checkpoint_step(dir.filename().string()); named && *named != s.step)
    throw_runtime_error("trainer_state.json: step {}, but the directory is {}", s.step, dir.filename().string());
  const nlohmann::ordered_json& files = j.at("files");
  auto record = [&](const char* name, bool required) {
    const auto f = files.find(name);
    if (f == files.end() && !required) return;
    if (f == files.end() || !f->is_object() || !f->contains("bytes") || !f->at("bytes").is_number_unsigned() ||
        !f->contains("crc32") || !f->at("crc32").is_string())
      throw_runtime_error("trainer_state.json: 'files.{}' is missing or lacks bytes and crc32", name);
    s.files[name] = {f->at("bytes").get<uint64_t>(), f->at("crc32").get<std::string>()};
  };
  record(kModelFile, true);
  if (const auto shards = j.find("optimizer_shards"); shards != j.end()) {
    if (!shards->is_array() || shards->empty())
      throw_runtime_error("trainer_state.json: 'optimizer_shards' is not a non-empty array");
    for (const nlohmann::ordered_json& shard : *shards) {
      const bool valid = shard.is_object() && shard.contains("file") && shard.at("file").is_string() &&
                         shard.contains("offset") && shard.at("offset").is_number_unsigned() &&
                         shard.contains("numel") && shard.at("numel").is_number_unsigned();
      const std::string file = valid ? shard.at("file").get<std::string>() : "";
      if (!valid || !file.starts_with("optimizer-") || !file.ends_with(".safetensors") ||
          file.find('/') != std::string::npos)
        throw_runtime_error("trainer_state.json: an entry of 'optimizer_shards' is not {{\"file\": "
                            "\"optimizer-....safetensors\", \"offset\", \"numel\"}}");
      s.optimizer_shards.push_back({file, shard.at("offset").get<int64_t>(), shard.at("numel").get<int64_t>()});
      record(s.optimizer_shards.back().file.c_str(), true);
    }
  } else {
    record(kOptimizerFile, true);
  }
  for (const char* name : kOptionalFiles) record(name, false);
  if (const auto selector = j.find("selector"); selector != j.end()) s.selector = *selector;
  return s;
}

// Structure beyond what SafetensorsFile checks. The model: F32 tensors; returns their element count.
int64_t check_model_tensors(const SafetensorsFile& model, std::vector<std::string>& problems) {
  int64_t num_params = 0;
  for (const StTensor& t : model.tensors()) {
    if (t.dtype != StDType::F32)
      problems.push_back(
          fmt::format("model.safetensors: tensor '{}' is {}, expected F32", t.name, st_dtype_name(t.dtype)));
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    num_params += n;
  }
  return num_params;
}

// An optimizer file (optimizer.safetensors, or a shard of `numel` values): m and v F32 as long as the model or the
// shard (when known), step an I64 scalar; returns the step (-1 without one).
int64_t check_optimizer_tensors(const std::string& name, const SafetensorsFile& optimizer,
                                std::optional<int64_t> numel, std::vector<std::string>& problems) {
  std::optional<std::vector<int64_t>> m_shape;
  for (const char* moment : {"m", "v"}) {
    if (!optimizer.contains(moment)) {
      problems.push_back(fmt::format("{}: no tensor '{}'", name, moment));
      continue;
    }
    const StTensor& t = optimizer.get(moment);
    const bool fits = t.dtype == StDType::F32 && t.shape.size() == 1 && (!numel || t.shape[0] == *numel) &&
                      (!m_shape || t.shape == *m_shape);
    if (!fits)
      problems.push_back(fmt::format("{}: tensor '{}' is {}[{}], expected F32[N] with N the {} count{}", name, moment,
                                     st_dtype_name(t.dtype), fmt::join(t.shape, ", "),
                                     name == kOptimizerFile ? "model's parameter" : "shard's value",
                                     numel ? fmt::format(" ({})", *numel) : ""));
    m_shape = t.shape;
  }
  const bool has_step = optimizer.contains("step") && optimizer.get("step").dtype == StDType::I64 &&
                        optimizer.get("step").shape.empty();
  if (!has_step) {
    problems.push_back(fmt::format("{}: no I64 scalar tensor 'step'", name));
    return -1;
  }
  int64_t step = 0;
  std::memcpy(&step, optimizer.get("step").data, sizeof step);
  return step;
}

// A sharded optimizer's ranges: in order from 0, each after the last, together the model's parameters (when known).
void check_shard_ranges(const std::vector<OptimizerShard>& shards, std::optional<int64_t> num_params,
                        std::vector<std::string>& problems) {
  int64_t at = 0;
  for (const OptimizerShard& s : shards) {
    if (s.offset != at)
      problems.push_back(fmt::format("trainer_state.json: optimizer shard {} starts at {}, not where the one before "
                                     "ends ({})", s.file, s.offset, at));
    at = s.offset + s.numel;
  }
  if (num_params && at != *num_params)
    problems.push_back(fmt::format("trainer_state.json: the optimizer shards cover {} values, the model has {} "
                                   "parameters", at, *num_params));
}

// A file's presence, its size against `record` (nullptr: nothing recorded to compare with) and, with `read_data`,
// its crc32. False after adding the problem found.
bool check_file(const fs::path& dir, const char* name, const CheckpointFileRecord* record, bool read_data,
                std::vector<std::string>& problems) {
  const fs::path path = dir / name;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    problems.push_back(fmt::format("{}: missing", name));
    return false;
  }
  const uintmax_t bytes = fs::file_size(path, ec);
  if (ec) {
    problems.push_back(fmt::format("{}: unreadable ({})", name, ec.message()));
    return false;
  }
  if (record && bytes != record->bytes) {
    problems.push_back(fmt::format("{}: {} bytes, but trainer_state.json records {} (truncated or overwritten)", name,
                                   bytes, record->bytes));
    return false;
  }
  if (!read_data || !record) return true;
  try {
    const std::string crc = file_crc32(path);
    if (crc == record->crc32) return true;
    problems.push_back(
        fmt::format("{}: crc32 {}, but trainer_state.json records {} (the file is corrupt)", name, crc, record->crc32));
  } catch (const RuntimeError& e) {
    problems.push_back(fmt::format("{}: {}", name, e.what()));
  }
  return false;
}

// The step model.safetensors was saved at (since "trident_step" is in its metadata) against trainer_state.json's.
void check_model_step(const SafetensorsFile& model, const std::optional<TrainerState>& state,
                      std::vector<std::string>& problems) {
  const auto saved = model.metadata().find("trident_step");
  if (!state || saved == model.metadata().end()) return;
  if (saved->second != std::to_string(state->step))
    problems.push_back(fmt::format("model.safetensors was saved at step {}, but trainer_state.json says step {}",
                                   saved->second, state->step));
}

std::string join_problems(const CheckpointCheck& check) { return fmt::format("{}", fmt::join(check.problems, "; ")); }

}  // namespace

std::string checkpoint_dir_name(int64_t step) {
  TRIDENT_CHECK(step >= 0, "negative checkpoint step {}", step);
  return fmt::format("step_{:08d}", step);
}

std::optional<int64_t> checkpoint_step(const std::string& dir_name) {
  if (!dir_name.starts_with("step_")) return std::nullopt;
  const char* begin = dir_name.data() + 5;
  const char* end = dir_name.data() + dir_name.size();
  int64_t step = -1;
  auto [stop, error] = std::from_chars(begin, end, step);
  // Only the exact spelling checkpoint_dir_name produces: no sign, suffix, or extra leading zeros.
  if (error != std::errc() || stop != end || step < 0 || checkpoint_dir_name(step) != dir_name) return std::nullopt;
  return step;
}

std::vector<fs::path> list_checkpoints(const fs::path& run_dir) {
  const fs::path root = run_dir / "checkpoints";
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    std::optional<int64_t> step = checkpoint_step(entry.path().filename().string());
    std::error_code dir_ec;
    if (step && entry.is_directory(dir_ec)) found.emplace_back(*step, entry.path());
  }
  if (ec) throw_runtime_error("cannot list '{}': {}", root.string(), ec.message());
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> dirs;
  for (auto& [step, dir] : found) dirs.push_back(std::move(dir));
  return dirs;
}

std::optional<fs::path> latest_checkpoint(const fs::path& run_dir) {
  const fs::path path = run_dir / "checkpoints" / "latest";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream in(path);
  std::string name;
  if (!in || !std::getline(in, name)) throw_runtime_error("cannot read '{}'", path.string());
  if (!checkpoint_step(name))
    throw_runtime_error("'{}' holds '{}', not a checkpoint directory name like step_00000100", path.string(), name);
  return run_dir / "checkpoints" / name;
}

std::string file_crc32(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_runtime_error("cannot open '{}': {}", path.string(), std::strerror(errno));
  std::vector<char> buffer(std::size_t(1) << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(in.gcount()));
  }
  if (in.bad()) throw_runtime_error("cannot read '{}'", path.string());
  return fmt::format("{:08x}", crc);
}

std::string state_crc32(const nlohmann::ordered_json& state) {
  nlohmann::ordered_json rest = state;
  rest.erase("crc32");
  const std::string text = rest.dump();
  return fmt::format("{:08x}", crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(text.data()),
                                     static_cast<uInt>(text.size())));
}

TrainerState read_trainer_state(const fs::path& dir) {
  try {
    return parse_state_file(dir);
  } catch (const RuntimeError& e) {
    throw_runtime_error("checkpoint '{}': {}", dir.string(), e.what());
  }
}

CheckpointCheck verify_checkpoint(const fs::path& dir, bool read_data) {
  CheckpointCheck check;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    check.problems.push_back(fmt::format("'{}' is not a directory", dir.string()));
    return check;
  }
  std::optional<TrainerState> state;
  try {
    state = parse_state_file(dir);
  } catch (const RuntimeError& e) {
    check.problems.push_back(e.what());
  }
  std::optional<int64_t> num_params;  // from the model file, to check the optimizer's moments against
  const CheckpointFileRecord* model_record = state ? &state->files.at(kModelFile) : nullptr;
  if (check_file(dir, kModelFile, model_record, read_data, check.problems) && read_data) {
    try {
      const SafetensorsFile file(dir / kModelFile, SafetensorsFile::Contents::header);  // the crc32 read the bytes
      num_params = check_model_tensors(file, check.problems);
      check_model_step(file, state, check.problems);
    } catch (const RuntimeError& e) {
      check.problems.push_back(fmt::format("{}: {}", kModelFile, e.what()));
    }
  }
  // The optimizer's files (one, or a shard a range), one in memory at a time: together twice the model's size.
  std::vector<OptimizerShard> files = {{kOptimizerFile, 0, -1}};
  if (state && !state->optimizer_shards.empty()) {
    files = state->optimizer_shards;
    check_shard_ranges(files, num_params, check.problems);
  }
  std::optional<int64_t> first_step;
  for (const OptimizerShard& f : files) {
    const CheckpointFileRecord* record = state ? &state->files.at(f.file) : nullptr;
    if (!check_file(dir, f.file.c_str(), record, read_data, check.problems) || !read_data) continue;
    try {
      const SafetensorsFile file(dir / f.file);
      const int64_t step = check_optimizer_tensors(f.file, file, f.numel >= 0 ? f.numel : num_params, check.problems);
      if (first_step && step != *first_step)
        check.problems.push_back(fmt::format("{}: AdamW step {}, but {} has {}", f.file, step, files[0].file,
                                             *first_step));
      first_step = first_step.value_or(step);
    } catch (const RuntimeError& e) {
      check.problems.push_back(fmt::format("{}: {}", f.file, e.what()));
    }
  }
  if (state)
    for (const char* name : kOptionalFiles)
      if (const auto record = state->files.find(name); record != state->files.end())
        check_file(dir, name, &record->second, read_data, check.problems);
  return check;
}

std::optional<fs::path> find_resume_checkpoint(const fs::path& run_dir, const CheckpointWarning& warn) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir / "checkpoints", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("step_") && name.ends_with(".tmp"))
      warn(fmt::format("ignoring '{}': an interrupted checkpoint save (the next save deletes it)",
                       entry.path().string()));
  }
  for (const fs::path& dir : list_checkpoints(run_dir)) {
    const CheckpointCheck check = verify_checkpoint(dir);
    if (check.ok()) return dir;
    warn(fmt::format("skipping corrupt checkpoint '{}': {}", dir.string(), join_problems(check)));
  }
  return std::nullopt;
}

namespace {

// The run's model keys against those the checkpoint was trained with. Most differences also change a tensor's shape
// and fail to load, but some change only what the weights compute (the head count, the linear block's options, its
// decay slopes): resuming across those would silently train another model.
// The model keys that differ ("model.layers: LS in the checkpoint, SL now"); throws on the old linear block.
std::vector<std::string> model_differences(const fs::path& dir, const std::string& config_yaml,
                                           const ModelConfig& now) {
  const std::string source = (dir / "trainer_state.json").string() + " (config)";
  ModelConfig then;
  bool has_linear_keys = true;
  try {
    then = parse_config(config_yaml, source).model;
    const YAML::Node model = YAML::Load(config_yaml)["model"];
    has_linear_keys = model && model["linear"];
  } catch (const ConfigError& e) {
    throw_runtime_error("checkpoint '{}': cannot read the config it was trained with: {}", dir.string(), e.what());
  } catch (const YAML::Exception& e) {
    throw_runtime_error("checkpoint '{}': cannot read the config it was trained with: {}", dir.string(), e.what());
  }
  // Written before model.linear existed: Trident's first linear block (no feature map, no gate, a per-head norm).
  if (then.attention == "linear" && !has_linear_keys)
    throw_config_error("checkpoint '{}' holds Trident's first linear-attention block (no q/k feature map, no output "
                       "gate, a per-head output norm), which this version does not train: it was ill-conditioned "
                       "(core/model/README.md); start a new run.dir with the current block",
                       dir.string());
  std::vector<std::string> differences;
  auto compare = [&](const char* key, const auto& a, const auto& b) {
    if (a != b) differences.push_back(fmt::format("model.{}: {} in the checkpoint, {} now", key, a, b));
  };
  compare("attention", then.attention, now.attention);
  compare("layers", then.layers, now.layers);
  compare("n_layer", then.n_layer, now.n_layer);
  compare("n_embd", then.n_embd, now.n_embd);
  compare("n_head", then.n_head, now.n_head);
  compare("vocab_size", then.vocab_size, now.vocab_size);
  if (now.any_softmax()) compare("max_seq_len", then.max_seq_len, now.max_seq_len);
  if (now.any_linear() && then.any_linear()) {
    compare("decay_layer_scaling", then.decay_layer_scaling, now.decay_layer_scaling);
    compare("linear.qk_activation", then.linear_qk_activation, now.linear_qk_activation);
    compare("linear.output_gate", then.linear_output_gate, now.linear_output_gate);
  }
  return differences;
}

void check_same_model(const fs::path& dir, const std::string& config_yaml, const ModelConfig& now) {
  const std::vector<std::string> differences = model_differences(dir, config_yaml, now);
  if (!differences.empty())
    throw_config_error("checkpoint '{}' was trained with another model: {}; set these keys as the checkpoint has them "
                       "(its config is in trainer_state.json) or start a new run.dir",
                       dir.string(), fmt::join(differences, "; "));
}

}  // namespace

TrainerState load_checkpoint(const fs::path& dir, GPT& model, AdamW& optimizer, std::vector<float>* owned_weights) {
  const CheckpointCheck check = verify_checkpoint(dir);
  if (!check.ok()) throw_runtime_error("checkpoint '{}' is corrupt: {}", dir.string(), join_problems(check));
  const TrainerState state = read_trainer_state(dir);
  const FlatRange owned = optimizer.owned();
  TRIDENT_CHECK(owned.offset + owned.numel <= model.num_params(), "optimizer owns [{}, {}) of {} parameters",
                owned.offset, owned.offset + owned.numel, model.num_params());
  try {
    if (owned_weights) *owned_weights = load_model_range(dir / kModelFile, model.layout(), owned);
    else load_model(dir / kModelFile, model);
    // The files hold every parameter's moments (written at any rank count and stage, in one file or a file a range):
    // this optimizer takes its own range from those that overlap it.
    std::vector<OptimizerShard> files = state.optimizer_shards;
    if (files.empty()) files = {{kOptimizerFile, 0, model.num_params()}};
    // The step count is in every file (verified equal): from the first one read, or the first one for an optimizer
    // that owns no parameter.
    auto read_steps = [](const SafetensorsFile& file) {
      int64_t steps = 0;
      std::memcpy(&steps, file.get("step", StDType::I64, {}).data, sizeof steps);
      return steps;
    };
    std::optional<int64_t> read;
    for (const OptimizerShard& f : files) {
      const int64_t begin = std::max(f.offset, owned.offset);
      const int64_t end = std::min(f.offset + f.numel, owned.offset + owned.numel);
      if (begin >= end) continue;
      const SafetensorsFile file(dir / f.file);
      read = read_steps(file);
      for (const auto& [name, moments] : {std::pair{"m", optimizer.m()}, std::pair{"v", optimizer.v()}})
        optimizer.backend().upload(moments + (begin - owned.offset),
                                   static_cast<const float*>(file.get(name, StDType::F32, {f.numel}).data) +
                                       (begin - f.offset),
                                   sizeof(float) * static_cast<std::size_t>(end - begin));
    }
    const int64_t steps = read ? *read : read_steps(SafetensorsFile(dir / files.front().file));
    if (steps < 0) throw_runtime_error("optimizer.safetensors: step is {}", steps);
    optimizer.set_steps_taken(steps);
  } catch (const RuntimeError& e) {
    const std::vector<std::string> differences = model_differences(dir, state.config_yaml, model.config());
    const std::string keys =
        differences.empty() ? "" : fmt::format("; its model keys differ: {}", fmt::join(differences, "; "));
    throw_runtime_error("checkpoint '{}' does not fit this model (written for another model shape?): {}{}",
                        dir.string(), e.what(), keys);
  }
  check_same_model(dir, state.config_yaml, model.config());
  return state;
}

StrategyTensors load_strategy_tensors(const fs::path& dir) {
  const fs::path path = dir / "strategy.safetensors";
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  StrategyTensors tensors;
  const SafetensorsFile file(path);
  for (const StTensor& t : file.tensors()) {
    if (t.dtype != StDType::F32 || t.shape.size() != 1)
      throw_runtime_error("'{}': tensor '{}' is not a flat F32 vector", path.string(), t.name);
    std::vector<float>& values = tensors[t.name];
    values.resize(static_cast<std::size_t>(t.shape[0]));
    if (!values.empty()) std::memcpy(values.data(), t.data, values.size() * sizeof(float));
  }
  return tensors;
}

}  // namespace trident
