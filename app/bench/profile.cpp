// trident bench profile CONFIG --out FILE: measures the cost model's compute and memory coefficients for the
// configured model on this machine and writes them into a cluster profile (parallel/cost/README.md).
// One sequence of s tokens, forward + backward, is timed at several s up to model.max_seq_len; alpha1, alpha2 and
// beta1 are fitted by least squares (parallel/cost/fit.h). Activation bytes per token are the slope of the
// allocator's peak between the shortest and longest sequence; model states are 16 bytes per parameter (fp32
// parameters, gradients and two AdamW moments).
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "app/bench/report.h"
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

Measured measure(const ModelConfig& config, int64_t s, double min_seconds, double budget_gib) {
  Allocator allocator({.name = "cpu", .budget_bytes = gib_to_bytes(budget_gib)});
  GPT model(config, s, allocator);
  model.init_weights(1);
  std::vector<int32_t> tokens(s), targets(s), positions(s), cu_seqlens = {0, static_cast<int32_t>(s)};
  std::mt19937_64 rng(2);
  for (int64_t t = 0; t < s; ++t) {
    tokens[t] = static_cast<int32_t>(rng() % config.vocab_size);
    positions[t] = static_cast<int32_t>(t);
  }
  for (int64_t t = 0; t < s; ++t) targets[t] = tokens[(t + 1) % s];
  const TokenBatch batch{tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), s, 1};
  const double seconds = time_call([&] { model.forward_backward(batch, 1.0f / static_cast<float>(s)); }, min_seconds);
  return {seconds, allocator.peak()};
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
  use_configured_blas(options.blas.empty() ? config.device.blas : options.blas);
  const int64_t longest = config.model.max_seq_len;
  std::vector<int64_t> lengths;
  for (int64_t s = longest; s >= 16 && lengths.size() < 5; s /= 2) lengths.push_back(s);
  std::reverse(lengths.begin(), lengths.end());
  if (lengths.size() < 3)
    throw_config_error("model.max_seq_len = {}: bench profile needs lengths of at least 64 tokens to time three "
                       "sequence lengths (it halves from max_seq_len down to 16)", longest);

  Report report(fmt::format("forward + backward of one sequence, {} ({} layers, width {}), {} threads", config.run.name,
                            config.model.n_layer, config.model.n_embd, omp_get_max_threads()),
                options.json);
  std::vector<cost::Timing> timings;
  std::vector<Measured> measured;
  for (int64_t s : lengths) {
    measured.push_back(measure(config.model, s, options.min_seconds, config.device.memory_gb));
    timings.push_back({s, 1, measured.back().seconds});
  }
  cost::ComputeSection compute = cost::fit_compute(timings);
  compute.fitted_from = fmt::format("trident bench profile: forward+backward of one sequence of {}..{} tokens, CPU, "
                                    "{} threads", lengths.front(), lengths.back(), omp_get_max_threads());
  for (size_t i = 0; i < lengths.size(); ++i) {
    const double x = static_cast<double>(lengths[i]);
    const double fitted = compute.alpha1_s_per_token2 * x * x + compute.alpha2_s_per_token * x + compute.beta1_s;
    report.add({{{"tokens", fmt::format("{}", lengths[i])}},
                {{"ms", timings[i].seconds * 1e3}, {"fitted ms", fitted * 1e3},
                 {"peak MiB", static_cast<double>(measured[i].peak_bytes) / (1 << 20)}}});
  }
  report.print();

  const double per_token = static_cast<double>(measured.back().peak_bytes - measured.front().peak_bytes) /
                           static_cast<double>(lengths.back() - lengths.front());
  Allocator probe({.name = "cpu", .budget_bytes = gib_to_bytes(config.device.memory_gb)});
  const double params = static_cast<double>(GPT(config.model, 1, probe).num_params());
  cost::Profile update;
  update.compute = compute;
  update.memory = cost::MemorySection{params * 16 / (1 << 30), std::max(per_token, 1.0), 0};
  update.model = cost::ModelSection{config.run.name, config.model.n_layer, config.model.n_embd,
                                    activation_value_bytes(precision_named(config.train.precision))};
  if (!std::filesystem::exists(out))  // a new file describes this machine; an existing one keeps its cluster
    update.cluster = cost::ClusterSection{hostname(), 1, 1, config.device.memory_gb};
  cost::merge_profile_into(out, update);
  if (!options.json)
    fmt::print("\nalpha1 {:.4g} s/token^2, alpha2 {:.4g} s/token, beta1 {:.4g} s; {:.0f} activation bytes/token, "
               "model states {:.3g} GiB -> {}\n", compute.alpha1_s_per_token2, compute.alpha2_s_per_token,
               compute.beta1_s, per_token, params * 16 / (1 << 30), out);
}

}  // namespace trident::bench
