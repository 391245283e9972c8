// trident bench step [CONFIG]: a whole training step (forward, backward, AdamW) timed on packed batches of documents,
// reported as ms/step, tokens/s and MFU = model FLOPs/s over the roof: on the CPU the sgemm rate measured in the
// same run, on a GPU its dense peak for the matmuls' precision. Softmax and linear attention run side by side at each
// sequence length. A CONFIG's device.backend, device.memory_gb and train.precision apply (e.g. --set
// device.backend=cuda --set train.precision=bf16 on a GPU).
#include <omp.h>

#include <limits>
#include <memory>
#include <numeric>
#include <random>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "core/config/config.h"
#include "core/metrics/roof.h"
#include "app/train/device_blas.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/gemm.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "app/train/step.h"
#include "kernels/backends.h"
#include "parallel/static_sp/static_sp.h"

namespace trident::bench {

namespace {

struct StepCase {
  std::string name;
  ModelConfig model;
  int64_t seq_len, tokens;  // documents of seq_len tokens packed to `tokens` per step
  double memory_gb = 20;    // the device memory budget: a CONFIG's device.memory_gb
};

ModelConfig gpt2_small(const std::string& attention, int64_t max_seq_len) {
  ModelConfig m;
  m.n_layer = 12;
  m.n_embd = 768;
  m.n_head = 12;
  m.vocab_size = 50304;
  m.max_seq_len = max_seq_len;
  m.attention = attention;
  return m;
}

Row measure(const StepCase& c, Backend& backend, Precision precision, double roof, double min_seconds) {
  Allocator allocator(
      {.name = backend.name(), .budget_bytes = gib_to_bytes(c.memory_gb), .resource = &backend.memory()});
  GPT model(c.model, c.tokens, allocator, backend, precision);
  model.init_weights(1);
  AdamW optimizer(model.layout(), TrainConfig{}, allocator, backend);
  Batch batch;
  batch.tokens.resize(c.tokens);
  batch.targets.resize(c.tokens);
  batch.positions.resize(c.tokens);
  std::mt19937_64 rng(2);
  for (int64_t t = 0; t < c.tokens; ++t) {
    batch.tokens[t] = static_cast<int32_t>(rng() % c.model.vocab_size);
    batch.positions[t] = static_cast<int32_t>(t % c.seq_len);
    if (t % c.seq_len == c.seq_len - 1 || t == c.tokens - 1) batch.cu_seqlens.push_back(static_cast<int32_t>(t + 1));
  }
  for (int64_t t = 0; t < c.tokens; ++t) batch.targets[t] = batch.tokens[(t + 1) % c.tokens];
  Config config;  // data parallelism over the ranks bench runs on (one, unless started under mpirun)
  config.model = c.model;
  RunGroups groups(world(), {}, {1});
  StaticSequenceParallel strategy({groups, backend, config, c.tokens}, "dp", 1);
  double flops = 0;
  double sec = time_call(
      [&] { flops = train_step(model, optimizer, strategy, batch, 1e-4, config.train).flops; }, min_seconds);
  const double tokens_per_s = static_cast<double>(c.tokens) / sec;
  return {{{"model", c.name}, {"attention", c.model.attention},
           {"batch", fmt::format("{} x {}", c.tokens / c.seq_len, c.seq_len)}},
          {{"ms/step", sec * 1e3}, {"tokens/s", tokens_per_s}, {"GFLOP/s", flops / sec / 1e9},
           {"MFU", roof > 0 ? flops / sec / 1e9 / roof : std::numeric_limits<double>::quiet_NaN()}}};
}

}  // namespace

void run_step(const Options& options, const std::string& config_path, const std::vector<std::string>& overrides) {
  std::vector<StepCase> cases;
  std::string backend_name = "cpu", precision_name = "fp32", blas = options.blas.empty() ? "auto" : options.blas;
  std::string gemm_threads = "tiles";
  if (!config_path.empty()) {
    Config config = load_config(config_path, overrides);
    backend_name = config.device.backend;
    if (options.blas.empty()) blas = config.device.blas;
    gemm_threads = config.device.gemm_threads;
    precision_name = config.train.precision;
    const int64_t T = config.model.max_seq_len;
    cases.push_back({config.run.name, config.model, T, std::max(T, config.train.batch_tokens / T * T),
                     config.device.memory_gb});
  } else {
    for (const char* attention : {"softmax", "linear"}) {
      cases.push_back({"gpt2-small", gpt2_small(attention, 64), 64, 256});  // B=4, T=64
      cases.push_back({"gpt2-small", gpt2_small(attention, 1024), 1024, 1024});
      cases.push_back({"gpt2-small", gpt2_small(attention, 4096), 4096, 4096});
      Config defaults;  // the default model, the shape configs/quickstart.yaml trains
      ModelConfig m = defaults.model;
      m.attention = attention;
      cases.push_back({"small-4x256", m, m.max_seq_len, 8192});
    }
  }
  use_configured_blas(blas, gemm_threads);
  Backend& backend = backend_for(backend_name, world().node_group()->rank());
  const Precision precision = precision_named(precision_name);
  std::string title;
  double roof = 0;
  if (backend.device() == Device::cpu) {
    roof = measure_sgemm_gflops(options.min_seconds);
    title = fmt::format("training step, {} on the cpu ({}), {} threads, sgemm roof {:.0f} GFLOP/s ({}, {} kernels, "
                        "GEMMs on {})", precision_name, precision == Precision::bf16 ? "bf16 emulated" : "native",
                        omp_get_max_threads(), roof, cpu::current_blas().name, cpu::current_blas().kernels,
                        cpu::gemm_threads() == cpu::GemmThreads::tiles ? "tiles" : "the library's threads");
  } else {
    std::string how;
    roof = device_peak_flops(backend_name, world().node_group()->rank(), precision == Precision::bf16, &how) / 1e9;
    title = fmt::format("training step, {} on {}, MFU against the {}", precision_name, backend_name, how);
  }
  Report report(title, options.json);
  Progress progress("bench step", static_cast<int64_t>(cases.size()), world().rank() != 0);
  for (const StepCase& c : cases) {
    progress.step(fmt::format("{}, {} attention, {} tokens", c.name, c.model.attention, c.tokens));
    report.add(measure(c, backend, precision, roof, options.min_seconds));
  }
  report.print();
}

}  // namespace trident::bench
