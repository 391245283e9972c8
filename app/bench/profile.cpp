// trident bench profile CONFIG --out FILE: measures the cost model's compute and memory coefficients for the
// configured model on this machine and writes them into a cluster profile (parallel/cost/README.md).
// One sequence of s tokens, forward + backward, is timed at several s up to model.max_seq_len; alpha1, alpha2 and
// beta1 are fitted by least squares (parallel/cost/fit.h). Inside the model, each block's forward and backward are
// timed too, and what lies outside the blocks (embeddings, final norm, LM head and loss): the `layers` section, ATOM's
// swap planner's per-layer costs. Activation bytes per token are the slope of the allocator's peak between the
// shortest and longest sequence; model states are 16 bytes per parameter (fp32 parameters, gradients and two AdamW
// moments).
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "core/config/config.h"
#include "core/model/gpt.h"
#include "parallel/cost/fit.h"
#include "parallel/cost/profile.h"
#include "app/train/device_blas.h"

namespace trident::bench {

namespace {

struct Measured {
  double seconds;
  size_t peak_bytes;
};

// One sequence of s tokens and its next-token targets.
struct Sequence {
  std::vector<int32_t> tokens, targets, positions, cu_seqlens;
  Sequence(const ModelConfig& config, int64_t s) : tokens(s), targets(s), positions(s), cu_seqlens{0, int32_t(s)} {
    std::mt19937_64 rng(2);
    for (int64_t t = 0; t < s; ++t) {
      tokens[t] = static_cast<int32_t>(rng() % config.vocab_size);
      positions[t] = static_cast<int32_t>(t);
    }
    for (int64_t t = 0; t < s; ++t) targets[t] = tokens[(t + 1) % s];
  }
  TokenBatch batch() const {
    return {tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), static_cast<int64_t>(tokens.size()), 1};
  }
};

Measured measure(const ModelConfig& config, int64_t s, double min_seconds, double budget_gib) {
  Allocator allocator({.name = "cpu", .budget_bytes = gib_to_bytes(budget_gib)});
  GPT model(config, s, allocator);
  model.init_weights(1);
  const Sequence sequence(config, s);
  const TokenBatch batch = sequence.batch();
  const double seconds = time_call([&] { model.forward_backward(batch, 1.0f / static_cast<float>(s)); }, min_seconds);
  return {seconds, allocator.peak()};
}

// The model's blocks timed where they compute: the model's own training pass (GPT::run), made of its steps, with a
// clock around each block's forward and backward; the rest of a pass is the embeddings, final norm, LM head and loss.
class BlockClock {
 public:
  using clock = std::chrono::steady_clock;
  struct Split {
    double block_forward_s = 0, block_backward_s = 0, outside_s = 0;  // a block's: the mean over the blocks
  };

  explicit BlockClock(GPT& model) : model_(model) {}

  // One forward + backward of `batch` (host arrays: the cpu backend), split.
  Split time(const TokenBatch& batch, float loss_weight) {
    double forward_s = 0, backward_s = 0;
    const auto start = clock::now();
    model_.check_batch(batch, /*need_targets=*/true);
    const ParamWindow w = model_.resident_weights();
    Activations<float>& acts = model_.activations<float>();
    const auto L = static_cast<int>(model_.config().n_layer);
    auto layer = [&](int l) -> LayerActivations<float>& { return acts.layers[static_cast<std::size_t>(l)]; };
    auto input = [&](int l) { return l == 0 ? acts.encoded : layer(l - 1).res3; };
    model_.embed<float>(batch, w);
    for (int l = 0; l < L; ++l) {
      const auto t = clock::now();
      model_.forward_layer<float>(l, w, batch, input(l), layer(l));
      forward_s += seconds_since(t);
    }
    model_.head<float>(batch, PassKind::train, loss_weight, nullptr, {w, w}, input(L));
    model_.final_norm_backward<float>({w, w}, input(L), batch.num_tokens);
    float* dres = acts.dnarrow;  // as GPT::run: the gradient at the trunk's output
    float* dnarrow = acts.dres;
    for (int l = L - 1; l >= 0; --l) {
      const auto t = clock::now();
      model_.backward_layer<float>(l, w, batch, input(l), layer(l), dres, dnarrow);
      backward_s += seconds_since(t);
    }
    model_.embed_backward<float>(batch, w, dres);
    const double total = seconds_since(start);
    return {forward_s / L, backward_s / L, total - forward_s - backward_s};
  }

 private:
  static double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

  GPT& model_;
};

// The median split of forward + backward of one sequence of s tokens over repeated calls (about min_seconds).
BlockClock::Split measure_blocks(const ModelConfig& config, int64_t s, double min_seconds, double budget_gib) {
  Allocator allocator({.name = "cpu", .budget_bytes = gib_to_bytes(budget_gib)});
  GPT model(config, s, allocator);
  BlockClock timer(model);
  model.init_weights(1);
  const Sequence sequence(config, s);
  const TokenBatch batch = sequence.batch();
  const float weight = 1.0f / static_cast<float>(s);
  const BlockClock::Split first = timer.time(batch, weight);  // warm-up: page faults, thread pool start, caches
  const double per_call = first.outside_s + static_cast<double>(config.n_layer) *
                                                (first.block_forward_s + first.block_backward_s);
  const int calls = std::clamp(static_cast<int>(min_seconds / std::max(per_call, 1e-9)), 5, 1000);
  std::vector<double> forward, backward, outside;
  for (int i = 0; i < calls; ++i) {
    const BlockClock::Split split = timer.time(batch, weight);
    forward.push_back(split.block_forward_s), backward.push_back(split.block_backward_s);
    outside.push_back(split.outside_s);
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(forward), median(backward), median(outside)};
}

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "this machine";
  return name;
}

}  // namespace

void run_profile(const Options& options, const std::string& config_path, const std::vector<std::string>& overrides,
                 const std::string& out) {
  const Config config = load_config(config_path, overrides);
  cost::check_profile_target(out);  // before measuring, so a bad file fails at once
  use_configured_blas(options.blas.empty() ? config.device.blas : options.blas, config.device.gemm_threads);
  const int64_t longest = config.model.max_seq_len;
  const std::vector<int64_t> lengths = cost::halving_lengths(longest, 16, 8);  // down to 1/128 of the longest
  if (lengths.size() < 3)
    throw_config_error("model.max_seq_len = {}: bench profile needs lengths of at least 64 tokens to time three "
                       "sequence lengths (it halves from max_seq_len down to 16)", longest);

  Report report(fmt::format("forward + backward of one sequence, {} ({} layers, width {}), {} threads", config.run.name,
                            config.model.n_layer, config.model.n_embd, omp_get_max_threads()),
                options.json);
  std::vector<cost::Timing> timings, forward, backward, outside;
  std::vector<Measured> measured;
  Progress progress("bench profile", static_cast<int64_t>(lengths.size()));
  for (int64_t s : lengths) {
    progress.step(fmt::format("one sequence of {} tokens: the step, then each block", s));
    measured.push_back(measure(config.model, s, options.min_seconds, config.device.memory_gb));
    timings.push_back({s, 1, measured.back().seconds});
    const BlockClock::Split split = measure_blocks(config.model, s, options.min_seconds, config.device.memory_gb);
    forward.push_back({s, 1, split.block_forward_s});
    backward.push_back({s, 1, split.block_backward_s});
    outside.push_back({s, 1, split.outside_s});
  }
  cost::ComputeSection compute = cost::fit_compute(timings);
  compute.fitted_from = fmt::format("trident bench profile: forward+backward of one sequence of {}..{} tokens, CPU, "
                                    "{} threads", lengths.front(), lengths.back(), omp_get_max_threads());
  const cost::LayersSection layers{cost::fit_compute(forward), cost::fit_compute(backward), cost::fit_compute(outside)};
  for (size_t i = 0; i < lengths.size(); ++i) {
    const double x = static_cast<double>(lengths[i]);
    const double fitted = compute.alpha1_s_per_token2 * x * x + compute.alpha2_s_per_token * x + compute.beta1_s;
    report.add({{{"tokens", fmt::format("{}", lengths[i])}},
                {{"ms", timings[i].seconds * 1e3}, {"fitted ms", fitted * 1e3},
                 {"block fwd ms", forward[i].seconds * 1e3}, {"block bwd ms", backward[i].seconds * 1e3},
                 {"outside ms", outside[i].seconds * 1e3},
                 {"peak MiB", static_cast<double>(measured[i].peak_bytes) / (1 << 20)}}});
  }
  report.print();

  const double per_token = static_cast<double>(measured.back().peak_bytes - measured.front().peak_bytes) /
                           static_cast<double>(lengths.back() - lengths.front());
  Allocator probe({.name = "cpu", .budget_bytes = gib_to_bytes(config.device.memory_gb)});
  const double params = static_cast<double>(GPT(config.model, 1, probe).num_params());
  cost::Profile update;
  update.compute = compute;
  update.layers = layers;
  update.memory = cost::MemorySection{params * 16 / (1 << 30), std::max(per_token, 1.0), 0};
  update.model = cost::ModelSection{config.run.name, config.model.n_layer, config.model.n_embd,
                                    activation_value_bytes(precision_named(config.train.precision)),
                                    config.model.max_seq_len, static_cast<int64_t>(params)};
  if (!std::filesystem::exists(out))  // a new file describes this machine; an existing one keeps its cluster
    update.cluster = cost::ClusterSection{hostname(), 1, 1, config.device.memory_gb};
  cost::merge_profile_into(out, update);
  if (!options.json)
    fmt::print("\nalpha1 {:.4g} s/token^2, alpha2 {:.4g} s/token, beta1 {:.4g} s; a block's forward {:.4g} s/token, "
               "backward {:.4g} s/token, outside the blocks {:.4g} s/token; {:.0f} activation bytes/token, model "
               "states {:.3g} GiB -> {}\n", compute.alpha1_s_per_token2, compute.alpha2_s_per_token, compute.beta1_s,
               layers.block_forward.alpha2_s_per_token, layers.block_backward.alpha2_s_per_token,
               layers.outside.alpha2_s_per_token, per_token, params * 16 / (1 << 30), out);
}

}  // namespace trident::bench
