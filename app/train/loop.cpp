// `trident train`, in phases: place the run (RunSetup), open its directory (run_dir.h), read its data, build the model
// and optimizer, start (resume or initialize, build the selector), then step: choose a strategy, train, record,
// evaluate, checkpoint; finish (final weights, a sample).
#include "app/train/train.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "app/train/device_blas.h"
#include "app/train/run_dir.h"
#include "app/train/sample.h"
#include "app/train/setup.h"
#include "app/train/signals.h"
#include "app/train/step.h"
#include "app/train/watchdog.h"
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_io.h"
#include "core/common/test_delay.h"
#include "core/data/batcher.h"
#include "core/data/document_source.h"
#include "core/data/text_source.h"
#include "core/metrics/metrics.h"
#include "core/metrics/progress.h"
#include "core/metrics/roof.h"
#include "core/optim/schedule.h"
#include "kernels/backends.h"
#include "kernels/common/error.h"
#include "parallel/placement/model_placement.h"
#include "parallel/select/configure.h"

#if TRIDENT_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/device.h"
#endif

namespace trident {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// What this build can run: the rest is a configuration error, caught before any work starts (what the strategies
// need of the model and the world is checked by check_selection).
void check_supported(const Config& c) {
  if (const BackendStatus status = backend_status(c.device.backend); !status.built || !status.usable)
    throw_config_error("device.backend: '{}' is not available: {}", c.device.backend, status.detail);
  if (c.sample.tokens > 0 && c.data.kind == "text" && c.sample.prompt.empty())
    throw_config_error("sample.prompt: empty; generation needs at least one byte to continue (or sample.tokens: 0)");
}

// True on every rank when `flag` is true on any rank.
bool any_rank(Communicator& comm, bool flag) {
  int32_t v = flag ? 1 : 0;
  if (comm.size() > 1) comm.allreduce_sum(&v, 1, CommType::i32);
  return v > 0;
}

// One metrics entry per candidate the selector compared: its estimate, or why it could not run the batch.
nlohmann::ordered_json candidates_json(const Comparison& comparison) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Option& o : comparison.options) {
    nlohmann::ordered_json c = {{"strategy", o.candidate->method()}, {"degree", o.candidate->degree()}};
    if (!o.feasibility.ok) c["infeasible"] = o.feasibility.reason;
    if (o.estimate) {
      c["estimate_ms"] = o.estimate->seconds * 1e3;
      c["predicted_ms"] = o.predicted_s * 1e3;
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The opened run directory, with the run's threads and BLAS set and its first log line.
RunDir open_run(const RunSetup& setup) {
  const Config& config = setup.config;
  RunDir run = open_run_dir(config, setup.ranks);
  if (config.device.threads > 0) omp_set_num_threads(static_cast<int>(config.device.threads));
  spdlog::info("run '{}' in {}: {} rank(s) x {} thread(s), {} backend", config.run.name, run.path.string(),
               setup.ranks.size(), omp_get_max_threads(), setup.backend.name());
  use_configured_blas(config.device.blas, config.device.gemm_threads);
  return run;
}

// The documents a run reads, and the train and evaluation batches cut from them.
struct RunData {
  explicit RunData(const Config& config)
      : documents(open_documents(config)), train(after_test_delay(*documents), config, Split::train) {
    if (config.train.eval_every > 0) eval.emplace(*documents, config, Split::eval);
    spdlog::info("data: {}; {} train batches in the first epoch", documents->describe(), train.steps_in_epoch(0));
  }
  static const DocumentSource& after_test_delay(const DocumentSource& source) {
    test_delay("TRIDENT_TEST_STARTUP_DELAY_MS");
    return source;
  }
  std::unique_ptr<DocumentSource> documents;
  Batcher train;
  std::optional<Batcher> eval;
};

// The model and its optimizer in the run's memory: the device budget (device.memory_gb), and the host store where a
// swapped model's weights, gradients and AdamW state live, counted against its own budget (pinned on cuda: the
// copies run asynchronously).
struct ModelState {
  explicit ModelState(const RunSetup& setup)
      : device({.name = setup.backend.name(),
                .budget_bytes = gib_to_bytes(setup.config.device.memory_gb),
                .resource = &setup.backend.memory()}),
        host_store({.name = "host store",
                    .budget_bytes = static_cast<std::size_t>(setup.placement ? setup.placement->host_store_bytes()
                                                                              : host_memory_bytes()),
                    .resource = &setup.backend.staging_memory()}),
        model(setup.config.model, setup.capacity, device, setup.backend, setup.precision,
              setup.placement ? setup.placement->memory(host_store) : ModelMemory{}),
        placed(setup.placement ? setup.placement->attach(model, device, host_store) : nullptr),
        optimizer(model.layout(), setup.config.train, model.weights_on_host() ? host_store : device,
                  model.store_backend(), setup.sharding->owned()) {
    if (setup.precision == Precision::bf16 && setup.backend.device() == Device::cpu)
      spdlog::warn("train.precision: bf16 on the cpu backend is emulated (bf16 storage, fp32 arithmetic, a copy per "
                   "op): slower than fp32, for checking the bf16 model; use device.backend: cuda for speed");
    setup.log_memory(model, device, host_store);
  }
  Allocator device, host_store;
  GPT model;
  std::unique_ptr<PlacedRun> placed;  // what runs a placed model's passes: after the model, destroyed before it
  AdamW optimizer;
};

class Trainer {
 public:
  explicit Trainer(const Config& config)
      : config_(config), setup_(config), run_(open_run(setup_)), data_(config), state_(setup_) {}

  // Resumes from a checkpoint or initializes the weights, and builds the selector. False when a stop signal came
  // while the run started: nothing of the run is written then, and nothing needs to be.
  bool start();
  // The steps from the first not yet run to train.steps. False when a stop signal ended them (after a checkpoint).
  bool train();
  // The final weights, on every rank's settled model, and a sample.
  void finish();

 private:
  struct Counters {
    Clock::time_point start;
    int64_t comm_bytes;
    double alltoall_s;
  };
  // Leaving a strategy settles it first: ATOM's peers hold replicas of their own between rounds, and every other
  // strategy needs them equal (a synchronization: the switching cost of ATOM).
  void switch_to(Strategy* next);
  void save(int64_t steps_done);
  // A sharded optimizer's part of a checkpoint: the parts a strategy's ranks keep apart (a pipeline's stages), or the
  // ranges the ranks of the lead's sharding group hold (Sharding::write_optimizer), each written by its rank into the
  // checkpoint's directory; none otherwise (rank 0 writes the whole optimizer).
  std::vector<OptimizerShard> save_optimizer_shards(int64_t steps_done);
  void check_finite(int64_t step, const StepStats& stats) const;
  nlohmann::ordered_json step_record(int64_t step, double lr, const StepStats& stats, double seconds,
                                     const Selector::Choice& choice, const Counters& before) const;
  // Each evaluation batch runs on the strategy the selector picks for it, as a training batch would.
  double evaluate();
  // parallel.zero.stage 3 keeps no weights in the model: the weights file `path` is written by the lead's sharding
  // group, each rank its range (Sharding::write_weights; collective over that group). False below stage 3 (the lead
  // writes the model's) and on the other groups' ranks.
  bool write_weight_ranges(const fs::path& path, const std::map<std::string, std::string>& metadata);
  // And the lead's sample runs on a model in host memory for batches of `max_tokens`, holding the ranges gathered.
  // Collective over the lead's sharding group at stage 3; nullopt below stage 3 and on ranks but the lead.
  std::optional<GPT> host_model(int64_t max_tokens);
  // After a step: a stop signal on any rank stops every rank after the same step, with a checkpoint to resume from;
  // so does a data file changed under the run (then the run ends in an error naming it). True: stop.
  bool end_step(int64_t step, const Counters& before, Watchdog& watchdog);

  const Config& config_;
  RunSetup setup_;
  RunDir run_;
  RunData data_;
  ModelState state_;
  std::optional<fs::path> checkpoint_;
  int64_t start_step_ = 0;
  std::unique_ptr<Selector> selector_;
  Strategy* current_ = nullptr;
  bool choosing_ = false;     // more than one candidate
  bool independent_ = false;  // ranks that step on their own (ATOM's peers with round deadlines) agree on nothing
  double roof_gflops_ = 0;    // MFU's denominator per rank
};

bool Trainer::start() {
  GPT& model = state_.model;
  Sharding& sharding = *setup_.sharding;
  checkpoint_ = resume_point(config_, run_.path);
  std::optional<TrainerState> resumed;
  if (checkpoint_ && sharding.shards_weights()) {  // each rank reads its range of the weights
    std::vector<float> mine;
    resumed = load_checkpoint(*checkpoint_, model, state_.optimizer, &mine);
    sharding.set_weights(mine.data());
  } else if (checkpoint_) {
    resumed = load_checkpoint(*checkpoint_, model, state_.optimizer);
  }
  if (any_rank(setup_.ranks, stop_signal() != 0)) {
    spdlog::info("stop requested by a signal while the run started: exiting before its first step, with no metrics "
                 "or checkpoint written");
    return false;
  }
  if (resumed) {
    start_step_ = resumed->next_step;
    spdlog::info("resuming from {} (step {}, written by {} rank(s))", checkpoint_->string(), resumed->step,
                 resumed->world_size);
    if (run_.lead) drop_metrics_from_step(run_.path / "metrics.jsonl", start_step_);
  } else {
    if (run_.lead) restart_metrics_aside(run_.path);
    if (sharding.shards_weights()) {  // each rank draws the sequence and keeps its range; the lead gathers them
      sharding.set_weights(
          initial_weights(model.layout(), static_cast<uint64_t>(config_.run.seed), sharding.owned()).data());
      write_weight_ranges(run_.path / "model_init.safetensors", {});
    } else {
      model.init_weights(static_cast<uint64_t>(config_.run.seed));
      if (run_.lead) save_model(run_.path / "model_init.safetensors", model);
    }
  }
  if (run_.lead) write_resolved_config(config_, run_.path);
  spdlog::info("model: {} parameters, {} attention, {} layers x {} wide; memory in use {}", model.num_params(),
               config_.model.attention, config_.model.n_layer, config_.model.n_embd,
               format_bytes(state_.device.in_use()));
  const StrategyEnv env{.groups = setup_.groups,
                        .backend = setup_.backend,
                        .config = config_,
                        .capacity_tokens = setup_.capacity,
                        .placed = state_.placed.get(),
                        .shards = setup_.sharding->model_shards()};
  selector_ = make_selector(env, std::move(setup_.profile), model, run_.path);
  selector_->restore(resumed ? resumed->selector : nlohmann::json());
  if (checkpoint_) {
    const StrategyTensors kept = load_strategy_tensors(*checkpoint_);
    for (const auto& strategy : selector_->strategies()) strategy->restore(kept);
  }
  choosing_ = selector_->strategies().size() > 1;
  independent_ = !choosing_ && selector_->strategies().front()->independent();
  // MFU is quoted against the CPU's sgemm roof measured here, or the GPU's dense peak for the matmuls' precision
  // (null in metrics when that is unknown).
  if (setup_.backend.device() == Device::cpu) {
    roof_gflops_ = measure_sgemm_gflops(0.2);
  } else {
    std::string how;
    roof_gflops_ = device_peak_flops(config_.device.backend, world().node_group()->rank(),
                                     setup_.precision == Precision::bf16, &how) / 1e9;
    spdlog::info("MFU is quoted against the {}", how);
  }
  return true;
}

bool Trainer::train() {
  const int64_t steps = config_.train.steps;
  std::optional<MetricsWriter> metrics;
  if (run_.lead) metrics.emplace(run_.path / "metrics.jsonl");
  ProgressLine progress(steps, run_.lead);
  Watchdog watchdog(setup_.ranks, independent_ ? 0 : config_.run.watchdog_s);  // peers stepping alone wait for none
  if (start_step_ < steps) selector_->prepare(data_.train.batch(start_step_));  // planned before training
  if (ModelShards* shards = setup_.sharding->model_shards()) shards->take_wait_seconds();  // the calibration's
  if (LayerRunner* runner = state_.model.runner()) runner->take_recomputed_layers();           // and its passes'
  for (int64_t step = start_step_; step < steps; ++step) {
    const Counters before{Clock::now(), setup_.groups.bytes_sent(), setup_.groups.alltoall_seconds()};
    const Batch batch = data_.train.batch(step);
    const double lr = learning_rate(config_.train, step);
    const Selector::Choice choice = selector_->choose(batch);
    if (step + 1 < steps) selector_->prepare(data_.train.batch(step + 1));  // planned while this runs
    if (!choice.strategy)
      throw_runtime_error("step {}: {}; raise device.memory_gb{}{}", step, choice.why_none,
                          config_.train.recompute == "none" || config_.train.recompute == "selective"
                              ? ", set train.recompute: auto (a pass recomputes the layers it needs to fit)"
                              : "",
                          choosing_ ? "" : ", or let parallel.strategy: auto spread long documents over a group");
    switch_to(choice.strategy);
    const StepStats stats = train_step(state_.model, state_.optimizer, *choice.strategy, batch, lr, config_.train,
                                       setup_.sharding.get());
    const double seconds = std::chrono::duration<double>(Clock::now() - before.start).count();
    selector_->observe(choice, seconds);
    check_finite(step, stats);
    nlohmann::ordered_json record = step_record(step, lr, stats, seconds, choice, before);
    if (ModelShards* shards = setup_.sharding->model_shards())
      record["zero_wait_ms"] = shards->take_wait_seconds() * 1e3;  // the step's; an evaluation's are dropped below
    if (LayerRunner* runner = state_.model.runner(); runner && (config_.train.recompute == "full" ||
                                                                 config_.train.recompute == "auto"))
      record["recomputed_layers"] = runner->take_recomputed_layers();
    if (data_.eval && ((step + 1) % config_.train.eval_every == 0 || step + 1 == steps)) {
      record["eval_loss"] = evaluate();
      spdlog::info("step {}: train loss {:.4f}, eval loss {:.4f}", step, stats.loss, record["eval_loss"].get<double>());
    }
    if (metrics) metrics->write(record);
    progress.update(step, stats.loss, static_cast<double>(stats.tokens) / seconds, seconds);
    if (end_step(step, before, watchdog)) {
      progress.finish();
      spdlog::info("stop requested by a signal: stopped after step {}; a resumed run continues at step {}", step,
                   step + 1);
      return false;
    }
  }
  progress.finish();
  return true;
}

void Trainer::switch_to(Strategy* next) {
  if (current_ && current_ != next) current_->settle(state_.model, state_.optimizer);
  current_ = next;
}

void Trainer::save(int64_t steps_done) {
  for (const auto& s : selector_->strategies()) s->settle(state_.model, state_.optimizer);  // nothing in flight lost
  const std::vector<OptimizerShard> shards = save_optimizer_shards(steps_done);
  const bool weights_written = write_weight_ranges(checkpoint_build_dir(run_.path, steps_done) / "model.safetensors",
                                                   {{"trident_step", std::to_string(steps_done)}});
  if (run_.lead) {
    StrategyTensors kept;
    for (const auto& s : selector_->strategies()) kept.merge(s->checkpoint_tensors());
    SavedCheckpoint saved = save_checkpoint(run_.path, steps_done, state_.model, state_.optimizer, config_,
                                            setup_.ranks.size(), config_.checkpoint.keep, selector_->state(), kept,
                                            shards, weights_written);
    for (const std::string& warning : saved.warnings) spdlog::warn("{}", warning);
    spdlog::info("checkpoint {} written", saved.dir.string());
  }
  if (!independent_) setup_.ranks.barrier();  // no rank runs ahead of (or exits before) a checkpoint
}

std::vector<OptimizerShard> Trainer::save_optimizer_shards(int64_t steps_done) {
  for (const auto& s : selector_->strategies()) {
    std::vector<OptimizerShard> shards = s->write_optimizer_shards(state_.optimizer, run_.path, steps_done);
    if (!shards.empty()) return shards;
  }
  Sharding& sharding = *setup_.sharding;
  if (!sharding.sharded() || !sharding.holds_lead()) return {};
  return sharding.write_optimizer(run_.path, steps_done, state_.optimizer);
}

void Trainer::check_finite(int64_t step, const StepStats& stats) const {
  if (stats.finite) return;
  if (config_.train.on_nonfinite == "stop")
    throw_runtime_error("step {}: the loss ({}) or gradient norm ({}) is not finite; stopping "
                        "(train.on_nonfinite: skip skips such steps instead)", step, stats.loss, stats.grad_norm);
  spdlog::warn("step {}: non-finite loss ({}) or gradient norm ({}); update skipped", step, stats.loss,
               stats.grad_norm);
}

nlohmann::ordered_json Trainer::step_record(int64_t step, double lr, const StepStats& stats, double seconds,
                                            const Selector::Choice& choice, const Counters& before) const {
  const Strategy& strategy = *choice.strategy;
  const int step_ranks = strategy.independent() ? 1 : setup_.ranks.size();  // what stats cover
  const double mfu = stats.flops / seconds / 1e9 / (roof_gflops_ * step_ranks);
  nlohmann::ordered_json record = {
      {"step", step},
      {"loss", std::isfinite(stats.loss) ? nlohmann::ordered_json(stats.loss) : nullptr},  // JSON has no NaN
      {"lr", lr},
      {"tokens", stats.tokens},
      {"step_ms", seconds * 1e3},
      {"tokens_per_s", static_cast<double>(stats.tokens) / seconds},
      {"mfu", roof_gflops_ > 0 ? nlohmann::ordered_json(mfu) : nullptr},
      {"peak_mem_bytes", state_.device.peak()},
      {"grad_norm", stats.grad_norm},
      {"strategy", strategy.method()},  // what ran: dp, lasp1, lasp2, ulysses, ring, flexsp(-lasp), atom, pipeline
      {"degree", strategy.degree()},
      {"world_size", setup_.ranks.size()},
      {"comm_bytes", setup_.groups.bytes_sent() - before.comm_bytes},  // this rank's, everywhere
      {"alltoall_ms", (setup_.groups.alltoall_seconds() - before.alltoall_s) * 1e3},  // rank 0's in all-to-alls
      {"estimate_ms", nullptr},
  };
  strategy.add_step_metrics(record);
  if (state_.model.weights_on_host()) record["peak_host_bytes"] = state_.host_store.peak();  // the weights' store
  if (run_.lead && !choice.comparison.options.empty()) {
    const Option& chosen = choice.comparison.options[choice.index];
    if (chosen.estimate) {
      record["estimate_ms"] = chosen.estimate->seconds * 1e3;
      record["predicted_ms"] = chosen.predicted_s * 1e3;
    }
    if (choosing_) record["candidates"] = candidates_json(choice.comparison);
  }
  return record;
}

double Trainer::evaluate() {
  double loss = 0, targets = 0;
  for (int64_t i = 0; i < config_.train.eval_batches; ++i) {
    const Batch batch = data_.eval->batch(i);
    const Selector::Choice choice = selector_->choose(batch);
    if (!choice.strategy) throw_runtime_error("evaluation batch {}: {}", i, choice.why_none);
    switch_to(choice.strategy);
    const StepSums sums = choice.strategy->evaluate(state_.model, batch);
    loss += sums.loss_sum;
    targets += sums.targets;
  }
  if (ModelShards* shards = setup_.sharding->model_shards()) shards->take_wait_seconds();  // no step's
  return loss / targets;
}

bool Trainer::write_weight_ranges(const fs::path& path, const std::map<std::string, std::string>& metadata) {
  Sharding& sharding = *setup_.sharding;
  if (!sharding.shards_weights() || !sharding.holds_lead()) return false;
  sharding.write_weights(path, state_.model.layout(), metadata);
  return true;
}

std::optional<GPT> Trainer::host_model(int64_t max_tokens) {
  Sharding& sharding = *setup_.sharding;
  if (!sharding.shards_weights() || !sharding.holds_lead()) return std::nullopt;
  const std::vector<float> gathered = sharding.weights_on_group_lead();
  if (!run_.lead) return std::nullopt;
  std::optional<GPT> whole;
  whole.emplace(config_.model, max_tokens, state_.host_store, cpu_backend(), setup_.precision,
                ModelMemory{.in_source = InSource::gradients});
  std::copy_n(gathered.data(), whole->num_params(), whole->params());
  return whole;
}

bool Trainer::end_step(int64_t step, const Counters& before, Watchdog& watchdog) {
  const std::optional<std::string> data_change = data_.documents->changed();
  int32_t stops[2] = {stop_signal() != 0, data_change.has_value()};
  if (!independent_ && setup_.ranks.size() > 1) setup_.ranks.allreduce_sum(stops, 2, CommType::i32);
  const bool stop = stops[0] > 0, data_changed = stops[1] > 0;
  const bool periodic = config_.checkpoint.every > 0 && (step + 1) % config_.checkpoint.every == 0;
  const double step_s = std::chrono::duration<double>(Clock::now() - before.start).count();
  if (periodic || stop || step + 1 == config_.train.steps || data_changed) {
    const Watchdog::Untimed checkpoint(watchdog);
    save(step + 1);
  }
  watchdog.step_done(step + 1, step_s);
  if (data_changed)
    throw_runtime_error("{}: the run stopped after step {} with a checkpoint; put the data back as it was and "
                        "resume, or start a new run.dir", data_change.value_or("a data file changed on another rank"),
                        step);
  return stop;
}

void Trainer::finish() {
#if TRIDENT_WITH_CUDA
  if (setup_.backend.device() == Device::cuda) {  // what the CUDA libraries took beside the budget, for the GPU check
    int device = 0;
    cudaGetDevice(&device);
    spdlog::info("cuda: device {} holds {:.3f} GiB (cudaMemGetInfo, every process on it); this rank's budget peaked "
                 "at {:.3f} GiB of device.memory_gb = {}",
                 device, static_cast<double>(cuda::device_memory_in_use(device)) / (1 << 30),
                 static_cast<double>(state_.device.peak()) / (1 << 30), config_.device.memory_gb);
  }
#endif
  for (const auto& strategy : selector_->strategies()) strategy->settle(state_.model, state_.optimizer);
  const fs::path final_weights = run_.path / "model_final.safetensors";
  const std::map<std::string, std::string> metadata = {{"trident_step", std::to_string(config_.train.steps)}};
  if (!write_weight_ranges(final_weights, metadata) && run_.lead) save_model(final_weights, state_.model, metadata);
  if (run_.lead) spdlog::info("final weights written to {}", final_weights.string());
  const bool sampling = config_.sample.tokens > 0 && config_.data.kind == "text";
  std::optional<GPT> gathered;
  if (sampling) gathered = host_model(config_.model.max_seq_len);
  if (!run_.lead || !sampling) return;
  // rank 0 samples alone, with the local kernels: its batches carry no group
  std::vector<int32_t> prompt;
  for (unsigned char c : config_.sample.prompt) prompt.push_back(c);
  // a model that cannot run a pass of its own (a pipeline stage's) samples with a whole model on the host, as one
  // without weights of its own (parallel.zero.stage 3) does
  std::optional<GPT>& whole = gathered;
  if (!whole && !state_.model.runs_passes()) {
    whole.emplace(config_.model, config_.model.max_seq_len, state_.host_store, cpu_backend(), setup_.precision);
    std::copy_n(state_.model.params(), state_.model.num_params(), whole->params());
  }
  std::vector<int32_t> out = generate(whole ? *whole : state_.model, prompt, config_.sample.tokens,
                                      config_.sample.temperature, static_cast<uint64_t>(config_.run.seed));
  spdlog::info("sample (temperature {}):\n{}{}", config_.sample.temperature, config_.sample.prompt, decode_bytes(out));
}

}  // namespace

void run_training(const Config& config) {
  install_stop_signal_handlers();  // first: a SIGTERM while the run starts (data, checkpoint) is a stop request too
  check_supported(config);
  Trainer trainer(config);
  if (trainer.start() && trainer.train()) trainer.finish();
}

}  // namespace trident
