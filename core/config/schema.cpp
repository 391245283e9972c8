// The table of every config key: see schema.h. Keep configs/README.md in step (a test checks every key is there).
#include "core/config/schema.h"

#include <algorithm>
#include <deque>

namespace trident {

namespace {

// The common keys, parallel.strategy without its choices.
const std::vector<Key>& common_keys() {
  using C = Config;
  static const std::vector<Key> keys = {
      {"run.dir", StringField{.member = member(&C::run, &RunConfig::dir), .required = true},
       "output directory: metrics.jsonl, trident.log, config.resolved.yaml, checkpoints/"},
      {"run.name", StringField{.member = member(&C::run, &RunConfig::name), .required = true},
       "run name shown in logs and metrics"},
      {"run.seed", IntField{member(&C::run, &RunConfig::seed), 0}, "seeds weight init and data order"},
      {"run.watchdog_s", FloatField{.member = member(&C::run, &RunConfig::watchdog_s), .min = 0},
       "seconds a step may take (or 10x the longest step so far, when longer) before the watchdog names the ranks "
       "that did not arrive and ends the job with exit 1; 0 = no watchdog (more than one rank, MPI with threads)"},

      {"model.n_layer", IntField{member(&C::model, &ModelConfig::n_layer), 1, 1024}, "transformer blocks"},
      {"model.n_embd", IntField{member(&C::model, &ModelConfig::n_embd), 1, 65536}, "model width (hidden size)"},
      {"model.n_head", IntField{member(&C::model, &ModelConfig::n_head), 1, 4096},
       "attention heads; must divide model.n_embd"},
      {"model.vocab_size", IntField{member(&C::model, &ModelConfig::vocab_size), 2, int64_t{1} << 24},
       "vocabulary size (256 = byte-level)"},
      {"model.max_seq_len", IntField{member(&C::model, &ModelConfig::max_seq_len), 1, 2147483647},
       "longest sequence (document) in tokens"},
      {"model.attention", StringField{member(&C::model, &ModelConfig::attention), {"softmax", "linear", "hybrid"}},
       "attention kind: softmax, causal linear attention (Lightning-style, chunked), or hybrid (model.layers)"},
      {"model.layers", StringField{member(&C::model, &ModelConfig::layers)},
       "hybrid: each layer's attention, a pattern of L (linear) and S (softmax) repeated to model.n_layer (LLLS: a "
       "softmax layer after every three linear ones); its length must divide model.n_layer"},
      {"model.linear_chunk", IntField{member(&C::model, &ModelConfig::linear_chunk), 1, 4096},
       "chunk length of the chunked linear-attention kernel"},
      {"model.decay_layer_scaling", BoolField{member(&C::model, &ModelConfig::decay_layer_scaling)},
       "linear attention: scale each layer's decay slopes by (1 - l/(L-1) + 1e-5), as TransNormerLLM does"},
      {"model.linear.qk_activation",
       StringField{member(&C::model, &ModelConfig::linear_qk_activation), {"silu", "elu1", "none"}},
       "linear attention: feature map applied to q and k (silu as TransNormerLLM, 1 + elu, or none)"},
      {"model.linear.output_gate", BoolField{member(&C::model, &ModelConfig::linear_output_gate)},
       "linear attention: multiply the normalised output by a gate projection of the block input (attn.c_gate)"},

      {"train.steps", IntField{member(&C::train, &TrainConfig::steps), 1}, "optimizer steps"},
      {"train.batch_tokens", IntField{member(&C::train, &TrainConfig::batch_tokens), 1},
       "tokens per global batch (whole documents packed up to this budget)"},
      {"train.micro_batches", IntField{member(&C::train, &TrainConfig::micro_batches), 1},
       "gradient accumulation: pieces each batch is processed in"},
      {"train.lr", FloatField{.member = member(&C::train, &TrainConfig::lr), .min = 0, .min_open = true},
       "peak learning rate, reached after warmup"},
      {"train.min_lr", FloatField{.member = member(&C::train, &TrainConfig::min_lr), .min = 0},
       "learning rate at the end of the decay; must be <= train.lr"},
      {"train.warmup_steps", IntField{member(&C::train, &TrainConfig::warmup_steps), 0},
       "linear warmup steps; must be <= train.steps"},
      {"train.weight_decay", FloatField{.member = member(&C::train, &TrainConfig::weight_decay), .min = 0},
       "AdamW decoupled weight decay"},
      {"train.beta1",
       FloatField{.member = member(&C::train, &TrainConfig::beta1), .min = 0, .max = 1, .max_open = true},
       "AdamW first-moment decay"},
      {"train.beta2",
       FloatField{.member = member(&C::train, &TrainConfig::beta2), .min = 0, .max = 1, .max_open = true},
       "AdamW second-moment decay"},
      {"train.eps", FloatField{.member = member(&C::train, &TrainConfig::eps), .min = 0, .min_open = true},
       "AdamW epsilon"},
      {"train.grad_clip", FloatField{.member = member(&C::train, &TrainConfig::grad_clip), .min = 0},
       "max global gradient norm; 0 disables clipping"},
      {"train.precision", StringField{member(&C::train, &TrainConfig::precision), {"fp32", "bf16"}},
       "compute precision (bf16 keeps fp32 master weights)"},
      {"train.recompute",
       StringField{member(&C::train, &TrainConfig::recompute), {"none", "selective", "full", "auto"}},
       "activation recomputation: none (every layer keeps its saved arrays), selective (the norms' and GELU's outputs "
       "are recomputed in the backward), full (each layer keeps its input and recomputes its forward before its "
       "backward) or auto (the memory of full, each pass recomputing only as many layers as its tokens need)"},
      {"train.eval_every", IntField{member(&C::train, &TrainConfig::eval_every), 0},
       "steps between evaluations on held-out data; 0 disables"},
      {"train.eval_batches", IntField{member(&C::train, &TrainConfig::eval_batches), 1},
       "held-out batches averaged per evaluation"},
      {"train.on_nonfinite", StringField{member(&C::train, &TrainConfig::on_nonfinite), {"stop", "skip"}},
       "a NaN/Inf loss or gradient norm stops the run (naming the step), or skips that step's update"},
      {"train.resume", StringField{.member = member(&C::train, &TrainConfig::resume), .required = true},
       "auto (newest checkpoint in run.dir, if any), never, or a checkpoint directory"},

      {"data.kind", StringField{member(&C::data, &DataConfig::kind), {"text", "tokens", "indexed", "synthetic"}},
       "dataset format"},
      {"data.path", StringField{member(&C::data, &DataConfig::path)},
       "file (text, tokens) or path prefix (indexed: PREFIX.bin + PREFIX.idx); unused by synthetic"},
      {"data.separator", StringField{.member = member(&C::data, &DataConfig::separator), .text = true},
       "text: documents are the non-empty pieces between occurrences of this string; \"\" = one document"},
      {"data.token_dtype", StringField{member(&C::data, &DataConfig::token_dtype), {"uint16", "uint32"}},
       "token width of flat token files"},
      {"data.eot_token", IntField{member(&C::data, &DataConfig::eot_token), -1},
       "flat token files: the id that separates documents (not part of them); -1 = the file is one document"},
      {"data.split",
       FloatField{.member = member(&C::data, &DataConfig::split), .min = 0, .max = 1, .min_open = true},
       "fraction of documents used for training; the rest is held out for eval"},
      {"data.preset",
       StringField{member(&C::data, &DataConfig::preset), {"wikipedia", "commoncrawl", "github"}},
       "synthetic document-length distribution (the FlexSP paper's corpora)"},
      {"data.synthetic_documents", IntField{member(&C::data, &DataConfig::synthetic_documents), 1},
       "number of synthetic documents"},
      {"data.synthetic_max_length", IntField{member(&C::data, &DataConfig::synthetic_max_length), 1},
       "synthetic document lengths are clipped to this many tokens"},
      {"data.synthetic_length_scale",
       FloatField{.member = member(&C::data, &DataConfig::synthetic_length_scale), .min = 0, .max = 1e6,
                  .min_open = true},
       "synthetic lengths drawn from the preset are multiplied by this before rounding and clipping (a scaled "
       "experiment: the preset's documents shrunk by the ratio of this model's context to the testbed's)"},

      {"parallel.strategy", StringField{member(&C::parallel, &ParallelConfig::strategy)},
       "parallel strategy: auto (each step, the cheapest estimated candidate of every registered strategy that can "
       "run the batch) or the name of a registered strategy, which then runs alone (configs/README.md lists them)"},
      {"parallel.select.mode", StringField{member(&C::parallel, &ParallelConfig::select_mode), {"measured", "model"}},
       "auto: measured (measured step times correct each candidate's estimates, and FlexSP's group costs; kept in "
       "checkpoints) or model (the choice and FlexSP's plans are a pure function of the batch and "
       "parallel.select.profile, so a resumed run chooses and plans the same)"},
      {"parallel.select.profile", StringField{member(&C::parallel, &ParallelConfig::select_profile)},
       "cluster profile the strategies' estimates and plans come from (parallel/cost/README.md); \"\" "
       "= measured at start-up and written to RUN_DIR/profile.yaml"},

      {"device.backend", StringField{member(&C::device, &DeviceConfig::backend), {"cpu", "cuda"}},
       "compute backend"},
      {"device.comm", StringField{member(&C::device, &DeviceConfig::comm), {"nccl", "host"}},
       "how ranks exchange the backend's buffers: nccl (cuda: NCCL, one rank a GPU; cpu: MPI directly) or host "
       "(staged through host copies over MPI: any number of ranks on one GPU, for checks rather than speed)"},
      {"device.memory_gb",
       FloatField{.member = member(&C::device, &DeviceConfig::memory_gb), .min = 0, .min_open = true},
       "device memory budget per rank (GiB)"},
      {"device.threads", IntField{member(&C::device, &DeviceConfig::threads), 0, 1024},
       "OpenMP threads per rank; 0 = OMP_NUM_THREADS or all cores (more threads than cores oversubscribe them)"},
      {"device.blas",
       StringField{member(&C::device, &DeviceConfig::blas), {"auto", "openblas-debian", "blis", "openblas", "onednn"}},
       "the CPU's GEMM library (kernels/cpu/blas.h); auto = the first of openblas-debian, onednn, openblas, blis that "
       "loads, computes correct products and runs kernels made for this processor (not a generic fallback)"},
      {"device.gemm_threads", StringField{member(&C::device, &DeviceConfig::gemm_threads), {"tiles", "library"}},
       "how a CPU GEMM uses the threads (kernels/cpu/gemm.h): tiles = tiles fixed by the shape and core count, "
       "taken by OpenMP's threads one at a time (the same bits on any thread count, steady beside other processes); "
       "library = one call on the library's own threads (bits depend on the thread count)"},

      {"checkpoint.every", IntField{member(&C::checkpoint, &CheckpointConfig::every), 0},
       "steps between checkpoints; 0 = only at the end"},
      {"checkpoint.keep", IntField{member(&C::checkpoint, &CheckpointConfig::keep), 1},
       "newest checkpoints kept"},

      {"sample.prompt", StringField{.member = member(&C::sample, &SampleConfig::prompt), .text = true},
       "text the model continues after training (byte-level text data only)"},
      {"sample.tokens", IntField{member(&C::sample, &SampleConfig::tokens), 0}, "tokens to generate; 0 disables"},
      {"sample.temperature", FloatField{.member = member(&C::sample, &SampleConfig::temperature), .min = 0},
       "sampling temperature; 0 = greedy"},
  };
  return keys;
}

// The strategy folders' sections, and the names of strategies registered while the program runs. `generation`
// counts the registrations, so schema() rebuilds its table after one.
struct Registered {
  std::vector<ConfigSection> sections = strategy_config_sections();
  std::deque<std::string> names;  // a deque: the choices' string_views stay valid as names are added
  int generation = 0;
};
Registered& registered() {
  static Registered r;
  return r;
}

std::vector<Key> build_schema() {
  const Registered& r = registered();
  std::vector<Key> keys;
  const std::vector<Key>& common = common_keys();
  auto after_parallel = std::find_if(common.rbegin(), common.rend(),
                                     [](const Key& k) { return k.path.starts_with("parallel."); }).base();
  keys.insert(keys.end(), common.begin(), after_parallel);
  for (const ConfigSection& section : r.sections) keys.insert(keys.end(), section.keys.begin(), section.keys.end());
  keys.insert(keys.end(), after_parallel, common.end());
  std::vector<std::string_view> strategies = {"auto"};
  for (const ConfigSection& section : r.sections)
    strategies.insert(strategies.end(), section.strategies.begin(), section.strategies.end());
  for (const std::string& name : r.names)
    if (std::find(strategies.begin(), strategies.end(), name) == strategies.end()) strategies.push_back(name);
  for (Key& key : keys)
    if (key.path == "parallel.strategy") std::get<StringField>(key.field).choices = strategies;
  return keys;
}

}  // namespace

void check_config_sections(const Config& config, const KeyRelations& relations) {
  for (const ConfigSection& section : registered().sections)
    if (section.check) section.check(config, relations);
}

void register_strategy_names(const std::vector<std::string>& names) {
  Registered& r = registered();
  for (const std::string& name : names)
    if (std::find(r.names.begin(), r.names.end(), name) == r.names.end()) r.names.push_back(name);
  ++r.generation;
}

void unregister_strategy_names(const std::vector<std::string>& names) {
  Registered& r = registered();
  for (const std::string& name : names) std::erase(r.names, name);
  ++r.generation;
}

const std::vector<Key>& schema() {
  static std::vector<Key> keys;
  static int built = -1;
  if (built != registered().generation) {
    keys = build_schema();
    built = registered().generation;
  }
  return keys;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> paths;
  for (const Key& key : schema()) paths.emplace_back(key.path);
  return paths;
}

}  // namespace trident
