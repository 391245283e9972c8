// The table of every config key: see schema.h. Keep configs/README.md in step (a test checks every key is there).
#include "core/config/schema.h"

namespace trident {

const std::vector<Key>& schema() {
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
      {"model.attention", StringField{member(&C::model, &ModelConfig::attention), {"softmax", "linear"}},
       "attention kind: softmax, or causal linear attention (Lightning-style, chunked)"},
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
      {"data.separator", StringField{member(&C::data, &DataConfig::separator)},
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

      {"parallel.strategy",
       StringField{member(&C::parallel, &ParallelConfig::strategy),
                   {"auto", "dp", "sp", "lasp", "flexsp", "atom", "pipeline"}},
       "parallel strategy: auto (each step, the cheapest estimated of data parallelism, every sequence-parallel "
       "method on every power-of-two group size dividing the world, FlexSP where it can run, and ATOM's averaging "
       "peers when parallel.atom.average_every > 0), dp (data "
       "parallelism), sp (one static sequence-parallel layout, parallel.sp.*; lasp is the same), flexsp (groups of "
       "several sizes planned per micro-batch on a power-of-two world, parallel.flexsp.*), atom (every rank a peer "
       "keeping the model in host memory and swapping sub-models of layers through device memory, parallel.atom.*; "
       "auto swaps too when the model does not fit device.memory_gb), pipeline (GPipe: the ranks are stages of "
       "consecutive layers, the batch in train.micro_batches micro-batches or more; the baseline of ATOM)"},
      {"parallel.select.mode", StringField{member(&C::parallel, &ParallelConfig::select_mode), {"measured", "model"}},
       "auto: measured (measured step times correct each candidate's estimates; kept in checkpoints) or model (the "
       "choice is a pure function of the batch and parallel.select.profile, so a resumed run chooses the same)"},
      {"parallel.select.profile", StringField{member(&C::parallel, &ParallelConfig::select_profile)},
       "auto and flexsp: cluster profile the estimates and FlexSP's plans come from (parallel/cost/README.md); \"\" "
       "= measured at start-up and written to RUN_DIR/profile.yaml"},
      {"parallel.sp.method",
       StringField{member(&C::parallel, &ParallelConfig::sp_method), {"lasp", "ulysses", "ring"}},
       "sequence parallelism (strategy sp): LASP (linear attention), Ulysses (both types) or Ring Attention "
       "(softmax)"},
      {"parallel.sp.size", IntField{member(&C::parallel, &ParallelConfig::sp_size), 1},
       "ranks per sequence-parallel group (contiguous ranks); must divide the world size"},
      {"parallel.lasp.variant",
       StringField{.member = member(&C::parallel, &ParallelConfig::lasp_variant),
                   .choices = {"lasp1", "lasp2", "auto"},
                   .aliases = {{"ring", "lasp1"}, {"allgather", "lasp2"}}},
       "LASP: lasp1 (LASP-1, states passed rank to rank), lasp2 (LASP-2, one allgather per layer) or auto (strategy "
       "sp: both timed on the group at start-up, the faster runs; strategy auto: both are candidates); the old "
       "names ring and allgather are read as lasp1 and lasp2, with a warning"},
      {"parallel.flexsp.cluster", StringField{member(&C::parallel, &ParallelConfig::flexsp_cluster)},
       "FlexSP: cluster profile file `trident plan` plans for (configs/clusters/); \"\" = trident plan --cluster "
       "(training plans with parallel.select.profile)"},
      {"parallel.flexsp.solver", StringField{member(&C::parallel, &ParallelConfig::flexsp_solver), {"fast", "milp"}},
       "FlexSP: `trident plan`'s micro-batch solver: fast (greedy + local search, milliseconds) or milp (CBC, "
       "warm-started from fast); training plans with fast"},
      {"parallel.flexsp.time_limit_s",
       FloatField{.member = member(&C::parallel, &ParallelConfig::flexsp_time_limit_s), .min = 0, .min_open = true},
       "FlexSP: CBC's time limit per micro-batch (solver milp); the best plan found by then is used"},
      {"parallel.flexsp.buckets", IntField{member(&C::parallel, &ParallelConfig::flexsp_buckets), 1, 256},
       "FlexSP: length buckets per micro-batch in the MILP (Q)"},
      {"parallel.flexsp.micro_batch_tries",
       IntField{member(&C::parallel, &ParallelConfig::flexsp_micro_batch_tries), 1, 64},
       "FlexSP: micro-batch counts tried, from the fewest whose tokens fit the cluster (M')"},
      {"parallel.flexsp.too_long",
       StringField{member(&C::parallel, &ParallelConfig::flexsp_too_long), {"error", "drop", "split"}},
       "FlexSP: a sequence longer than the whole cluster holds is an error, dropped, or split into pieces"},
      {"parallel.flexsp.inner",
       StringField{member(&C::parallel, &ParallelConfig::flexsp_inner), {"auto", "ulysses", "lasp"}},
       "FlexSP: what runs inside each group: ulysses (all-to-alls of the group's tokens; model.n_head must divide by "
       "the world size), lasp (linear attention only: LASP passes the d x d states, parallel.lasp.variant says how) or "
       "auto (lasp for linear attention, else ulysses; under strategy auto, each that can run is a candidate)"},
      {"parallel.flexsp.degrees",
       StringField{member(&C::parallel, &ParallelConfig::flexsp_degrees), {"mixed", "single"}},
       "FlexSP: mixed (groups of different sizes side by side, the FlexSP planner) or single (every group of a batch "
       "the one size that is fastest for it: the BatchAda baseline)"},
      {"parallel.atom.sub_models", IntField{member(&C::parallel, &ParallelConfig::atom_sub_models), 0, 4096},
       "ATOM: contiguous sub-models the layers are split into for swapping; 0 = any count (the fastest that fits by "
       "the swap schedule with a profile, else the one that recomputes the fewest layers)"},
      {"parallel.atom.host_memory_gb",
       FloatField{.member = member(&C::parallel, &ParallelConfig::atom_host_memory_gb), .min = 0},
       "ATOM: host memory (GiB) the whole model's store must fit: fp32 weights, gradients and AdamW m and v, 16 "
       "bytes a parameter; 0 = this machine's physical memory"},
      {"parallel.atom.activations",
       StringField{member(&C::parallel, &ParallelConfig::atom_activations), {"auto", "keep", "recompute", "offload"}},
       "ATOM: keep (every layer's activations stay on the device: no recompute), recompute (backward recomputes every "
       "sub-model's forward but the last one's from its input), offload (the fewest leading sub-models that fit a "
       "pass move their activations to the host after their forward and back before their backward, beside the "
       "compute) or auto (the fewest recomputed that fit a pass; with a profile that has network.host_to_device, "
       "that or the fewest offloaded, whichever the swap schedule predicts faster, and where no pass holds a batch "
       "the fastest predicted in several passes)"},
      {"parallel.atom.average_every", IntField{member(&C::parallel, &ParallelConfig::atom_average_every), 0},
       "ATOM peers (more than one rank): 0 = exact, the peers' gradients summed every step (data parallelism of "
       "replicas); N = each peer updates its own replica and the peers average their parameters every N steps, "
       "weighted by tokens, in the background"},
      {"parallel.atom.max_staleness", IntField{member(&C::parallel, &ParallelConfig::atom_max_staleness), 0},
       "ATOM peers averaging: steps a round runs in the background before the peer applies it (waiting for it if "
       "need be; sooner when the next round starts first); 0: each round applies at once"},
      {"parallel.atom.averaging",
       StringField{member(&C::parallel, &ParallelConfig::atom_averaging), {"params", "diloco"}},
       "ATOM peers averaging: params (a round applies the peers' token-weighted average) or diloco (the average's "
       "distance from the last round's parameters is an outer gradient, applied by Nesterov momentum SGD with "
       "parallel.atom.outer_lr and outer_momentum; also on one peer)"},
      {"parallel.atom.outer_lr",
       FloatField{.member = member(&C::parallel, &ParallelConfig::atom_outer_lr), .min = 0, .min_open = true},
       "ATOM diloco: the outer step's learning rate (1 with momentum 0 is params averaging)"},
      {"parallel.atom.outer_momentum",
       FloatField{.member = member(&C::parallel, &ParallelConfig::atom_outer_momentum), .min = 0, .max = 1,
                  .max_open = true},
       "ATOM diloco: the outer step's Nesterov momentum"},
      {"parallel.atom.average_split",
       StringField{member(&C::parallel, &ParallelConfig::atom_average_split), {"bandwidth", "even"}},
       "ATOM peers averaging: a round is a butterfly all-reduce whose parts each peer sums; bandwidth = parts in "
       "proportion to each peer's bandwidth, measured at start-up (even when every peer is on one node), even = "
       "equal parts"},
      {"parallel.atom.round_deadline_ms",
       FloatField{.member = member(&C::parallel, &ParallelConfig::atom_round_deadline_ms), .min = 0},
       "ATOM peers averaging: 0 = each round is an allreduce over every peer; > 0 = a round takes the peers ready "
       "within this many ms of the first, so a slow peer misses rounds instead of holding the others back (needs MPI "
       "with MPI_THREAD_MULTIPLE)"},
      {"parallel.atom.emulate_slow_rank",
       IntField{member(&C::parallel, &ParallelConfig::atom_emulate_slow_rank), -1},
       "ATOM peers: the rank whose steps are slowed by parallel.atom.emulate_slowdown, an emulated slow peer (-1: none)"},
      {"parallel.atom.emulate_slowdown",
       FloatField{.member = member(&C::parallel, &ParallelConfig::atom_emulate_slowdown), .min = 1},
       "ATOM peers: the emulated slow peer's steps last this many times as long (it sleeps after computing)"},
      {"parallel.atom.prefetch", IntField{member(&C::parallel, &ParallelConfig::atom_prefetch), 1, 64},
       "ATOM: sub-models loading ahead of the one computing (device slots = prefetch + 1)"},
      {"parallel.atom.emulate_copy_gb_per_s",
       FloatField{.member = member(&C::parallel, &ParallelConfig::atom_emulate_copy_gb_per_s), .min = 0},
       "ATOM on the cpu backend: each copy between the host store and device memory lasts at least bytes / this "
       "rate (GB/s), an emulated PCIe link; 0 = as fast as memcpy (the only value on the cuda backend)"},

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

      {"sample.prompt", StringField{member(&C::sample, &SampleConfig::prompt)},
       "text the model continues after training (byte-level text data only)"},
      {"sample.tokens", IntField{member(&C::sample, &SampleConfig::tokens), 0}, "tokens to generate; 0 disables"},
      {"sample.temperature", FloatField{.member = member(&C::sample, &SampleConfig::temperature), .min = 0},
       "sampling temperature; 0 = greedy"},
  };
  return keys;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> paths;
  for (const Key& key : schema()) paths.emplace_back(key.path);
  return paths;
}

}  // namespace trident
