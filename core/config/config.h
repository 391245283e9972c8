#pragma once
// The experiment configuration: typed sections mirroring the YAML file (configs/README.md documents every key).
// load_config() reads a YAML file, applies `--set key.path=value` overrides, and validates everything up front:
// an unknown key, a wrong type or an out-of-range value is a ConfigError naming the file, line, key and what is
// allowed.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config/sections.h"

namespace trident {

struct RunConfig {
  std::string dir = "runs/default";  // metrics.jsonl, trident.log, config.resolved.yaml, checkpoints/
  std::string name = "trident";
  int64_t seed = 1234;
  double watchdog_s = 300;  // a step not completed within this long (or 10x the longest step) ends the job; 0 = off

  bool operator==(const RunConfig&) const = default;
};

struct ModelConfig {
  int64_t n_layer = 4;
  int64_t n_embd = 256;
  int64_t n_head = 8;
  int64_t vocab_size = 256;
  int64_t max_seq_len = 256;
  std::string attention = "softmax";  // softmax | linear | hybrid
  // hybrid: each layer's attention, a pattern of L (linear) and S (softmax) repeated to n_layer ("LLLS": three
  // linear layers, then a softmax one). Empty otherwise.
  std::string layers;
  int64_t linear_chunk = 64;          // chunk length of the chunked linear-attention kernel
  bool decay_layer_scaling = true;    // TNL per-layer decay factor s * (1 - l/(L-1) + 1e-5)
  // model.linear.*: the TransNormerLLM linear-attention block (core/model/README.md)
  std::string linear_qk_activation = "silu";  // feature map of q and k: silu | elu1 | none
  bool linear_output_gate = true;             // attention output times a gate projection (attn.c_gate)
  // The attention output's RMSNorm over: hidden (all heads). Not a config key: "head" (per head) is the norm of
  // Trident's first linear block, ill-conditioned (core/model/README.md); the tests build it to show that.
  std::string linear_output_norm = "hidden";

  // Layer l runs linear attention (else softmax attention); how many layers do.
  bool linear_layer(int64_t l) const;
  int64_t linear_layers() const;
  // Some layer runs linear attention (the model has the linear block's options), or softmax attention (the model has
  // learned positions, wpe).
  bool any_linear() const;
  bool any_softmax() const;

  bool operator==(const ModelConfig&) const = default;
};

struct TrainConfig {
  int64_t steps = 100;
  int64_t batch_tokens = 4096;  // tokens per global batch (whole documents packed up to this budget)
  int64_t micro_batches = 1;    // gradient accumulation: the batch is processed in this many pieces
  double lr = 3e-4;
  double min_lr = 3e-5;
  int64_t warmup_steps = 10;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  // max global gradient norm; 0 disables clipping
  std::string precision = "fp32";  // fp32 | bf16
  std::string recompute = "none";  // none | selective | full | auto: activation recomputation (core/model/recompute.h)
  int64_t eval_every = 0;  // 0 disables evaluation
  int64_t eval_batches = 4;  // held-out batches averaged per evaluation
  std::string on_nonfinite = "stop";  // stop | skip: what a NaN/Inf loss or gradient norm does
  std::string resume = "auto";  // auto | never | path of a checkpoint directory

  bool operator==(const TrainConfig&) const = default;
};

struct DataConfig {
  std::string kind = "synthetic";  // text | tokens | indexed | synthetic
  std::string path;                // file (text, tokens) or path prefix (indexed: PREFIX.bin + PREFIX.idx)
  std::string separator = "\n\n";      // text: documents are the non-empty pieces between occurrences
  std::string token_dtype = "uint16";  // uint16 | uint32 (flat token files)
  int64_t eot_token = -1;              // flat token files: the id between documents; -1 = one document
  double split = 0.95;                 // fraction of documents used for training; the rest is held out for eval
  std::string preset = "wikipedia";    // synthetic length distribution: wikipedia | commoncrawl | github
  int64_t synthetic_documents = 10000;    // synthetic corpus size
  int64_t synthetic_max_length = 131072;  // synthetic documents are clipped to this many tokens
  double synthetic_length_scale = 1;      // synthetic lengths are multiplied by this before rounding and clipping

  bool operator==(const DataConfig&) const = default;
};

// The keys every strategy shares, and each strategy's own section, declared in its folder (core/config/sections.h).
struct ParallelConfig {
  std::string strategy = "auto";         // auto, or a registered strategy (parallel/select/registry.cpp)
  std::string select_mode = "measured";  // parallel.select.mode: measured | model (auto's corrections)
  std::string select_profile;            // parallel.select.profile: cluster profile file; "" = measure at start-up
  ConfigSections sections;               // parallel.<name>.*

  bool operator==(const ParallelConfig&) const = default;
};

struct DeviceConfig {
  std::string backend = "cpu";  // cpu | cuda
  std::string comm = "nccl";    // cuda: nccl | host (device buffers staged through host memory over MPI)
  double memory_gb = 8.0;       // device memory budget per rank (GiB)
  int64_t threads = 0;          // OpenMP threads per rank; 0 = OMP_NUM_THREADS or all cores
  std::string blas = "auto";    // the CPU GEMM library (kernels/cpu/blas.h): auto | openblas-debian | blis | openblas
                                // | onednn
  std::string gemm_threads = "tiles";  // how a CPU GEMM uses the threads: tiles | library (kernels/cpu/gemm.h)

  bool operator==(const DeviceConfig&) const = default;
};

struct SampleConfig {
  std::string prompt = "The ";  // text (byte-level data) the model continues at the end of training
  int64_t tokens = 200;         // tokens to generate; 0 disables sampling
  double temperature = 0.8;     // 0 = greedy
  bool operator==(const SampleConfig&) const = default;
};

struct CheckpointConfig {
  int64_t every = 0;  // steps between checkpoints; 0 = only at the end
  int64_t keep = 3;   // newest checkpoints kept

  bool operator==(const CheckpointConfig&) const = default;
};

struct Config {
  RunConfig run;
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
  ParallelConfig parallel;
  DeviceConfig device;
  CheckpointConfig checkpoint;
  SampleConfig sample;

  bool operator==(const Config&) const = default;
};

// Reads `path`, applies each "key.path=value" override in order, validates. Throws ConfigError.
Config load_config(const std::filesystem::path& path, const std::vector<std::string>& overrides = {});

// Parses YAML text (`source` names it in errors). Throws ConfigError.
Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides = {});

// Every key with its value, in schema order, as YAML that parse_config reads back to an equal Config.
std::string to_yaml(const Config& config);

// Writes DIR/config.resolved.yaml atomically (temporary file, fsync, rename); creates DIR.
void write_resolved_config(const Config& config, const std::filesystem::path& dir);

}  // namespace trident
