// trident_parity_dump DIR softmax|linear|hybrid [options]: writes a parity directory (tests/reference/README.md) from
// Trident's own model and training step, for gpt_reference.py to recompute independently in PyTorch.
//
// The linear-attention block (defaults: model.linear.*'s defaults):
//   --qk-activation silu|elu1|none   --output-gate | --no-output-gate   --output-norm hidden|head
// A hybrid's layers: --layers PATTERN (model.layers; default LS).
// The batch: by default a small model (3 heads, several chunks per document) on four documents, 3 AdamW steps.
//   --shared-first-byte   the conditioning batch instead: a byte-level model of configs/quickstart.yaml's shape at its
//                         GPT-2 initialisation (weights not scaled up) on many short documents in groups that each
//                         share their first byte; gradients only (steps 0). Its options, defaults in brackets:
//                         --n-layer [4] --n-embd [256] --n-head [8] --documents [512] --first-bytes [32] (distinct
//                         first bytes; documents take them in turn) --seed [0] (of the weights and of the bytes).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checkpoint/safetensors.h"
#include "core/common/atomic_file.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "app/train/step.h"
#include "parallel/static_sp/static_sp.h"

using namespace trident;

namespace {

constexpr const char* kUsage =
    "usage: trident_parity_dump DIR softmax|linear|hybrid [--qk-activation silu|elu1|none]\n"
    "                           [--output-gate|--no-output-gate] [--output-norm hidden|head] [--layers LS]\n"
    "                           [--shared-first-byte [--n-layer L] [--n-embd C]\n"
    "                           [--n-head H] [--documents S] [--first-bytes K] [--seed N]]\n";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "trident_parity_dump: %s\n%s", what.c_str(), kUsage);
  std::exit(2);
}

// The first bytes of the conditioning batch's documents, group k starting with kFirstBytes[k].
const std::string kFirstBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

std::vector<StTensor> weight_tensors(const GPT& model, const float* base, const std::string& prefix) {
  std::vector<StTensor> out;
  for (const ParamEntry& e : model.layout().params) out.push_back({prefix + e.name, StDType::F32, e.shape, base + e.offset});
  return out;
}

struct Options {
  std::filesystem::path dir;
  std::string attention;
  std::string qk_activation = ModelConfig{}.linear_qk_activation;
  bool output_gate = ModelConfig{}.linear_output_gate;
  std::string output_norm = ModelConfig{}.linear_output_norm;
  std::string layers = "LS";  // hybrid only
  bool shared_first_byte = false;
  // --shared-first-byte: configs/quickstart.yaml's model; 512 documents (about 11,000 tokens) in 32 groups
  int n_layer = 4, n_embd = 256, n_head = 8, documents = 512, first_bytes = 32, seed = 0;
};

Options parse(int argc, char** argv) {
  if (argc < 3) usage_error("DIR and the attention type are required");
  Options o;
  o.dir = argv[1];
  o.attention = argv[2];
  if (o.attention != "softmax" && o.attention != "linear" && o.attention != "hybrid")
    usage_error("attention must be softmax, linear or hybrid");
  std::set<std::string> shape_flags, linear_flags;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    auto integer = [&](long min) {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < min || n > 1 << 20)
        usage_error(arg + ": not an integer in [" + std::to_string(min) + ", 2^20]: " + v);
      shape_flags.insert(arg);
      return static_cast<int>(n);
    };
    auto positive = [&]() { return integer(1); };
    if (arg == "--qk-activation" || arg == "--output-gate" || arg == "--no-output-gate" || arg == "--output-norm")
      linear_flags.insert(arg);
    if (arg == "--qk-activation") {
      o.qk_activation = value();
      if (o.qk_activation != "silu" && o.qk_activation != "elu1" && o.qk_activation != "none")
        usage_error("--qk-activation must be silu, elu1 or none");
    } else if (arg == "--output-gate") {
      o.output_gate = true;
    } else if (arg == "--no-output-gate") {
      o.output_gate = false;
    } else if (arg == "--output-norm") {
      o.output_norm = value();
      if (o.output_norm != "hidden" && o.output_norm != "head") usage_error("--output-norm must be hidden or head");
    } else if (arg == "--layers") {
      o.layers = value();
      if (o.attention != "hybrid") usage_error("--layers needs hybrid attention");
      if (o.layers.empty() || o.layers.find_first_not_of("LS") != std::string::npos)
        usage_error("--layers: a pattern of L and S");
    } else if (arg == "--shared-first-byte") {
      o.shared_first_byte = true;
    } else if (arg == "--n-layer") {
      o.n_layer = positive();
    } else if (arg == "--n-embd") {
      o.n_embd = positive();
    } else if (arg == "--n-head") {
      o.n_head = positive();
    } else if (arg == "--documents") {
      o.documents = positive();
    } else if (arg == "--first-bytes") {
      o.first_bytes = positive();
    } else if (arg == "--seed") {
      o.seed = integer(0);
    } else {
      usage_error("unknown option " + arg);
    }
  }
  if (!linear_flags.empty() && o.attention == "softmax")
    usage_error(*linear_flags.begin() + " needs linear or hybrid attention");
  if (!shape_flags.empty() && !o.shared_first_byte) usage_error(*shape_flags.begin() + " needs --shared-first-byte");
  if (o.n_embd % o.n_head != 0) usage_error("--n-head must divide --n-embd");
  if (o.attention == "hybrid" && o.shared_first_byte && o.n_layer % static_cast<int>(o.layers.size()) != 0)
    usage_error("--layers: the pattern's length must divide --n-layer");
  if (o.first_bytes > static_cast<int>(kFirstBytes.size()))
    usage_error("--first-bytes: at most " + std::to_string(kFirstBytes.size()));
  return o;
}

struct HostBatch {
  std::vector<int32_t> tokens, targets, positions, cu_seqlens = {0};

  // Appends one document; every position has the next token as its target, except the last (-1: no target).
  void add_document(const std::vector<int32_t>& text) {
    const int len = static_cast<int>(text.size());
    for (int i = 0; i < len; ++i) {
      tokens.push_back(text[i]);
      positions.push_back(i);
      targets.push_back(i + 1 < len ? text[i + 1] : -1);
    }
    cu_seqlens.push_back(static_cast<int32_t>(tokens.size()));
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  ModelConfig m;
  m.attention = opt.attention;
  if (m.attention == "hybrid") m.layers = opt.layers;
  m.linear_qk_activation = opt.qk_activation;
  m.linear_output_gate = opt.output_gate;
  m.linear_output_norm = opt.output_norm;
  TrainConfig t;
  t.lr = 1e-3;
  t.weight_decay = 0.1;
  t.grad_clip = 0.5;  // small enough to clip, so clipping is part of the comparison
  // Adam divides by sqrt(v): with eps = 1e-8, fp32 rounding in the smallest gradients grows into final-weight
  // differences of about lr * rounding / eps, far above 1e-4. eps = 1e-4 keeps the comparison well conditioned and
  // still exercises every term of the update.
  t.eps = 1e-4;
  int steps = 3;
  HostBatch host;
  if (!opt.shared_first_byte) {
    m.n_layer = m.attention == "hybrid" ? static_cast<int64_t>(opt.layers.size()) : 2;
    m.n_embd = 48;
    m.n_head = 3;  // not a power of two: exercises the second branch of the ALiBi slope rule
    m.vocab_size = 67;
    m.max_seq_len = 32;
    m.linear_chunk = 8;  // several chunks per document, and a partial last chunk
    // Documents of lengths 13, 1 (no target at all), 32 (the full max_seq_len) and 20; each ends without a target.
    std::mt19937_64 rng(99);
    for (int len : {13, 1, 32, 20}) {
      std::vector<int32_t> text(len);
      for (int32_t& token : text) token = static_cast<int32_t>(rng() % m.vocab_size);
      host.add_document(text);
    }
  } else {
    // The conditioning batch. At a document's first token linear attention sees only that token: o_0 = (q_0.k_0) v_0
    // per head, no history, no decay. Documents that start with the same byte have the same first row in every layer
    // (nothing before it differs), so its gradient adds up over the group, and with a per-head norm and no feature
    // map a head whose q_0.k_0 is near 0 turns fp32 rounding into a gradient error of ~1e-3 (tests/reference/
    // README.md). Many groups give many (byte, layer, head) chances of that. Lengths 4..40 (every length, in turn),
    // the rest of each document random bytes. Only the gradients at initialisation are compared: no AdamW step.
    m.n_layer = opt.n_layer;
    m.n_embd = opt.n_embd;
    m.n_head = opt.n_head;
    m.vocab_size = 256;  // byte-level
    m.max_seq_len = 64;
    m.linear_chunk = 16;  // several chunks in the longer documents
    steps = 0;
    std::mt19937_64 rng(2024 + static_cast<uint64_t>(opt.seed));
    for (int d = 0; d < opt.documents; ++d) {
      std::vector<int32_t> text(4 + (d * 17) % 37);
      text[0] = static_cast<unsigned char>(kFirstBytes[static_cast<std::size_t>(d % opt.first_bytes)]);
      for (std::size_t i = 1; i < text.size(); ++i) text[i] = static_cast<int32_t>(rng() % m.vocab_size);
      host.add_document(text);
    }
  }
  const int64_t N = host.size();
  TokenBatch batch{host.tokens.data(), host.targets.data(), host.positions.data(), host.cu_seqlens.data(), N,
                   static_cast<int>(host.cu_seqlens.size()) - 1};

  Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(4) << 30});
  GPT model(m, N, allocator);
  model.init_weights(1234 + static_cast<uint64_t>(opt.seed));
  AdamW optimizer(model.layout(), t, allocator);
  Config run;
  run.model = m;
  run.train = t;
  RunGroups groups(world(), {}, {1});
  StaticSequenceParallel one_rank({groups, cpu_backend(), run, N}, "dp", 1);
  Batch whole;  // the same batch as the strategy takes it
  whole.tokens = host.tokens;
  whole.targets = host.targets;
  whole.positions = host.positions;
  whole.cu_seqlens = host.cu_seqlens;
  const int64_t targets = std::count_if(host.targets.begin(), host.targets.end(), [](int32_t x) { return x >= 0; });

  nlohmann::json config = {{"n_layer", m.n_layer},       {"n_embd", m.n_embd},
                           {"n_head", m.n_head},         {"vocab_size", m.vocab_size},
                           {"max_seq_len", m.max_seq_len}, {"attention", m.attention},
                           {"decay_layer_scaling", m.decay_layer_scaling},
                           {"lr", t.lr},                 {"beta1", t.beta1},
                           {"beta2", t.beta2},           {"eps", t.eps},
                           {"weight_decay", t.weight_decay}, {"grad_clip", t.grad_clip},
                           {"steps", steps}};
  if (m.attention == "hybrid") config["layers"] = m.layers;
  if (m.any_linear()) {
    config["qk_activation"] = m.linear_qk_activation;
    config["output_gate"] = m.linear_output_gate;
    config["output_norm"] = m.linear_output_norm;
  }
  std::filesystem::create_directories(opt.dir);
  write_file_atomically(opt.dir / "config.json", config.dump(2));
  write_safetensors(opt.dir / "weights.safetensors", weight_tensors(model, model.params(), ""));
  const int64_t S = static_cast<int64_t>(host.cu_seqlens.size());
  write_safetensors(opt.dir / "batch.safetensors", {{"tokens", StDType::I32, {N}, host.tokens.data()},
                                                    {"targets", StDType::I32, {N}, host.targets.data()},
                                                    {"positions", StDType::I32, {N}, host.positions.data()},
                                                    {"cu_seqlens", StDType::I32, {S}, host.cu_seqlens.data()}});

  std::vector<float> logits(N * m.vocab_size);
  model.forward_logits(batch, logits.data());
  std::vector<float> losses;
  std::vector<float> initial_grads;
  float loss0 = 0.0f;
  if (steps == 0) {  // the gradient of the mean loss, without an optimizer step
    model.zero_grads();
    loss0 = static_cast<float>(model.forward_backward(batch, 1.0f / static_cast<float>(targets)) / targets);
    initial_grads.assign(model.grads(), model.grads() + model.num_params());
  }
  for (int s = 0; s < steps; ++s) {
    StepStats stats = train_step(model, optimizer, one_rank, whole, t.lr, t);
    if (s == 0) initial_grads.assign(model.grads(), model.grads() + model.num_params());
    losses.push_back(static_cast<float>(stats.loss));
  }
  if (steps > 0) loss0 = losses[0];
  std::vector<StTensor> out = {{"loss", StDType::F32, {}, &loss0},
                               {"logits", StDType::F32, {N, m.vocab_size}, logits.data()},
                               {"losses", StDType::F32, {steps}, losses.data()}};
  for (StTensor& g : weight_tensors(model, initial_grads.data(), "grad.")) out.push_back(g);
  for (StTensor& w : weight_tensors(model, model.params(), "final.")) out.push_back(w);
  write_safetensors(opt.dir / "outputs.safetensors", out);
  std::string block;
  if (m.attention == "hybrid") block = ", layers " + m.layers;
  if (m.any_linear())
    block += ", qk_activation " + m.linear_qk_activation + ", output_gate " + (m.linear_output_gate ? "true" : "false") +
            ", output_norm " + m.linear_output_norm;
  std::printf("parity dump (%s attention%s; %lld layers, n_embd %lld, %lld heads; %lld tokens in %d documents, "
              "%d steps) written to %s\n",
              m.attention.c_str(), block.c_str(), static_cast<long long>(m.n_layer), static_cast<long long>(m.n_embd),
              static_cast<long long>(m.n_head), static_cast<long long>(N), batch.num_sequences, steps,
              opt.dir.c_str());
  return 0;
}
