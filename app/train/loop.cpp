#include "app/train/train.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <functional>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_io.h"
#include "core/common/run_lock.h"
#include "core/common/test_delay.h"
#include "kernels/common/error.h"
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
#include "app/train/capacity.h"
#include "app/train/device_blas.h"
#include "app/train/sample.h"
#include "app/train/signals.h"
#include "app/train/step.h"
#include "app/train/watchdog.h"
#include "kernels/backends.h"
#include "parallel/atom/placement.h"
#include "parallel/atom/swapper.h"
#include "parallel/comm/staged.h"
#include "parallel/pipeline/stages.h"
#include "parallel/select/configure.h"
#include "parallel/select/registry.h"

#if TRIDENT_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"
#include "parallel/comm/nccl.h"
#endif

namespace trident {

namespace fs = std::filesystem;

namespace {

// What this build can run: the rest is a configuration error, caught before any work starts (what the strategies
// need of the model and the world is checked by check_selection).
void check_supported(const Config& c) {
  if (const BackendStatus status = backend_status(c.device.backend); !status.built || !status.usable)
    throw_config_error("device.backend: '{}' is not available: {}", c.device.backend, status.detail);
  if (c.sample.tokens > 0 && c.data.kind == "text" && c.sample.prompt.empty())
    throw_config_error("sample.prompt: empty; generation needs at least one byte to continue (or sample.tokens: 0)");
}

// Each evaluation batch runs on the strategy the selector picks for it, as a training batch would.
double evaluate(GPT& model, const Batcher& eval_batches, int64_t count, Selector& selector,
                const std::function<void(Strategy*)>& switch_to) {
  double loss = 0, targets = 0;
  for (int64_t i = 0; i < count; ++i) {
    const Batch batch = eval_batches.batch(i);
    const Selector::Choice choice = selector.choose(batch);
    if (!choice.strategy) throw_runtime_error("evaluation batch {}: {}", i, choice.why_none);
    switch_to(choice.strategy);
    const StepSums sums = choice.strategy->evaluate(model, batch);
    loss += sums.loss_sum;
    targets += sums.targets;
  }
  return loss / targets;
}

// True on every rank when `flag` is true on any rank.
bool any_rank(Communicator& comm, bool flag) {
  int32_t v = flag ? 1 : 0;
  if (comm.size() > 1) comm.allreduce_sum(&v, 1, CommType::i32);
  return v > 0;
}

// The checkpoint to resume from, per train.resume, or nothing for a fresh run. A run directory that already holds
// a run is refused rather than overwritten, unless train.resume is auto and the run stopped before its first
// checkpoint (nothing to resume, nothing a restart could overwrite): it starts again from step 0, and rank 0 keeps
// the stopped run's metrics aside (restart_metrics_aside).
std::optional<fs::path> resume_point(const Config& config, const fs::path& run_dir) {
  const std::string& resume = config.train.resume;
  if (resume != "auto" && resume != "never") {
    if (!fs::is_directory(resume))
      throw_config_error("train.resume: checkpoint directory '{}' not found", resume);
    return fs::path(resume);
  }
  std::optional<fs::path> found;
  if (resume == "auto")
    found = find_resume_checkpoint(run_dir, [](const std::string& warning) { spdlog::warn("{}", warning); });
  std::error_code error;
  const bool no_checkpoints = !fs::exists(run_dir / "checkpoints") || fs::is_empty(run_dir / "checkpoints", error);
  if (!found && fs::exists(run_dir / "metrics.jsonl") && !(resume == "auto" && no_checkpoints))
    throw_config_error("run.dir '{}' already holds a run (metrics.jsonl) {}: choose another run.dir "
                       "(--set run.dir=...) or move the old run away",
                       run_dir.string(),
                       resume == "never" ? "and train.resume is never" : "without a usable checkpoint to resume");
  return found;
}

// A fresh start in a run directory whose run stopped before its first checkpoint: its metrics.jsonl moves to the
// first free metrics.jsonl.stopped-N, so the new run's steps are not mixed with the old ones and nothing is lost.
void restart_metrics_aside(const fs::path& run_dir) {
  const fs::path metrics = run_dir / "metrics.jsonl";
  if (!fs::exists(metrics)) return;
  fs::path aside;
  for (int n = 1; fs::exists(aside = run_dir / fmt::format("metrics.jsonl.stopped-{}", n)); ++n) {
  }
  std::error_code error;
  fs::rename(metrics, aside, error);
  if (error)
    throw_runtime_error("cannot move '{}' aside to '{}': {}", metrics.string(), aside.string(), error.message());
  spdlog::warn("run.dir '{}' holds a run that stopped before its first checkpoint: starting again from step 0 "
               "(train.resume: auto); its metrics are kept in {}", run_dir.string(), aside.filename().string());
}

// The communicator of `host`'s members for buffers in the backend's memory (collective over `host`): with
// device.comm: host, the buffers staged through host copies over `host` (on the CPU backend too, where the copies
// are memcpy: how CI runs the staged path end to end); else NCCL on the GPU, ordered after the backend's compute
// stream, and nullptr on the CPU, whose buffers `host` itself takes.
std::unique_ptr<Communicator> device_communicator([[maybe_unused]] Communicator& host, Backend& backend,
                                                  const std::string& comm) {
  if (comm == "host") return make_staged_communicator(host, backend);
  if (backend.device() != Device::cuda) return nullptr;
#if TRIDENT_WITH_CUDA
  int device = 0;
  cudaGetDevice(&device);
  return make_nccl_communicator(host, device, cuda::compute_stream(backend));
#else
  return nullptr;  // unreachable: a build without CUDA has no cuda backend
#endif
}

// device.memory_gb must fit the GPU beside what the CUDA libraries hold, checked on every rank at once: after this
// node's ranks have their CUDA contexts, cuBLAS workspaces and NCCL communicators (made with the backend and the run's
// groups) and before any allocates its budget. A budget too large is then a configuration error now, not an
// out-of-memory error in a library mid-run.
void check_device_memory(const Config& config, Backend& backend, Communicator& ranks, int64_t tokens) {
  if (backend.device() != Device::cuda) return;
  Communicator& node = *ranks.node_group();
  node.barrier();
  const std::string shortfall = device_memory_shortfall(
      config.device.backend, node.rank(), node.size(), config.device.memory_gb, gib_to_bytes(config.device.memory_gb),
      tokens, static_cast<int>(config.model.n_embd), static_cast<int>(4 * config.model.n_embd),  // the MLP's bias
      model_layout(config.model).num_params);
  int32_t short_ranks = shortfall.empty() ? 0 : 1;
  ranks.allreduce_sum(&short_ranks, 1, CommType::i32);
  if (!shortfall.empty()) throw_config_error("{}", shortfall);
  if (short_ranks > 0)
    throw_config_error("device.memory_gb = {} does not fit the GPU of {} other rank(s); their logs say by how much",
                       config.device.memory_gb, short_ranks);
}

// One metrics entry per candidate the selector compared: its estimate, or why it could not run the batch.
nlohmann::ordered_json candidates_json(const Comparison& comparison) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Option& o : comparison.options) {
    nlohmann::ordered_json c = {{"strategy", o.candidate->method()}, {"sp_size", o.candidate->sp_size()}};
    if (!o.feasibility.ok) c["infeasible"] = o.feasibility.reason;
    if (o.estimate) {
      c["estimate_ms"] = o.estimate->seconds * 1e3;
      c["predicted_ms"] = o.predicted_s * 1e3;
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

void run_training(const Config& config) {
  // First: a SIGTERM while the run starts (data, checkpoint) is a stop request too, not a silent death.
  install_stop_signal_handlers();
  check_supported(config);
  Backend& backend = backend_for(config.device.backend, world().node_group()->rank());
  if (config.device.comm == "nccl") check_ranks_per_gpu(config.device.backend, world().node_group()->size());
  Communicator& ranks = world();
  // The communicators of every group the strategies may use, made now (collective). Gradients are reduced where they
  // live: over MPI on the host, over NCCL on the GPU (bootstrapped over MPI) or staged through the host.
  RunGroups groups(ranks,
                   [&](Communicator& host) { return device_communicator(host, backend, config.device.comm); },
                   candidate_degrees(config, ranks.size()));
  const Precision precision = precision_named(config.train.precision);
  // A swapped model (ATOM) holds a pass of placement->tokens; a resident one what device.memory_gb leaves.
  // With parallel.select.profile (its compute fit and network.host_to_device), ATOM takes the swap planner's
  // partition and logs its prediction.
  std::optional<AtomPlacement> placement;
  if (swaps(config)) {
    std::optional<cost::Profile> link;
    if (!config.parallel.select_profile.empty()) link = cost::read_profile(config.parallel.select_profile);
    placement = place_atom(config, precision, backend.device(), link ? &*link : nullptr,
                           world().node_group()->size());
  }
  // A pipeline stage (parallel.strategy: pipeline, checked by candidate_degrees above) holds its own layers'
  // activations.
  std::optional<PipelineStage> stage;
  if (config.parallel.strategy == "pipeline") stage = pipeline_stage(config.model, ranks.size(), ranks.rank());
  const int64_t capacity = placement ? placement->tokens
                                     : token_capacity(config, precision, backend.device(), stage ? &*stage : nullptr);
  std::optional<cost::Profile> profile = check_selection(config, groups, capacity);
  check_device_memory(config, backend, ranks, capacity);
  const bool lead = ranks.rank() == 0;  // rank 0 writes the run's files
  const fs::path run_dir = config.run.dir;
  std::error_code error;
  fs::create_directories(run_dir, error);
  if (error) throw_runtime_error("cannot create run.dir '{}': {}", run_dir.string(), error.message());
  // One run at a time in run.dir: rank 0 holds the lock for the job (until it ends, however it ends), and every rank
  // learns whether it got it.
  std::optional<RunLock> run_lock;
  std::array<char, 256> holder{};
  if (lead) {
    std::string who;
    run_lock = RunLock::try_acquire(run_dir, &who);
    std::copy_n(who.begin(), std::min(who.size(), holder.size() - 1), holder.begin());
  }
  if (ranks.size() > 1) ranks.broadcast(holder.data(), holder.size(), CommType::u8, 0);
  if (holder[0] != '\0')
    throw_config_error("run.dir '{}' is in use by another run ({}): wait for it to end, or choose another run.dir",
                       run_dir.string(), holder.data());
  setup_logging(run_dir, ranks.rank());
  if (config.device.threads > 0) omp_set_num_threads(static_cast<int>(config.device.threads));
  spdlog::info("run '{}' in {}: {} rank(s) x {} thread(s), {} backend", config.run.name, run_dir.string(), ranks.size(),
               omp_get_max_threads(), backend.name());
  use_configured_blas(config.device.blas, config.device.gemm_threads);

  std::unique_ptr<DocumentSource> documents = open_documents(config);
  test_delay("TRIDENT_TEST_STARTUP_DELAY_MS");
  Batcher train_batches(*documents, config, Split::train);
  std::optional<Batcher> eval_batches;
  if (config.train.eval_every > 0) eval_batches.emplace(*documents, config, Split::eval);
  spdlog::info("data: {}; {} train batches in the first epoch", documents->describe(), train_batches.steps_in_epoch(0));

  Allocator allocator({.name = backend.name(),
                       .budget_bytes = gib_to_bytes(config.device.memory_gb),
                       .resource = &backend.memory()});
  // A swapped model's weights, gradients and AdamW state live in the host store, counted against its own budget.
  Allocator host_store({.name = "host store",
                         .budget_bytes = static_cast<std::size_t>(host_budget_bytes(config)),
                         .resource = &backend.staging_memory()});  // pinned on cuda: the copies run asynchronously
  const Swapping swapping{.segment_starts = placement ? placement->segment_starts : std::vector<int>{},
                          .store = &host_store,
                          .recomputed = placement ? placement->recomputed : 0,
                          .offloaded = placement ? placement->offloaded : 0,
                          .round_tokens = placement ? placement->round_tokens : 0};
  GPT model(config.model, capacity, allocator, backend, precision, placement ? &swapping : nullptr,
            stage ? &*stage : nullptr);
  std::optional<LayerSwapper> swapper;
  if (placement)
    swapper.emplace(model, allocator,
                    SwapOptions{.slots = placement->slots,
                                .copy_bytes_per_s = config.parallel.atom_emulate_copy_gb_per_s * 1e9});
  if (precision == Precision::bf16 && backend.device() == Device::cpu)
    spdlog::warn("train.precision: bf16 on the cpu backend is emulated (bf16 storage, fp32 arithmetic, a copy per op): "
                 "slower than fp32, for checking the bf16 model; use device.backend: cuda for speed");
  AdamW optimizer(model.layout(), config.train, placement ? host_store : allocator, model.store_backend());
  if (placement) {
    const std::vector<int>& starts = placement->segment_starts;
    const bool segment_major = placement->round_tokens > 0;  // every sub-model but the last stashed
    const int moving = placement->moving_sub_models();
    spdlog::info("atom: {} sub-model(s) {} in {} device slot(s), {} tokens a pass{}, activations {}; device {} of {} "
                 "(device.memory_gb), host store {} of {}",
                 starts.size(), cost::describe_swaps(starts, static_cast<int>(config.model.n_layer)),
                 std::min<std::size_t>(starts.size(), placement->slots), capacity,
                 segment_major ? fmt::format(" (a batch's {} passes run sub-model by sub-model in {} round(s), each "
                                             "sub-model loading once a round)", placement->passes, placement->runs)
                               : "",
                 placement->recomputed > 0
                     ? fmt::format("recomputed in the first {} sub-model(s), kept in the rest", placement->recomputed)
                 : moving > 0
                     ? fmt::format("offloaded to the host in the first {} sub-model(s) and back for their backward, "
                                   "kept in the rest", moving)
                     : std::string("kept"),
                 format_bytes(static_cast<std::size_t>(placement->device_bytes)), format_bytes(allocator.budget()),
                 format_bytes(host_store.in_use()), format_bytes(host_store.budget()));
    if (const std::optional<cost::SwapPlan>& p = placement->predicted)
      spdlog::info("atom: predicted from {}: {} {:.3f} s, {:.3f} s of it copies left exposed",
                   config.parallel.select_profile, placement->runs == 1 ? "step" : segment_major ? "first round"
                                                                                                 : "first pass",
                   p->step_s(), p->exposed_copy_s);
  } else {
    const PipelineStage* layers = stage ? &*stage : nullptr;
    const int64_t fixed = GPT::memory_bytes(config.model, 0, precision, backend.device(), nullptr, layers);
    spdlog::info("activations: {} tokens per rank (device.memory_gb = {}: model, gradients and optimizer state {}, "
                 "activations {})",
                 capacity, config.device.memory_gb,
                 format_bytes(static_cast<std::size_t>(fixed + AdamW::memory_bytes(model.num_params()))),
                 format_bytes(static_cast<std::size_t>(
                     GPT::memory_bytes(config.model, capacity, precision, backend.device(), nullptr, layers) - fixed)));
    if (stage)
      spdlog::info("pipeline: stage {} of {}, layers [{}, {})", ranks.rank(), ranks.size(), stage->first_layer,
                   stage->end_layer);
  }

  int64_t start_step = 0;
  nlohmann::json selector_state;
  const std::optional<fs::path> checkpoint = resume_point(config, run_dir);
  std::optional<TrainerState> resumed;
  if (checkpoint) resumed = load_checkpoint(*checkpoint, model, optimizer);
  // Stopped while starting: nothing of the run is written yet, and nothing needs to be.
  if (any_rank(ranks, stop_signal() != 0)) {
    spdlog::info("stop requested by a signal while the run started: exiting before its first step, with no metrics "
                 "or checkpoint written");
    return;
  }
  if (resumed) {
    start_step = resumed->next_step;
    selector_state = resumed->selector;
    spdlog::info("resuming from {} (step {}, written by {} rank(s))", checkpoint->string(), resumed->step,
                 resumed->world_size);
    if (lead) drop_metrics_from_step(run_dir / "metrics.jsonl", start_step);
  } else {
    if (lead) restart_metrics_aside(run_dir);
    model.init_weights(static_cast<uint64_t>(config.run.seed));
    if (lead) save_model(run_dir / "model_init.safetensors", model);
  }
  if (lead) write_resolved_config(config, run_dir);
  spdlog::info("model: {} parameters, {} attention, {} layers x {} wide; memory in use {}", model.num_params(),
               config.model.attention, config.model.n_layer, config.model.n_embd, format_bytes(allocator.in_use()));
  const StrategyEnv env{.groups = groups,
                        .backend = backend,
                        .config = config,
                        .capacity_tokens = capacity,
                        .swapper = swapper ? &*swapper : nullptr};
  const std::unique_ptr<Selector> selector = make_selector(env, std::move(profile), model, run_dir);
  selector->restore(selector_state);
  if (checkpoint) {
    const StrategyTensors kept = load_strategy_tensors(*checkpoint);
    for (const auto& strategy : selector->strategies()) strategy->restore(kept);
  }
  const bool choosing = selector->strategies().size() > 1;
  // Ranks that step on their own (ATOM's peers with round deadlines) agree on nothing per step.
  const bool independent = !choosing && selector->strategies().front()->independent();

  // Leaving a strategy settles it first: ATOM's peers hold replicas of their own between rounds, and every other
  // strategy needs them equal (a synchronization: the switching cost of ATOM).
  Strategy* current = nullptr;
  auto switch_to = [&](Strategy* next) {
    if (current && current != next) current->settle(model, optimizer);
    current = next;
  };
  auto save = [&](int64_t steps_done) {
    for (const auto& strategy : selector->strategies()) strategy->settle(model, optimizer);  // nothing in flight is lost
    if (lead) {
      StrategyTensors kept;
      for (const auto& strategy : selector->strategies()) kept.merge(strategy->checkpoint_tensors());
      SavedCheckpoint saved = save_checkpoint(run_dir, steps_done, model, optimizer, config, ranks.size(),
                                              config.checkpoint.keep, selector->state(), kept);
      for (const std::string& warning : saved.warnings) spdlog::warn("{}", warning);
      spdlog::info("checkpoint {} written", saved.dir.string());
    }
    if (!independent) ranks.barrier();  // no rank runs ahead of (or exits before) a checkpoint
  };

  // MFU is quoted against the CPU's sgemm roof measured here, or the GPU's dense peak for the matmuls' precision
  // (null in metrics when that is unknown).
  double roof_gflops = 0;
  if (backend.device() == Device::cpu) {
    roof_gflops = measure_sgemm_gflops(0.2);
  } else {
    std::string how;
    roof_gflops = device_peak_flops(config.device.backend, world().node_group()->rank(),
                                    precision == Precision::bf16, &how) / 1e9;
    spdlog::info("MFU is quoted against the {}", how);
  }
  std::optional<MetricsWriter> metrics;
  if (lead) metrics.emplace(run_dir / "metrics.jsonl");
  ProgressLine progress(config.train.steps, lead);
  Watchdog watchdog(ranks, independent ? 0 : config.run.watchdog_s);  // peers that step alone wait for no one
  using clock = std::chrono::steady_clock;
  if (start_step < config.train.steps) selector->prepare(train_batches.batch(start_step));  // planned before training
  for (int64_t step = start_step; step < config.train.steps; ++step) {
    const auto start = clock::now();
    const int64_t comm_bytes_before = groups.bytes_sent();
    const double alltoall_s_before = groups.alltoall_seconds();
    const Batch batch = train_batches.batch(step);
    const double lr = learning_rate(config.train, step);
    const Selector::Choice choice = selector->choose(batch);
    if (step + 1 < config.train.steps) selector->prepare(train_batches.batch(step + 1));  // planned while this runs
    if (!choice.strategy)
      throw_runtime_error("step {}: {}; raise device.memory_gb{}", step, choice.why_none,
                          choosing ? "" : ", or let parallel.strategy: auto spread long documents over a group");
    switch_to(choice.strategy);
    const StepStats stats = train_step(model, optimizer, *choice.strategy, batch, lr, config.train);
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    selector->observe(choice, seconds);
    if (!stats.finite) {
      if (config.train.on_nonfinite == "stop")
        throw_runtime_error("step {}: the loss ({}) or gradient norm ({}) is not finite; stopping "
                            "(train.on_nonfinite: skip skips such steps instead)", step, stats.loss, stats.grad_norm);
      spdlog::warn("step {}: non-finite loss ({}) or gradient norm ({}); update skipped", step, stats.loss,
                   stats.grad_norm);
    }

    const int step_ranks = choice.strategy->independent() ? 1 : ranks.size();  // what stats cover
    nlohmann::ordered_json record = {
        {"step", step},
        {"loss", std::isfinite(stats.loss) ? nlohmann::ordered_json(stats.loss) : nullptr},  // JSON has no NaN
        {"lr", lr},
        {"tokens", stats.tokens},
        {"step_ms", seconds * 1e3},
        {"tokens_per_s", static_cast<double>(stats.tokens) / seconds},
        {"mfu", roof_gflops > 0 ? nlohmann::ordered_json(stats.flops / seconds / 1e9 / (roof_gflops * step_ranks))
                                : nullptr},
        {"peak_mem_bytes", allocator.peak()},
        {"grad_norm", stats.grad_norm},
        {"strategy", choice.strategy->method()},  // dp, lasp1, lasp2, ulysses, ring, flexsp(-lasp), atom: what ran
        {"sp_size", choice.strategy->sp_size()},
        {"world_size", ranks.size()},
        {"comm_bytes", groups.bytes_sent() - comm_bytes_before},  // this rank's, everywhere
        {"alltoall_ms", (groups.alltoall_seconds() - alltoall_s_before) * 1e3},  // rank 0's time in all-to-alls
        {"estimate_ms", nullptr},
    };
    choice.strategy->add_step_metrics(record);
    if (placement) record["peak_host_bytes"] = host_store.peak();  // a swapped model's store
    if (lead && !choice.comparison.options.empty()) {
      const Option& chosen = choice.comparison.options[choice.index];
      if (chosen.estimate) {
        record["estimate_ms"] = chosen.estimate->seconds * 1e3;
        record["predicted_ms"] = chosen.predicted_s * 1e3;
      }
      if (choosing) record["candidates"] = candidates_json(choice.comparison);
    }
    const bool last = step + 1 == config.train.steps;
    if (eval_batches && ((step + 1) % config.train.eval_every == 0 || last)) {
      const double eval_loss = evaluate(model, *eval_batches, config.train.eval_batches, *selector, switch_to);
      record["eval_loss"] = eval_loss;
      spdlog::info("step {}: train loss {:.4f}, eval loss {:.4f}", step, stats.loss, eval_loss);
    }
    if (metrics) metrics->write(record);
    progress.update(step, stats.loss, static_cast<double>(stats.tokens) / seconds, seconds);

    // A stop signal on any rank stops every rank after the same step, with a checkpoint to resume from; so does a
    // data file changed under the run (then the run ends in an error naming it).
    const std::optional<std::string> data_change = documents->changed();
    int32_t stops[2] = {stop_signal() != 0, data_change.has_value()};
    if (!independent && ranks.size() > 1) ranks.allreduce_sum(stops, 2, CommType::i32);
    const bool stop = stops[0] > 0, data_changed = stops[1] > 0;
    const bool periodic = config.checkpoint.every > 0 && (step + 1) % config.checkpoint.every == 0;
    if (periodic || stop || last || data_changed) save(step + 1);
    watchdog.step_done(step + 1, std::chrono::duration<double>(clock::now() - start).count());
    if (data_changed)
      throw_runtime_error("{}: the run stopped after step {} with a checkpoint; put the data back as it was and "
                          "resume, or start a new run.dir", data_change.value_or("a data file changed on another rank"),
                          step);
    if (stop) {
      progress.finish();
      spdlog::info("stop requested by a signal: stopped after step {}; a resumed run continues at step {}", step,
                   step + 1);
      return;
    }
  }
  progress.finish();
#if TRIDENT_WITH_CUDA
  if (backend.device() == Device::cuda) {  // what the CUDA libraries took beside the budget, for the GPU check
    int device = 0;
    cudaGetDevice(&device);
    spdlog::info("cuda: device {} holds {:.3f} GiB (cudaMemGetInfo, every process on it); this rank's budget peaked "
                 "at {:.3f} GiB of device.memory_gb = {}",
                 device, static_cast<double>(cuda::device_memory_in_use(device)) / (1 << 30),
                 static_cast<double>(allocator.peak()) / (1 << 30), config.device.memory_gb);
  }
#endif
  for (const auto& strategy : selector->strategies()) strategy->settle(model, optimizer);
  if (!lead) return;
  save_model(run_dir / "model_final.safetensors", model, {{"trident_step", std::to_string(config.train.steps)}});
  spdlog::info("final weights written to {}", (run_dir / "model_final.safetensors").string());
  if (config.sample.tokens > 0 && config.data.kind == "text") {
    // rank 0 samples alone, with the local kernels: its batches carry no group
    std::vector<int32_t> prompt;
    for (unsigned char c : config.sample.prompt) prompt.push_back(c);
    std::optional<GPT> whole;  // a pipeline stage computes some layers: sample with the whole model on the host
    if (stage) {
      whole.emplace(config.model, config.model.max_seq_len, host_store, cpu_backend(), precision);
      std::copy_n(model.params(), model.num_params(), whole->params());
    }
    std::vector<int32_t> out = generate(whole ? *whole : model, prompt, config.sample.tokens,
                                        config.sample.temperature, static_cast<uint64_t>(config.run.seed));
    spdlog::info("sample (temperature {}):\n{}{}", config.sample.temperature, config.sample.prompt, decode_bytes(out));
  }
}

}  // namespace trident
