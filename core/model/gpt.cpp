#include "core/model/gpt.h"

#include <algorithm>
#include <random>
#include <type_traits>

#include <fmt/core.h>

#include "kernels/common/error.h"

namespace trident {

Precision precision_named(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  throw_config_error("train.precision: '{}' is not one of fp32, bf16", name);
}

namespace {

// The layers of the widest of the first `count` segments (at most all); the last ends before layer `end`.
int64_t widest_segment(const std::vector<int>& starts, int64_t end, int count) {
  int64_t widest = 0;
  for (std::size_t k = 0; k < std::min(starts.size(), static_cast<std::size_t>(count)); ++k)
    widest = std::max<int64_t>(widest, (k + 1 < starts.size() ? starts[k + 1] : end) - starts[k]);
  return widest;
}

void check_segments(const std::vector<int>& starts, int64_t n_layer, int recomputed, int offloaded) {
  TRIDENT_CHECK(!starts.empty() && starts[0] == 0, "segments must start at layer 0");
  TRIDENT_CHECK(recomputed >= 0 && recomputed < static_cast<int>(starts.size()),
                "{} recomputed segments of {}: at most all but the last", recomputed, starts.size());
  TRIDENT_CHECK(offloaded >= 0 && offloaded < static_cast<int>(starts.size()),
                "{} offloaded segments of {}: at most all but the last", offloaded, starts.size());
  TRIDENT_CHECK(recomputed == 0 || offloaded == 0, "segments are either recomputed or offloaded, not both");
  for (std::size_t k = 1; k < starts.size(); ++k)
    TRIDENT_CHECK(starts[k] > starts[k - 1] && starts[k] < n_layer, "segment {} starts at layer {}: not increasing "
                  "below {} layers", k, starts[k], n_layer);
}

// The layers a model computes: a pipeline stage's, else all of them as segments.
struct LayerSpan {
  std::vector<int> starts;
  int end = 0;
};
LayerSpan layer_span(const ModelConfig& config, const Swapping* swapping, const PipelineStage* stage) {
  const int n_layer = static_cast<int>(config.n_layer);
  if (!stage) return {swapping ? swapping->segment_starts : std::vector<int>{0}, n_layer};
  TRIDENT_CHECK(!swapping, "a pipeline stage is not swapped");
  TRIDENT_CHECK(0 <= stage->first_layer && stage->first_layer < stage->end_layer && stage->end_layer <= n_layer,
                "pipeline stage of layers [{}, {}) in a model of {}", stage->first_layer, stage->end_layer, n_layer);
  return {{stage->first_layer}, stage->end_layer};
}

// Segments 0 .. transient take turns in the shared workspace(s) (Swapping::recomputed or Swapping::offloaded).
int transient_segments(const Swapping* swapping) {
  return swapping ? std::max(swapping->recomputed, swapping->offloaded) : 0;
}
int workspaces(const Swapping* swapping) { return swapping && swapping->offloaded > 0 ? 2 : 1; }

// The activation workspace: as a model with the layers of the widest segment up to `transient` (twice with two
// workspaces) and every later one.
ModelConfig workspace_shape(ModelConfig config, const LayerSpan& span, int transient, int workspaces) {
  const std::size_t after = static_cast<std::size_t>(transient) + 1;
  const int64_t later = after < span.starts.size() ? span.end - span.starts[after] : 0;
  config.n_layer = workspaces * widest_segment(span.starts, span.end, transient + 1) + later;
  return config;
}

// The tokens the checkpoints and offloaded activations hold: a pass's, or a round's of several.
int64_t stash_tokens(int64_t max_tokens, const Swapping* swapping) {
  return swapping ? std::max(max_tokens, swapping->round_tokens) : max_tokens;
}
bool segment_major(int64_t max_tokens, const Swapping* swapping) {
  return swapping && swapping->round_tokens > max_tokens;
}

// Values of the boundary checkpoints: the inputs of segments 1 .. transient.
int64_t checkpoint_values(const ModelConfig& config, int transient, int64_t tokens) {
  return transient * tokens * config.n_embd;
}

// int32 index values a batch stages off the host (tokens, positions, cu_seqlens, targets): one pass of max_tokens, or
// every pass of a round run segment by segment (at most a sequence a token, each pass one more cu_seqlens entry).
int64_t index_values(int64_t max_tokens, const Swapping* swapping) {
  return segment_major(max_tokens, swapping) ? 5 * swapping->round_tokens + 1 : 4 * max_tokens + 1;
}

template <class T>
int64_t host_layer_bytes(const ModelConfig& config, int64_t max_tokens) {
  return saved_bytes_per_token<T>(config) * max_tokens;
}
int64_t host_layer_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision) {
  return precision == Precision::bf16 ? host_layer_bytes<bf16>(config, max_tokens)
                                      : host_layer_bytes<float>(config, max_tokens);
}
// The layers whose activations move to the host: those of the offloaded segments but the last, or of all of them when
// a round runs segment by segment (the last one's backward no longer follows its forward).
int64_t moving_layers(const Swapping& swapping, int64_t max_tokens) {
  const int moving = segment_major(max_tokens, &swapping) ? swapping.offloaded : swapping.offloaded - 1;
  return moving > 0 ? swapping.segment_starts[static_cast<std::size_t>(moving)] : 0;
}

}  // namespace

GPT::GPT(const ModelConfig& config, int64_t max_tokens, Allocator& allocator, Backend& backend, Precision precision,
         const Swapping* swapping, const PipelineStage* stage)
    : config_(config),
      layout_(model_layout(config)),
      backend_(&backend),
      max_tokens_(max_tokens),
      precision_(precision),
      swapped_(swapping != nullptr),
      recomputed_(swapping ? swapping->recomputed : 0),
      offloaded_(swapping ? swapping->offloaded : 0),
      transient_(transient_segments(swapping)),
      workspaces_(workspaces(swapping)) {
  TRIDENT_CHECK(allocator.device() == backend.device(), "the {} backend cannot use {} memory", backend.name(),
                device_name(allocator.device()));
  const LayerSpan span = layer_span(config, swapping, stage);
  starts_ = span.starts;
  end_layer_ = span.end;
  if (!stage) check_segments(starts_, config.n_layer, recomputed_, offloaded_);
  stash_tokens_ = stash_tokens(max_tokens, swapping);
  segment_major_ = segment_major(max_tokens, swapping);
  TRIDENT_CHECK(!segment_major_ || (starts_.size() >= 2 && transient_ == segments() - 1),
                "a round of {} tokens in passes of {} runs segment by segment: every segment but the last must be "
                "recomputed or offloaded", stash_tokens_, max_tokens);
  shared_layers_ = static_cast<int>(widest_segment(starts_, end_layer_, transient_ + 1));
  if (swapping)
    TRIDENT_CHECK(swapping->store && swapping->store->device() == Device::cpu,
                  "a swapped model's store is host memory");
  Allocator& store = swapping ? *swapping->store : allocator;
  params_ = Tensor::zeros(store, {layout_.num_params});
  grads_ = Tensor::zeros(store, {layout_.num_params});
  const ModelConfig workspace = workspace_shape(config, span, transient_, workspaces_);
  const int64_t boundary_values = checkpoint_values(config, transient_, stash_tokens_);
  if (swapping && moving_layers(*swapping, max_tokens) > 0) {
    host_layer_bytes_ = host_layer_bytes(config, stash_tokens_, precision);
    host_acts_ = Tensor::empty(store, {(offload_bytes(config, max_tokens, precision, *swapping) + 3) / 4});
  }
  if (precision == Precision::bf16) {
    if (!swapping) weights16_ = Tensor::empty(allocator, {layout_.num_params}, DType::bf16);
    acts16_ = allocate_activations<bf16>(workspace, max_tokens, allocator);
    checkpoints_ = Tensor::empty(allocator, {boundary_values}, DType::bf16);
  } else {
    acts32_ = allocate_activations<float>(workspace, max_tokens, allocator);
    checkpoints_ = Tensor::empty(allocator, {boundary_values});
  }
  if (backend.device() != Device::cpu)
    index_buffer_ = Tensor::empty(allocator, {index_values(max_tokens, swapping)});
  // The fp32 copies a sequence-parallel op computes on with bf16 activations, shared by the layers (they grow on
  // first use: a run without sequence parallelism never allocates them).
  std::shared_ptr<WideActivations> wide;
  if (precision == Precision::bf16) wide = std::make_shared<WideActivations>(backend);
  for (int l = 0; l < config.n_layer; ++l) attention_.emplace_back(config, l, backend, allocator, wide);
}

int64_t GPT::memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                          const Swapping* swapping, const PipelineStage* stage) {
  const int64_t P = model_layout(config).num_params;
  const int transient = transient_segments(swapping);
  const ModelConfig workspace =
      workspace_shape(config, layer_span(config, swapping, stage), transient, workspaces(swapping));
  const int64_t value = activation_value_bytes(precision);
  int64_t bytes = swapping ? 0 : 2 * 4 * P + (precision == Precision::bf16 ? 2 * P : 0);  // parameters, gradients
  bytes += precision == Precision::bf16 ? activation_bytes<bf16>(workspace, max_tokens)
                                        : activation_bytes<float>(workspace, max_tokens);
  const int64_t boundary_bytes = checkpoint_values(config, transient, stash_tokens(max_tokens, swapping)) * value;
  bytes += (boundary_bytes + 3) / 4 * 4;  // whole fp32 elements, as allocated
  if (device != Device::cpu) bytes += 4 * index_values(max_tokens, swapping);
  if (config.attention == "linear") bytes += 4 * config.n_head * config.n_layer;
  return bytes;
}

int64_t GPT::offload_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision,
                           const Swapping& swapping) {
  return moving_layers(swapping, max_tokens) * host_layer_bytes(config, stash_tokens(max_tokens, &swapping), precision);
}

void GPT::set_layer_source(LayerSource* source) {
  TRIDENT_CHECK(swapped(), "only a swapped model takes a layer source");
  source_ = source;
}

int GPT::segment_end(int segment) const {
  return segment + 1 < segments() ? starts_[static_cast<std::size_t>(segment + 1)] : end_layer_;
}

ParamWindow GPT::resident_window() {
  return {.begin = 0,
          .end = layout_.num_params,
          .params = params(),
          .params16 = precision_ == Precision::bf16 ? weights16_.data<bf16>() : nullptr,
          .grads = grads()};
}

void GPT::init_weights(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> p(static_cast<std::size_t>(layout_.num_params));  // drawn on the host, the same on any backend
  for (const ParamEntry& e : layout_.params) {
    if (e.init_std == 0.0f) {
      std::fill(p.begin() + e.offset, p.begin() + e.offset + e.numel, e.init_value);
      continue;
    }
    std::normal_distribution<float> dist(0.0f, e.init_std);
    for (int64_t i = 0; i < e.numel; ++i) p[e.offset + i] = dist(rng);
  }
  store_backend().upload(params(), p.data(), p.size() * sizeof(float));
}

void GPT::zero_grads() {
  store_backend().fill(grads(), layout_.num_params, 0.0f);
  if (source_) source_->grads_zeroed();
}

void GPT::check_batch(const TokenBatch& b, bool need_targets) const {
  if (b.num_tokens > max_tokens_)
    throw_runtime_error("batch of {} tokens exceeds the {} the model's activations were sized for", b.num_tokens,
                        max_tokens_);
  // A slice of a sequence-parallel batch may be empty (fewer tokens than ranks): it still joins its group's ops.
  const bool empty_slice = b.sp != nullptr && b.num_tokens == 0 && b.num_sequences == 0;
  TRIDENT_CHECK(empty_slice || (b.num_sequences >= 1 && b.cu_seqlens[0] == 0 &&
                                b.cu_seqlens[b.num_sequences] == b.num_tokens),
                "malformed cu_seqlens for {} tokens", b.num_tokens);
  TRIDENT_CHECK(!need_targets || empty_slice || b.targets != nullptr, "a training batch needs targets");
  for (int64_t t = 0; t < b.num_tokens; ++t) {
    if (b.tokens[t] < 0 || b.tokens[t] >= config_.vocab_size)
      throw_runtime_error(
          "token id {} at position {} of the batch is outside the vocabulary [0, {}) "
          "(model.vocab_size)",
          b.tokens[t], t, config_.vocab_size);
    if (layout_.wpe >= 0 && (b.positions[t] < 0 || b.positions[t] >= config_.max_seq_len))
      throw_runtime_error("position {} of token {} is outside [0, {}) (model.max_seq_len)", b.positions[t], t,
                          config_.max_seq_len);
    // Checked here, on the host, so the backends' cross-entropy need not report it from the device (a wait per
    // chunk of the LM head on a GPU).
    if (b.targets != nullptr && (b.targets[t] < -1 || b.targets[t] >= config_.vocab_size))
      throw_runtime_error("target {} of token {} of the batch is outside the vocabulary [0, {}) (model.vocab_size) "
                          "and not -1 (no target)",
                          b.targets[t], t, config_.vocab_size);
  }
}

std::vector<TokenBatch> GPT::on_backend(const std::vector<TokenBatch>& batches) {
  if (backend_->device() == Device::cpu) return batches;
  // One upload (each may wait for the device): [tokens | positions | cu_seqlens | targets] of each batch, staged on
  // the host.
  host_indices_.clear();
  std::vector<int64_t> at;
  for (const TokenBatch& b : batches) {
    at.push_back(static_cast<int64_t>(host_indices_.size()));
    host_indices_.insert(host_indices_.end(), b.tokens, b.tokens + b.num_tokens);
    host_indices_.insert(host_indices_.end(), b.positions, b.positions + b.num_tokens);
    host_indices_.insert(host_indices_.end(), b.cu_seqlens, b.cu_seqlens + b.num_sequences + 1);
    if (b.targets != nullptr) host_indices_.insert(host_indices_.end(), b.targets, b.targets + b.num_tokens);
  }
  TRIDENT_CHECK(static_cast<int64_t>(host_indices_.size()) <= index_buffer_.numel(),
                "{} index values staged for {} int32 values on the device", host_indices_.size(), index_buffer_.numel());
  auto* base = static_cast<int32_t*>(index_buffer_.raw());
  backend_->upload(base, host_indices_.data(), sizeof(int32_t) * host_indices_.size());
  std::vector<TokenBatch> on_device = batches;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    TokenBatch& d = on_device[i];
    const int64_t N = d.num_tokens;
    d.tokens = base + at[i];
    d.positions = d.tokens + N;
    d.cu_seqlens = d.positions + N;
    if (d.targets != nullptr) d.targets = d.cu_seqlens + d.num_sequences + 1;
  }
  return on_device;
}

double GPT::sum_losses(const float* losses, int64_t n) {
  if (backend_->device() != Device::cpu) {
    host_losses_.resize(static_cast<std::size_t>(n));
    backend_->download(host_losses_.data(), losses, sizeof(float) * n);
    losses = host_losses_.data();
  }
  double sum = 0;
  for (int64_t t = 0; t < n; ++t) sum += losses[t];
  return sum;
}

namespace {

// n values of a backend's array into fp32 host memory (bf16 widened on the host).
void download_floats(Backend& backend, float* host, const float* x, int64_t n) {
  backend.download(host, x, sizeof(float) * static_cast<std::size_t>(n));
}
void download_floats(Backend& backend, float* host, const bf16* x, int64_t n) {
  std::vector<bf16> staged(static_cast<std::size_t>(n));
  backend.download(staged.data(), x, sizeof(bf16) * staged.size());
  std::transform(staged.begin(), staged.end(), host, bf16_to_float);
}

}  // namespace

template <>
Activations<float>& GPT::acts<float>() {
  return acts32_;
}
template <>
Activations<bf16>& GPT::acts<bf16>() {
  return acts16_;
}

template <class T>
T* GPT::checkpoint(int segment) {
  return checkpoints_.data<T>() + (static_cast<int64_t>(segment - 1) * stash_tokens_ + pass_at_) * config_.n_embd;
}

template <class T>
int64_t GPT::copy_activations(int segment, int64_t n, bool to_host) {
  std::vector<LayerSource::Copy> copies;
  auto* host = static_cast<char*>(host_acts_.raw());
  for (int l = starts_[static_cast<std::size_t>(segment)]; l < segment_end(segment); ++l) {
    char* at = host + static_cast<int64_t>(l) * host_layer_bytes_;
    for (const SavedArray& a : saved_arrays(layer_acts<T>(l, segment), config_)) {
      const auto bytes = static_cast<std::size_t>(n * a.bytes_per_token);
      char* pass = at + pass_at_ * a.bytes_per_token;
      copies.push_back(to_host ? LayerSource::Copy{pass, a.data, bytes} : LayerSource::Copy{a.data, pass, bytes});
      at += a.bytes_per_token * stash_tokens_;
    }
  }
  return source_->copy_activations(fmt::format("{} activations {}", to_host ? "drain" : "load", segment),
                                   std::move(copies), to_host);
}

// ---- one layer, forward ---------------------------------------------------------------------------------------------
// Norms read the fp32 master weights; the matmuls read w.matmul<T> (the same for fp32).
template <class T>
void GPT::forward_layer(int l, int segment, const ParamWindow& w, const TokenBatch& b) {
  const int64_t N = b.num_tokens;
  const int C = static_cast<int>(config_.n_embd);
  const BlockOffsets& o = layout_.blocks[static_cast<std::size_t>(l)];
  LayerActivations<T>& a = layer_acts<T>(l, segment);
  const T* x = layer_input<T>(l, segment);
  // x + attn(ln_1(x))
  backend_->layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, w.param(o.ln1_w), w.param(o.ln1_b), N, C);
  backend_->linear_forward(a.qkv, a.ln1, w.matmul<T>(o.qkv_w), w.matmul<T>(o.qkv_b), N, C, 3 * C);
  if (o.gate_w >= 0) backend_->linear_forward(a.gate, a.ln1, w.matmul<T>(o.gate_w), w.matmul<T>(o.gate_b), N, C, C);
  attention_[static_cast<std::size_t>(l)].forward(a, b);
  backend_->linear_forward(a.res2, a.att, w.matmul<T>(o.attproj_w), w.matmul<T>(o.attproj_b), N, C, C);
  backend_->residual_forward(a.res2, a.res2, x, N * C);
  // + mlp(ln_2(.))
  backend_->layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.param(o.ln2_w), w.param(o.ln2_b), N, C);
  backend_->linear_forward(a.fc, a.ln2, w.matmul<T>(o.fc_w), nullptr, N, C, 4 * C);  // its bias comes with the GELU
  backend_->bias_gelu_forward(a.fc, a.gelu, w.matmul<T>(o.fc_b), N, 4 * C);
  backend_->linear_forward(a.res3, a.gelu, w.matmul<T>(o.fcproj_w), w.matmul<T>(o.fcproj_b), N, 4 * C, C);
  backend_->residual_forward(a.res3, a.res3, a.res2, N * C);
}

// The segment's layers; unless recomputing, its output becomes the next segment's checkpoint when that one runs in
// the shared workspace.
template <class T>
void GPT::forward_segment(int segment, const ParamWindow& w, const TokenBatch& b, bool recomputing) {
  const int first = starts_[static_cast<std::size_t>(segment)], end = segment_end(segment);
  for (int l = first; l < end; ++l) forward_layer<T>(l, segment, w, b);
  if (recomputing || segment + 1 > transient_) return;
  const int64_t C = config_.n_embd;
  backend_->copy_rows(checkpoint<T>(segment + 1), C, layer_acts<T>(end - 1, segment).res3, C, b.num_tokens, C);
}

// ---- one layer, backward ------------------------------------------------------------------------------------------
// dres enters as the gradient at the layer's output and leaves as the gradient at its input; dnarrow and the wide
// scratch are overwritten. Parameter gradients are fp32 whatever T is.
template <class T>
void GPT::backward_layer(int l, int segment, const ParamWindow& w, const TokenBatch& b, T* dres, T* dnarrow) {
  const int64_t N = b.num_tokens;
  const int C = static_cast<int>(config_.n_embd);
  const BlockOffsets& o = layout_.blocks[static_cast<std::size_t>(l)];
  Activations<T>& acts = this->acts<T>();
  const LayerActivations<T>& a = layer_acts<T>(l, segment);
  const T* x = layer_input<T>(l, segment);
  T* dwide1 = acts.dwide1;
  T* dwide2 = acts.dwide2;
  // res3 = res2 + c_proj(gelu(c_fc(ln_2(res2)))): dres flows to res2 unchanged, plus through the MLP.
  backend_->fill(dwide1, N * 4 * C, 0.0f);
  backend_->linear_backward(dwide1, w.grad(o.fcproj_w), w.grad(o.fcproj_b), dres, a.gelu, w.matmul<T>(o.fcproj_w), N,
                            4 * C, C);
  backend_->bias_gelu_backward(dwide2, w.grad(o.fc_b), a.fc, dwide1, N, 4 * C);
  backend_->fill(dnarrow, N * C, 0.0f);
  backend_->linear_backward(dnarrow, w.grad(o.fc_w), nullptr, dwide2, a.ln2, w.matmul<T>(o.fc_w), N, C, 4 * C);
  backend_->layernorm_backward(dres, w.grad(o.ln2_w), w.grad(o.ln2_b), dnarrow, a.res2, w.param(o.ln2_w), a.ln2_mean,
                               a.ln2_rstd, N, C);
  // res2 = x + c_proj(attn(c_attn(ln_1(x)), c_gate(ln_1(x))))
  backend_->fill(dnarrow, N * C, 0.0f);
  backend_->linear_backward(dnarrow, w.grad(o.attproj_w), w.grad(o.attproj_b), dres, a.att, w.matmul<T>(o.attproj_w),
                            N, C, C);
  T* dgate = o.gate_w >= 0 ? dwide2 + 3 * N * C : nullptr;  // dwide2 = [dqkv (N, 3C) | dgate (N, C)]
  backend_->fill(dwide2, N * (dgate ? 4 : 3) * C, 0.0f);
  attention_[static_cast<std::size_t>(l)].backward(dwide2, dgate, dnarrow, dwide1, a, b);
  backend_->fill(dnarrow, N * C, 0.0f);
  backend_->linear_backward(dnarrow, w.grad(o.qkv_w), w.grad(o.qkv_b), dwide2, a.ln1, w.matmul<T>(o.qkv_w), N, C,
                            3 * C);
  if (dgate)
    backend_->linear_backward(dnarrow, w.grad(o.gate_w), w.grad(o.gate_b), dgate, a.ln1, w.matmul<T>(o.gate_w), N, C,
                              C);
  backend_->layernorm_backward(dres, w.grad(o.ln1_w), w.grad(o.ln1_b), dnarrow, x, w.param(o.ln1_w), a.ln1_mean,
                               a.ln1_rstd, N, C);
}

// ---- one pass: embeddings, the segments, ln_f, then the tied LM head + cross-entropy a chunk of tokens at a time --
// logits = ln_f(x) @ wte^T; training also does d ln_f(x) += dlogits @ wte and dwte += dlogits^T @ ln_f(x) (fp32),
// so the (N, V) logits never exist at once. Training then runs the segments' backward in reverse, recomputing the
// forward of each recomputed one (Swapping::recomputed) from its checkpoint first. A pipeline stage starts from its
// input instead of the embeddings and, before the last, ends at its output (backward: at the gradient there).
template <class T>
double GPT::run(const TokenBatch& host_batch, Pass pass, float loss_weight, float* host_logits, const StageIO* io) {
  check_batch(host_batch, pass != Pass::logits && last_stage());
  TRIDENT_CHECK(!swapped() || source_, "a swapped model needs its layer source before a pass");
  TRIDENT_CHECK(!swapped() || !grad_ready_, "a swapped model's gradients reach the store by segment, not by bucket");
  const bool train = pass == Pass::train;
  TRIDENT_CHECK(pass != Pass::logits || (first_stage() && last_stage()), "logits come from a whole model");
  TRIDENT_CHECK(first_stage() || (io && io->input), "a pipeline stage after the first needs its input");
  TRIDENT_CHECK(last_stage() || (io && (train ? io->output_grad != nullptr : io->output != nullptr)),
                "a pipeline stage before the last needs {}", train ? "the gradient at its output" : "its output buffer");
  TRIDENT_CHECK(!train || first_stage() || io->input_grad, "a pipeline stage after the first returns its input's "
                "gradient");
  const TokenBatch b = on_backend(std::vector<TokenBatch>{host_batch})[0];
  const ParamWindow resident = source_ ? ParamWindow{} : resident_window();
  const LayerSource::Outer outer = source_ ? source_->begin_pass(train, 1) : LayerSource::Outer{resident, resident};
  if constexpr (std::is_same_v<T, bf16>) {
    if (!source_) backend_->convert(weights16_.data<bf16>(), params(), layout_.num_params);
  }
  Activations<T>& acts = this->acts<T>();
  const int64_t N = b.num_tokens, C = config_.n_embd;
  const ParamWindow& emb = outer.embeddings;
  if (first_stage())
    embed<T>(b, emb);
  else
    backend_->copy_rows(acts.encoded, C, static_cast<const T*>(io->input), C, N, C);
  // Offloading: a segment's activations drain beside the next segment's forward; the one after that, in the same
  // workspace, waits for them.
  to_host_.assign(static_cast<std::size_t>(segments()), 0);
  to_device_.assign(static_cast<std::size_t>(segments()), 0);
  for (int k = 0; k < segments(); ++k) {
    const ParamWindow w = source_ ? source_->acquire(k, false) : resident;
    if (train && k >= 2 && moves(k - 2)) source_->wait_copies(to_host_[static_cast<std::size_t>(k - 2)]);
    forward_segment<T>(k, w, b, false);
    if (train && moves(k)) to_host_[static_cast<std::size_t>(k)] = copy_activations<T>(k, N, true);
    if (source_) source_->release(k, false);
  }
  if (io && io->output) backend_->copy_rows(static_cast<T*>(io->output), C, trunk_output<T>(), C, N, C);
  double loss_sum = 0;
  if (last_stage()) loss_sum = head<T>(b, pass, loss_weight, host_logits, outer);
  if (train) {
    const auto buckets = gradient_buckets(layout_);
    auto ready = [&](std::size_t bucket) {
      if (grad_ready_) grad_ready_(buckets[bucket].first, buckets[bucket].second);
    };
    // dres: the gradient at the trunk's output, from the head (ln_f: d ln_f(x) into dnarrow, then swap roles) or
    // from the next stage
    T* dres = acts.dres;
    T* dnarrow = acts.dnarrow;
    if (last_stage()) {
      final_norm_backward<T>(outer, N);
      std::swap(dres, dnarrow);
      ready(0);  // ln_f
    } else {
      backend_->copy_rows(dres, C, static_cast<const T*>(io->output_grad), C, N, C);
    }
    for (int k = segments() - 1; k >= 0; --k) {
      const ParamWindow w = source_ ? source_->acquire(k, true) : resident;
      if (k < recomputed_) forward_segment<T>(k, w, b, true);  // from its checkpoint
      if (moves(k)) source_->wait_copies(to_device_[static_cast<std::size_t>(k)]);
      for (int l = segment_end(k) - 1; l >= starts_[static_cast<std::size_t>(k)]; --l) {
        backward_layer<T>(l, k, w, b, dres, dnarrow);
        ready(static_cast<std::size_t>(config_.n_layer - l));
      }
      if (source_) source_->release(k, true);
      // its workspace is free: the activations of the segment two before it (the next to use it) load back
      if (k >= 2 && moves(k - 2)) to_device_[static_cast<std::size_t>(k - 2)] = copy_activations<T>(k - 2, N, false);
    }
    if (first_stage()) {
      embed_backward<T>(b, emb, dres);
      ready(buckets.size() - 1);  // embeddings
    } else {
      backend_->copy_rows(static_cast<T*>(io->input_grad), C, dres, C, N, C);
    }
  }
  if (source_) source_->end_pass(train);
  return loss_sum;
}

// A round of passes segment by segment (Swapping::round_tokens): the forward of every segment but the last over every
// pass, each pass's output of a segment kept as the next one's checkpoint (and, offloading, its activations sent to
// the store); then the last segment pass after pass, forward, loss and backward, the gradient at its input taking the
// place of its checkpoint; then the other segments' backward in reverse, pass after pass (each recomputed from its
// checkpoint or loaded back), and the embeddings'. Each segment comes onto the device once for the forward and once for
// the backward, whatever the passes. The gradients are those of the passes run one after another, but for the tied
// embedding's: it sums every pass's LM-head part before their embedding parts.
template <class T>
double GPT::run_passes(const std::vector<TokenBatch>& host_passes, float loss_weight) {
  const int last = segments() - 1;
  const bool offload = offloaded_ > 0;
  int64_t tokens = 0;
  std::vector<int64_t> first_token;  // of each pass in the checkpoints and the store
  for (const TokenBatch& pass : host_passes) {
    check_batch(pass, true);
    first_token.push_back(tokens);
    tokens += pass.num_tokens;
  }
  TRIDENT_CHECK(tokens <= stash_tokens_, "a round of {} tokens exceeds the {} the model's checkpoints were sized for",
                tokens, stash_tokens_);
  TRIDENT_CHECK(!grad_ready_, "a swapped model's gradients reach the store by segment, not by bucket");
  const std::vector<TokenBatch> passes = on_backend(host_passes);
  const auto P = static_cast<int>(passes.size());
  Activations<T>& acts = this->acts<T>();
  const int64_t C = config_.n_embd;
  const LayerSource::Outer outer = source_->begin_pass(true, P);
  const ParamWindow& emb = outer.embeddings;
  // Pass p of segment k computes in workspace `workspace_at_` with its tokens at pass_at_ in the checkpoints and store.
  auto enter = [&](int p, int workspace) {
    pass_at_ = first_token[static_cast<std::size_t>(p)];
    workspace_at_ = workspace;
  };
  // Offloading, the workspaces alternate pass by pass: a pass's activations drain beside the next pass's forward, and
  // the pass after that waits for them.
  std::vector<int64_t> drains;
  for (int k = 0; k < last; ++k) {
    const ParamWindow w = source_->acquire(k, false);
    for (int p = 0; p < P; ++p) {
      const auto unit = static_cast<int>(drains.size());
      enter(p, offload ? unit % 2 : 0);
      if (offload && unit >= 2) source_->wait_copies(drains[static_cast<std::size_t>(unit - 2)]);
      if (k == 0) embed<T>(passes[static_cast<std::size_t>(p)], emb);
      forward_segment<T>(k, w, passes[static_cast<std::size_t>(p)], false);
      if (offload) drains.push_back(copy_activations<T>(k, passes[static_cast<std::size_t>(p)].num_tokens, true));
    }
    source_->release(k, false);
  }
  // The backward goes through (segment, pass) in this order; offloading, each loads into the workspace the one two
  // before it used, the first into the one the last segment does not use.
  std::vector<std::pair<int, int>> backward_units;
  for (int k = last - 1; k >= 0; --k)
    for (int p = 0; p < P; ++p) backward_units.emplace_back(k, p);
  const int last_workspace = offload ? static_cast<int>(drains.size()) % 2 : 0;
  auto backward_workspace = [&](std::size_t unit) {
    return offload ? (last_workspace + 1 + static_cast<int>(unit)) % 2 : 0;
  };
  std::vector<int64_t> loads(backward_units.size(), 0);
  auto load = [&](std::size_t unit) {
    if (!offload || unit >= backward_units.size()) return;
    const auto [k, p] = backward_units[unit];
    enter(p, backward_workspace(unit));
    loads[unit] = copy_activations<T>(k, passes[static_cast<std::size_t>(p)].num_tokens, false);
  };
  if (offload && drains.size() >= 2) source_->wait_copies(drains[drains.size() - 2]);
  load(0);
  double loss_sum = 0;
  source_->acquire(last, false);  // the protocol's forward of the last segment, which stays for its backward
  source_->release(last, false);
  {
    const ParamWindow w = source_->acquire(last, true);
    for (int p = 0; p < P; ++p) {
      const TokenBatch& b = passes[static_cast<std::size_t>(p)];
      enter(p, last_workspace);
      forward_segment<T>(last, w, b, false);
      loss_sum += head<T>(b, Pass::train, loss_weight, nullptr, outer);
      final_norm_backward<T>(outer, b.num_tokens);
      T* dres = acts.dnarrow;  // the gradient at the trunk's output; acts.dres is free
      T* dnarrow = acts.dres;
      for (int l = end_layer_ - 1; l >= starts_[static_cast<std::size_t>(last)]; --l)
        backward_layer<T>(l, last, w, b, dres, dnarrow);
      backend_->copy_rows(checkpoint<T>(last), C, dres, C, b.num_tokens, C);
    }
    source_->release(last, true);
  }
  load(1);
  std::size_t unit = 0;
  for (int k = last - 1; k >= 0; --k) {
    const ParamWindow w = source_->acquire(k, true);
    for (int p = 0; p < P; ++p, ++unit) {
      const TokenBatch& b = passes[static_cast<std::size_t>(p)];
      enter(p, backward_workspace(unit));
      if (k == 0) embed<T>(b, emb);  // the first layer's input
      if (offload) source_->wait_copies(loads[unit]);
      else forward_segment<T>(k, w, b, true);
      T* dres = checkpoint<T>(last);  // the gradient at the pass's input of segment k + 1
      for (int l = segment_end(k) - 1; l >= starts_[static_cast<std::size_t>(k)]; --l)
        backward_layer<T>(l, k, w, b, dres, acts.dnarrow);
      load(unit + 2);
    }
    source_->release(k, true);
  }
  for (int p = 0; p < P; ++p) {
    const TokenBatch& b = passes[static_cast<std::size_t>(p)];
    enter(p, -1);
    embed_backward<T>(b, emb, checkpoint<T>(last));
  }
  enter(0, -1);
  source_->end_pass(true);
  return loss_sum;
}

// ln_f and the tied LM head: logits, or the losses, or (training) the losses, d ln_f(x) into acts.dres and dwte.
// Returns the sum of the losses (0 for logits).
template <class T>
double GPT::head(const TokenBatch& b, Pass pass, float loss_weight, float* host_logits,
                 const LayerSource::Outer& outer) {
  Activations<T>& acts = this->acts<T>();
  const int64_t N = b.num_tokens, C = config_.n_embd, V = config_.vocab_size;
  const ParamWindow& emb = outer.embeddings;
  const ParamWindow& fin = outer.final_norm;
  backend_->layernorm_forward(acts.lnf, acts.lnf_mean, acts.lnf_rstd, trunk_output<T>(), fin.param(layout_.lnf_w),
                              fin.param(layout_.lnf_b), N, static_cast<int>(C));
  const T* wte = emb.matmul<T>(layout_.wte);
  const bool train = pass == Pass::train;
  if (train) {
    backend_->fill(acts.loss_weight, N, loss_weight);
    backend_->fill(acts.dres, N * C, 0.0f);
  }
  for (int64_t t0 = 0; t0 < N; t0 += kHeadChunk) {
    const int64_t n = std::min(kHeadChunk, N - t0);
    const T* x = acts.lnf + t0 * C;
    backend_->gemm(Trans::no, Trans::yes, n, V, C, 1.0f, x, C, wte, C, 0.0f, acts.logits, V);
    if (pass == Pass::logits) download_floats(*backend_, host_logits + t0 * V, acts.logits, n * V);
    else if (pass == Pass::loss) {
      backend_->crossentropy_forward(acts.losses + t0, acts.logits, b.targets + t0, n, V);
    } else if (train) {
      backend_->crossentropy_fused_backward(acts.losses + t0, acts.logits, b.targets + t0, acts.loss_weight + t0, n,
                                            V);
      backend_->gemm(Trans::no, Trans::no, n, C, V, 1.0f, acts.logits, V, wte, C, 1.0f, acts.dres + t0 * C, C);
      backend_->gemm(Trans::yes, Trans::no, V, C, n, 1.0f, acts.logits, V, x, C, 1.0f, emb.grad(layout_.wte), C);
    }
  }
  return pass == Pass::logits ? 0.0 : sum_losses(acts.losses, N);
}

double GPT::forward_backward(const TokenBatch& batch, float loss_weight, const StageIO* stage_io) {
  return precision_ == Precision::bf16 ? run<bf16>(batch, Pass::train, loss_weight, nullptr, stage_io)
                                       : run<float>(batch, Pass::train, loss_weight, nullptr, stage_io);
}

double GPT::forward_backward(const std::vector<TokenBatch>& passes, float loss_weight) {
  if (segment_major_ && passes.size() > 1)
    return precision_ == Precision::bf16 ? run_passes<bf16>(passes, loss_weight)
                                         : run_passes<float>(passes, loss_weight);
  double loss_sum = 0;
  for (const TokenBatch& pass : passes) loss_sum += forward_backward(pass, loss_weight);
  return loss_sum;
}

template <class T>
void GPT::embed(const TokenBatch& b, const ParamWindow& emb) {
  backend_->embedding_forward(acts<T>().encoded, b.tokens, b.positions, emb.param(layout_.wte),
                              layout_.wpe >= 0 ? emb.param(layout_.wpe) : nullptr, b.num_tokens,
                              static_cast<int>(config_.n_embd));
}

template <class T>
void GPT::embed_backward(const TokenBatch& b, const ParamWindow& emb, const T* dencoded) {
  backend_->embedding_backward(emb.grad(layout_.wte), layout_.wpe >= 0 ? emb.grad(layout_.wpe) : nullptr, dencoded,
                               b.tokens, b.positions, b.num_tokens, static_cast<int>(config_.n_embd));
}

// ln_f backward: d ln_f(x) from the head's gradient in acts.dres into acts.dnarrow.
template <class T>
void GPT::final_norm_backward(const LayerSource::Outer& outer, int64_t n) {
  Activations<T>& acts = this->acts<T>();
  const ParamWindow& fin = outer.final_norm;
  backend_->fill(acts.dnarrow, n * config_.n_embd, 0.0f);
  backend_->layernorm_backward(acts.dnarrow, fin.grad(layout_.lnf_w), fin.grad(layout_.lnf_b), acts.dres,
                               trunk_output<T>(), fin.param(layout_.lnf_w), acts.lnf_mean, acts.lnf_rstd, n,
                               static_cast<int>(config_.n_embd));
}

double GPT::forward_loss(const TokenBatch& batch, const StageIO* stage_io) {
  return precision_ == Precision::bf16 ? run<bf16>(batch, Pass::loss, 0.0f, nullptr, stage_io)
                                       : run<float>(batch, Pass::loss, 0.0f, nullptr, stage_io);
}

void GPT::forward_logits(const TokenBatch& batch, float* logits) {
  if (precision_ == Precision::bf16)
    run<bf16>(batch, Pass::logits, 0.0f, logits, nullptr);
  else
    run<float>(batch, Pass::logits, 0.0f, logits, nullptr);
}

double GPT::flops(const TokenBatch& b) const {
  const double C = static_cast<double>(config_.n_embd), L = static_cast<double>(config_.n_layer);
  const double matmul_params =
      static_cast<double>(layout_.num_params) - (layout_.wpe >= 0 ? static_cast<double>(config_.max_seq_len) * C : 0.0);
  double total = 6.0 * matmul_params * static_cast<double>(b.num_tokens);
  const double D = C / static_cast<double>(config_.n_head);
  for (int s = 0; s < b.num_sequences; ++s) {
    const double n = b.cu_seqlens[s + 1] - b.cu_seqlens[s];
    if (layout_.wpe >= 0) {
      total += 6.0 * L * C * n * n;  // QK^T and PV over the causal half: 2 n^2 C forward, x3 with backward
    } else {
      const double chunk = std::min<double>(static_cast<double>(config_.linear_chunk), n);
      total += 3.0 * L * n * config_.n_head * (2.0 * chunk * D + 4.0 * D * D);  // masked intra half + inter + state
    }
  }
  return total;
}

}  // namespace trident
