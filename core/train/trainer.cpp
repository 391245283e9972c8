#include "core/train/trainer.h"

#include <omp.h>

#include <algorithm>
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
#include "core/train/signals.h"
#include "core/train/step.h"
#include "kernels/backends.h"
#include "parallel/comm/node_layout.h"
#include "parallel/dp/data_parallel.h"
#include "parallel/lasp/auto_variant.h"
#include "parallel/lasp/model_op.h"
#include "parallel/sp/model_op.h"

#if TRIDENT_WITH_CUDA
#include <cuda_runtime.h>

#include "parallel/comm/nccl.h"
#endif

namespace trident {

namespace fs = std::filesystem;

namespace {

TokenBatch view(const Batch& b) {
  return {b.tokens.data(), b.targets.data(), b.positions.data(), b.cu_seqlens.data(), b.num_tokens(),
          b.num_sequences()};
}

// What this build can run: the rest is a configuration error, caught before any work starts.
void check_supported(const Config& c) {
  if (const BackendStatus status = backend_status(c.device.backend); !status.built || !status.usable)
    throw_config_error("device.backend: '{}' is not available: {}", c.device.backend, status.detail);
  if (c.sample.tokens > 0 && c.data.kind == "text" && c.sample.prompt.empty())
    throw_config_error("sample.prompt: empty; generation needs at least one byte to continue (or sample.tokens: 0)");
  if (c.parallel.strategy == "flexsp" || c.parallel.strategy == "atom")
    throw_config_error("parallel.strategy: '{}' is not available yet; use 'auto' (data parallelism) or 'lasp'",
                       c.parallel.strategy);
  if (c.parallel.strategy == "lasp") {
    const std::string& method = c.parallel.sp_method;
    if (method == "lasp" && c.model.attention != "linear")
      throw_config_error("parallel.strategy: 'lasp' with parallel.sp.method: 'lasp' parallelises linear attention, "
                         "but model.attention is '{}' (use model.attention: linear, parallel.sp.method: ulysses or "
                         "ring, or parallel.strategy: auto)",
                         c.model.attention);
    if (method == "ring" && c.model.attention != "softmax")
      throw_config_error("parallel.sp.method: 'ring': Ring Attention here is softmax-only, but model.attention is "
                         "'{}' (use parallel.sp.method: lasp or ulysses)",
                         c.model.attention);
    if (method == "ulysses" && c.model.n_head % c.parallel.sp_size != 0)
      throw_config_error("parallel.sp.method: 'ulysses' splits the heads over the group, but model.n_head = {} "
                         "does not divide by parallel.sp.size = {}",
                         c.model.n_head, c.parallel.sp_size);
  }
}

// parallel.lasp.variant; `auto` times both state exchanges on this SP group (parallel/lasp/auto_variant.h) and
// takes the faster, which every rank of the group agrees on.
LaspVariant lasp_variant(const Config& c, Communicator& sp) {
  if (c.parallel.lasp_variant == "ring") return LaspVariant::ring;
  if (c.parallel.lasp_variant == "allgather") return LaspVariant::allgather;
  const int64_t D = c.model.n_embd / c.model.n_head, state_floats = c.model.n_head * D * D;
  const LaspVariantTimes times = measure_lasp_variants(sp, state_floats);
  spdlog::info("parallel.lasp.variant: auto chose {}: one forward's state exchange of {} KiB states, measured on "
               "this group: ring chain {:.3f} ms, allgather {:.3f} ms",
               lasp_variant_name(times.faster()), state_floats * 4 / 1024, times.ring_s * 1e3,
               times.allgather_s * 1e3);
  return times.faster();
}

// The ranks as this run lays them out: `replicas` data-parallel copies of a sequence-parallel group of `sp_size`
// ranks (without sequence parallelism, groups of one: plain data parallelism). Gradients are summed over every rank.
// Groups are consecutive ranks in node-major order, so a group stays on one node (shared memory) whenever sp_size
// divides each node's rank count, however mpirun placed the ranks.
struct RankLayout {
  Communicator* sp = nullptr;  // this rank's sequence-parallel group; nullptr without sequence parallelism
  int replicas = 1, replica = 0;
};

RankLayout rank_layout(const Config& c, Communicator& world) {
  const int sp_size = c.parallel.strategy == "lasp" ? static_cast<int>(c.parallel.sp_size) : 1;
  if (world.size() % sp_size != 0)
    throw_config_error("parallel.sp.size = {} does not divide the {} ranks of this run", sp_size, world.size());
  RankLayout layout{nullptr, world.size() / sp_size, world.rank() / sp_size};
  if (c.parallel.strategy != "lasp") return layout;
  const std::vector<int> order = node_layout(world).node_major();
  const int position = static_cast<int>(std::find(order.begin(), order.end(), world.rank()) - order.begin());
  layout.replica = position / sp_size;
  layout.sp = world.split(layout.replica, position);
  return layout;
}

// One micro-batch as this rank runs it: the whole micro-batch, or under sequence parallelism this rank's contiguous
// token slice of it (lasp_shard: the layout of parallel/sp/shard.h, shared by all three methods) together with the
// whole micro-batch's document boundaries.
struct LocalBatch {
  Batch tokens;
  std::vector<int32_t> global_cu_seqlens;  // empty without sequence parallelism
  GlobalBatch global;
  TokenBatch view() {
    TokenBatch v = trident::view(tokens);
    if (global_cu_seqlens.empty()) return v;
    global.cu_seqlens = global_cu_seqlens.data();
    v.global = &global;
    return v;
  }
};

LocalBatch sp_slice(Batch micro, Communicator& sp) {
  const LaspShard shard = lasp_shard(micro.cu_seqlens.data(), micro.num_sequences(), micro.num_tokens(), sp.size(),
                                     sp.rank());
  LocalBatch local;
  auto range = [&](const std::vector<int32_t>& v) {
    return std::vector<int32_t>(v.begin() + shard.begin, v.begin() + shard.end);
  };
  local.tokens.tokens = range(micro.tokens);
  local.tokens.targets = range(micro.targets);
  // Each token's index inside its document, as in the whole micro-batch: a slice starting mid-document keeps its
  // tokens' true positions (what learned position embeddings read), not its local piece offsets.
  local.tokens.positions = range(micro.positions);
  local.tokens.cu_seqlens = shard.n_pieces() > 0 ? shard.cu_seqlens : std::vector<int32_t>{0};
  local.global.num_sequences = micro.num_sequences();
  local.global.num_tokens = micro.num_tokens();
  local.global_cu_seqlens = std::move(micro.cu_seqlens);
  return local;
}

// This rank's share of a global batch: its replica's share (contiguous sequences, token counts balanced across the
// replicas) cut into micro-batches, empty ones dropped; under sequence parallelism each micro-batch is then cut into
// the group's token slices. Every rank of a sequence-parallel group gets the same micro-batches, so they run their
// ops together.
std::vector<LocalBatch> local_micro_batches(const Batch& global, const RankLayout& layout, int64_t micro_batches) {
  const Batch mine = std::move(split_micro_batches(global, layout.replicas)[layout.replica]);
  std::vector<LocalBatch> out;
  for (Batch& mb : split_micro_batches(mine, static_cast<int>(micro_batches))) {
    if (mb.num_tokens() == 0) continue;
    out.push_back(layout.sp ? sp_slice(std::move(mb), *layout.sp) : LocalBatch{std::move(mb), {}, {}});
  }
  return out;
}

std::vector<TokenBatch> views(std::vector<LocalBatch>& batches) {
  std::vector<TokenBatch> out;
  for (LocalBatch& b : batches) out.push_back(b.view());
  return out;
}

double evaluate(GPT& model, const Batcher& eval_batches, int64_t count, const RankLayout& layout, DataParallel& dp) {
  double totals[2] = {0, 0};  // loss sum, target tokens
  for (int64_t i = 0; i < count; ++i) {
    std::vector<LocalBatch> micro = local_micro_batches(eval_batches.batch(i), layout, 1);
    for (const TokenBatch& mb : views(micro)) {
      totals[0] += model.forward_loss(mb);
      totals[1] += static_cast<double>(count_targets(mb));
    }
  }
  dp.sum(totals, 2);
  return totals[0] / totals[1];
}

// The checkpoint to resume from, per train.resume, or nothing for a fresh run. A run directory that already holds
// a run but no usable checkpoint is refused rather than overwritten.
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
  if (!found && fs::exists(run_dir / "metrics.jsonl"))
    throw_config_error("run.dir '{}' already holds a run (metrics.jsonl) {}: choose another run.dir "
                       "(--set run.dir=...) or move the old run away",
                       run_dir.string(),
                       resume == "never" ? "and train.resume is never" : "without a usable checkpoint to resume");
  return found;
}

// The NCCL communicator of `host`'s members on this process's device when `backend` is the GPU (collective over
// `host`); nullptr on the CPU, whose buffers `host` itself takes.
std::unique_ptr<Communicator> device_communicator([[maybe_unused]] Communicator& host, Backend& backend) {
  if (backend.device() != Device::cuda) return nullptr;
#if TRIDENT_WITH_CUDA
  int device = 0;
  cudaGetDevice(&device);
  return make_nccl_communicator(host, device);
#else
  return nullptr;  // unreachable: a build without CUDA has no cuda backend
#endif
}

}  // namespace

void run_training(const Config& config) {
  check_supported(config);
  Backend& backend = backend_for(config.device.backend, world().node_group()->rank());
  // Gradients are reduced where they live: over MPI on the host, over NCCL on the GPU (bootstrapped over MPI).
  std::unique_ptr<Communicator> device_comm = device_communicator(world(), backend);
  DataParallel dp(world(), device_comm ? *device_comm : world());
  const bool lead = dp.rank() == 0;  // rank 0 writes the run's files
  const fs::path run_dir = config.run.dir;
  std::error_code error;
  fs::create_directories(run_dir, error);
  if (error) throw_runtime_error("cannot create run.dir '{}': {}", run_dir.string(), error.message());
  setup_logging(run_dir, dp.rank());
  if (config.device.threads > 0) omp_set_num_threads(static_cast<int>(config.device.threads));
  spdlog::info("run '{}' in {}: {} rank(s) x {} thread(s), {} backend", config.run.name, run_dir.string(), dp.size(),
               omp_get_max_threads(), backend.name());

  std::unique_ptr<DocumentSource> documents = open_documents(config);
  Batcher train_batches(*documents, config, Split::train);
  std::optional<Batcher> eval_batches;
  if (config.train.eval_every > 0) eval_batches.emplace(*documents, config, Split::eval);
  spdlog::info("data: {}; {} train batches in the first epoch", documents->describe(), train_batches.steps_in_epoch(0));

  Allocator allocator({.name = backend.name(),
                       .budget_bytes = gib_to_bytes(config.device.memory_gb),
                       .resource = &backend.memory()});
  const RankLayout layout = rank_layout(config, world());
  // A micro-batch holds at most train.batch_tokens tokens; under sequence parallelism a rank holds at most 1/sp_size
  // of one, so its activations (what bounds the longest sequence) shrink with the group.
  const int64_t sp_size = layout.sp ? layout.sp->size() : 1;
  const Precision precision = precision_named(config.train.precision);
  GPT model(config.model, (config.train.batch_tokens + sp_size - 1) / sp_size, allocator, backend, precision);
  if (precision == Precision::bf16 && backend.device() == Device::cpu)
    spdlog::warn("train.precision: bf16 on the cpu backend is emulated (bf16 storage, fp32 arithmetic, a copy per op): "
                 "slower than fp32, for checking the bf16 model; use device.backend: cuda for speed");
  AdamW optimizer(model.layout(), config.train, allocator, backend);
  // Ulysses and Ring Attention exchange activations, which live in the backend's memory: on the GPU their group
  // talks NCCL. LASP's states are small and combined on the host, so LASP keeps the MPI group.
  std::unique_ptr<Communicator> sp_device_comm;
  if (layout.sp && config.parallel.sp_method != "lasp") sp_device_comm = device_communicator(*layout.sp, backend);
  Communicator* activation_comm = sp_device_comm ? sp_device_comm.get() : layout.sp;
  if (layout.sp) {
    const std::string& method = config.parallel.sp_method;
    const LaspVariant variant = method == "lasp" ? lasp_variant(config, *layout.sp) : LaspVariant::ring;
    const AttentionType type = config.model.attention == "linear" ? AttentionType::linear : AttentionType::softmax;
    const int H = static_cast<int>(config.model.n_head), D = static_cast<int>(config.model.n_embd / H);
    // Ring Attention keeps nothing between calls: its layers share one set of scratch buffers.
    const auto ring_scratch = method == "ring" ? std::make_shared<RingCache>(backend) : nullptr;
    model.set_attention_ops([&](int) {
      if (method == "ulysses") return make_ulysses_op(*activation_comm, backend, type, H, D);
      if (method == "ring") return make_ring_op(*activation_comm, ring_scratch, type, H, D);
      return make_lasp_op(*layout.sp, backend, variant, H, D);
    });
    spdlog::info("sequence parallelism: {} replica(s) x sequence-parallel groups of {} ranks, {}; this rank's "
                 "group: ranks {}",
                 layout.replicas, layout.sp->size(),
                 method == "lasp" ? std::string(lasp_variant_name(variant)) : method, layout.sp->members());
  }

  int64_t start_step = 0;
  if (std::optional<fs::path> checkpoint = resume_point(config, run_dir)) {
    const TrainerState state = load_checkpoint(*checkpoint, model, optimizer);
    start_step = state.next_step;
    spdlog::info("resuming from {} (step {}, written by {} rank(s))", checkpoint->string(), state.step,
                 state.world_size);
    if (lead) drop_metrics_from_step(run_dir / "metrics.jsonl", start_step);
  } else {
    model.init_weights(static_cast<uint64_t>(config.run.seed));
    if (lead) save_model(run_dir / "model_init.safetensors", model);
  }
  if (lead) write_resolved_config(config, run_dir);
  spdlog::info("model: {} parameters, {} attention, {} layers x {} wide; memory in use {}", model.num_params(),
               config.model.attention, config.model.n_layer, config.model.n_embd, format_bytes(allocator.in_use()));

  auto save = [&](int64_t steps_done) {
    if (lead) {
      SavedCheckpoint saved = save_checkpoint(run_dir, steps_done, model, optimizer, config, dp.size(),
                                              config.checkpoint.keep);
      for (const std::string& warning : saved.warnings) spdlog::warn("{}", warning);
      spdlog::info("checkpoint {} written", saved.dir.string());
    }
    dp.comm().barrier();  // no rank runs ahead of (or exits before) a checkpoint
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
  install_stop_signal_handlers();
  using clock = std::chrono::steady_clock;
  for (int64_t step = start_step; step < config.train.steps; ++step) {
    const auto start = clock::now();
    const int64_t comm_bytes_before = dp.comm().counters().total_bytes();
    const Batch batch = train_batches.batch(step);
    std::vector<LocalBatch> micro = local_micro_batches(batch, layout, config.train.micro_batches);
    const double lr = learning_rate(config.train, step);
    const StepStats stats =
        train_step(model, optimizer, views(micro), count_targets(view(batch)), lr, config.train, dp);
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
        {"loss", std::isfinite(stats.loss) ? nlohmann::ordered_json(stats.loss) : nullptr},  // JSON has no NaN
        {"lr", lr},
        {"tokens", stats.tokens},
        {"step_ms", seconds * 1e3},
        {"tokens_per_s", static_cast<double>(stats.tokens) / seconds},
        {"mfu", roof_gflops > 0 ? nlohmann::ordered_json(stats.flops / seconds / 1e9 / (roof_gflops * dp.size()))
                                : nullptr},
        {"peak_mem_bytes", allocator.peak()},
        {"grad_norm", stats.grad_norm},
        {"strategy", layout.sp ? "lasp" : (dp.size() > 1 ? "dp" : "single")},
        {"sp_size", layout.sp ? layout.sp->size() : 1},
        {"sp_method", layout.sp ? config.parallel.sp_method : std::string("none")},
        {"world_size", dp.size()},
        {"comm_bytes", dp.comm().counters().total_bytes() - comm_bytes_before},
    };
    const bool last = step + 1 == config.train.steps;
    if (eval_batches && ((step + 1) % config.train.eval_every == 0 || last)) {
      const double eval_loss = evaluate(model, *eval_batches, config.train.eval_batches, layout, dp);
      record["eval_loss"] = eval_loss;
      spdlog::info("step {}: train loss {:.4f}, eval loss {:.4f}", step, stats.loss, eval_loss);
    }
    if (metrics) metrics->write(record);
    progress.update(step, stats.loss, static_cast<double>(stats.tokens) / seconds, seconds);

    // A stop signal on any rank stops every rank after the same step, with a checkpoint to resume from.
    const bool stop = dp.any(stop_signal() != 0);
    const bool periodic = config.checkpoint.every > 0 && (step + 1) % config.checkpoint.every == 0;
    if (periodic || stop || last) save(step + 1);
    if (stop) {
      progress.finish();
      spdlog::info("stop requested by a signal: stopped after step {}; a resumed run continues at step {}", step,
                   step + 1);
      return;
    }
  }
  progress.finish();
  if (!lead) return;
  save_model(run_dir / "model_final.safetensors", model);
  spdlog::info("final weights written to {}", (run_dir / "model_final.safetensors").string());
  if (config.sample.tokens > 0 && config.data.kind == "text") {
    if (layout.sp) model.set_attention_ops({});  // rank 0 samples alone: the local kernels, not its group's
    std::vector<int32_t> prompt;
    for (unsigned char c : config.sample.prompt) prompt.push_back(c);
    std::vector<int32_t> out = generate(model, prompt, config.sample.tokens, config.sample.temperature,
                                        static_cast<uint64_t>(config.run.seed));
    spdlog::info("sample (temperature {}):\n{}{}", config.sample.temperature, config.sample.prompt, decode_bytes(out));
  }
}

}  // namespace trident
