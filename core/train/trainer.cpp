#include "core/train/trainer.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/checkpoint/model_io.h"
#include "core/common/error.h"
#include "core/data/batcher.h"
#include "core/data/document_source.h"
#include "core/data/text_source.h"
#include "core/metrics/log.h"
#include "core/metrics/metrics.h"
#include "core/metrics/progress.h"
#include "core/metrics/roof.h"
#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "core/optim/schedule.h"
#include "core/train/sample.h"
#include "core/train/step.h"

namespace trident {

namespace {

TokenBatch view(const Batch& b) {
  return {b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
          b.num_sequences()};
}

// What this build can run: the rest is a configuration error, caught before any work starts.
void check_supported(const Config& c) {
  if (c.device.backend == "cuda")
    throw_config_error("device.backend: 'cuda' is not available: this build has only the cpu backend");
  if (c.train.precision == "bf16")
    throw_config_error("train.precision: 'bf16' needs the cuda backend; the cpu backend trains in fp32");
  if (c.parallel.strategy != "auto")
    throw_config_error("parallel.strategy: '{}' is not available yet; use 'auto' (single-rank training)",
                       c.parallel.strategy);
}

double evaluate(GPT& model, const Batcher& eval_batches, int64_t count) {
  double loss_sum = 0;
  int64_t targets = 0;
  for (int64_t i = 0; i < count; ++i) {
    for (const Batch& mb : split_micro_batches(eval_batches.batch(i), 1)) {
      loss_sum += model.forward_loss(view(mb));
      targets += count_targets(view(mb));
    }
  }
  return loss_sum / static_cast<double>(targets);
}

}  // namespace

void run_training(const Config& config) {
  check_supported(config);
  const std::filesystem::path run_dir = config.run.dir;
  // Never append a new run to an old one's metrics or overwrite its weights.
  if (std::filesystem::exists(run_dir / "metrics.jsonl"))
    throw_config_error("run.dir '{}' already holds a run (metrics.jsonl); resuming is not available yet: choose "
                       "another run.dir (--set run.dir=...) or move the old run away", run_dir.string());
  write_resolved_config(config, run_dir);
  setup_logging(run_dir, 0);
  if (config.device.threads > 0) omp_set_num_threads(static_cast<int>(config.device.threads));
  spdlog::info("run '{}' in {}: {} threads", config.run.name, run_dir.string(), omp_get_max_threads());

  std::unique_ptr<DocumentSource> documents = open_documents(config);
  Batcher train_batches(*documents, config, Split::train);
  std::optional<Batcher> eval_batches;
  if (config.train.eval_every > 0) eval_batches.emplace(*documents, config, Split::eval);
  spdlog::info("data: {}; {} train batches in the first epoch", documents->describe(), train_batches.steps_in_epoch(0));

  Allocator allocator({.name = "cpu", .budget_bytes = gib_to_bytes(config.device.memory_gb)});
  GPT model(config.model, config.train.batch_tokens, allocator);
  model.init_weights(static_cast<uint64_t>(config.run.seed));
  AdamW optimizer(model.layout(), config.train, allocator);
  save_model(run_dir / "model_init.safetensors", model);
  spdlog::info("model: {} parameters, {} attention, {} layers x {} wide; memory in use {}", model.num_params(),
               config.model.attention, config.model.n_layer, config.model.n_embd, format_bytes(allocator.in_use()));

  const double roof_gflops = measure_sgemm_gflops(0.2);
  MetricsWriter metrics(run_dir / "metrics.jsonl");
  ProgressLine progress(config.train.steps, true);
  using clock = std::chrono::steady_clock;
  for (int64_t step = 0; step < config.train.steps; ++step) {
    const auto start = clock::now();
    const Batch batch = train_batches.batch(step);
    std::vector<Batch> micro = split_micro_batches(batch, static_cast<int>(config.train.micro_batches));
    std::vector<TokenBatch> views;
    for (const Batch& mb : micro)
      if (mb.num_tokens() > 0) views.push_back(view(mb));
    const double lr = learning_rate(config.train, step);
    const StepStats stats = train_step(model, optimizer, views, lr, config.train);
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    if (!stats.finite) {
      if (config.train.on_nonfinite == "stop")
        throw_runtime_error("step {}: the loss ({}) or gradient norm ({}) is not finite; stopping "
                            "(train.on_nonfinite: skip skips such steps instead)", step, stats.loss, stats.grad_norm);
      spdlog::warn("step {}: non-finite loss ({}) or gradient norm ({}); update skipped", step, stats.loss,
                   stats.grad_norm);
    }

    nlohmann::ordered_json record = {
        {"step", step},
        {"loss", stats.loss},
        {"lr", lr},
        {"tokens", stats.tokens},
        {"step_ms", seconds * 1e3},
        {"tokens_per_s", static_cast<double>(stats.tokens) / seconds},
        {"mfu", stats.flops / seconds / 1e9 / roof_gflops},
        {"peak_mem_bytes", allocator.peak()},
        {"grad_norm", stats.grad_norm},
        {"strategy", "single"},
    };
    const bool last = step + 1 == config.train.steps;
    if (eval_batches && ((step + 1) % config.train.eval_every == 0 || last)) {
      record["eval_loss"] = evaluate(model, *eval_batches, config.train.eval_batches);
      spdlog::info("step {}: train loss {:.4f}, eval loss {:.4f}", step, stats.loss, record["eval_loss"].get<double>());
    }
    if (!std::isfinite(stats.loss)) record["loss"] = nullptr;  // JSON has no NaN
    metrics.write(record);
    progress.update(step, stats.loss, static_cast<double>(stats.tokens) / seconds, seconds);
  }
  progress.finish();
  save_model(run_dir / "model_final.safetensors", model);
  spdlog::info("final weights written to {}", (run_dir / "model_final.safetensors").string());

  if (config.sample.tokens > 0 && config.data.kind == "text") {
    std::vector<int32_t> prompt(config.sample.prompt.begin(), config.sample.prompt.end());
    for (int32_t& t : prompt) t = static_cast<unsigned char>(t);
    std::vector<int32_t> out = generate(model, prompt, config.sample.tokens, config.sample.temperature,
                                        static_cast<uint64_t>(config.run.seed));
    spdlog::info("sample (temperature {}):\n{}{}", config.sample.temperature, config.sample.prompt, decode_bytes(out));
  }
}

}  // namespace trident
