#include "core/model/gpt.h"

#include <algorithm>
#include <random>

#include <fmt/core.h>

#include "kernels/common/error.h"

namespace trident {

Precision precision_named(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  throw_config_error("train.precision: '{}' is not one of fp32, bf16", name);
}

namespace {

int64_t kept_layers(const ModelConfig& config, const ModelMemory& memory) {
  return memory.activation_layers < 0 ? config.n_layer : memory.activation_layers;
}
// The activations' shape: a model of the layers whose activations are kept.
ModelConfig activation_shape(ModelConfig config, const ModelMemory& memory) {
  config.n_layer = kept_layers(config, memory);
  return config;
}
// int32 index values a batch stages off the host (tokens, positions, cu_seqlens, targets).
int64_t index_values(int64_t max_tokens, const ModelMemory& memory) {
  return memory.index_values > 0 ? memory.index_values : 4 * max_tokens + 1;
}

}  // namespace

GPT::GPT(const ModelConfig& config, int64_t max_tokens, Allocator& allocator, Backend& backend, Precision precision,
         const ModelMemory& memory)
    : config_(config),
      layout_(model_layout(config)),
      backend_(&backend),
      max_tokens_(max_tokens),
      precision_(precision),
      params_on_host_(memory.weights_on_host),
      activation_layers_(kept_layers(config, memory)),
      selective_recompute_(memory.selective_recompute),
      buckets_(gradient_buckets(layout_)) {
  TRIDENT_CHECK(allocator.device() == backend.device(), "the {} backend cannot use {} memory", backend.name(),
                device_name(allocator.device()));
  TRIDENT_CHECK(!memory.weights_on_host || (memory.store && memory.store->device() == Device::cpu),
                "a model's weights on the host need a store in host memory");
  TRIDENT_CHECK(activation_layers_ >= 1, "activations of {} layers", activation_layers_);
  Allocator& store = memory.weights_on_host ? *memory.store : allocator;
  if (memory.in_source != InSource::states) params_ = Tensor::zeros(store, {layout_.num_params});
  if (memory.in_source == InSource::nothing) grads_ = Tensor::zeros(store, {layout_.num_params});
  const ModelConfig shape = activation_shape(config, memory);
  if (precision == Precision::bf16) {
    if (!memory.weights_on_host && params_.defined())
      weights16_ = Tensor::empty(allocator, {layout_.num_params}, DType::bf16);
    acts16_ =
        allocate_activations<bf16>(shape, max_tokens, allocator, memory.selective_recompute, memory.spare_values);
  } else {
    acts32_ =
        allocate_activations<float>(shape, max_tokens, allocator, memory.selective_recompute, memory.spare_values);
  }
  if (backend.device() != Device::cpu)
    index_buffer_ = Tensor::empty(allocator, {index_values(max_tokens, memory)});
  // The fp32 copies a sequence-parallel op computes on with bf16 activations, shared by the layers (they grow on
  // first use: a run without sequence parallelism never allocates them).
  std::shared_ptr<WideActivations> wide;
  if (precision == Precision::bf16) wide = std::make_shared<WideActivations>(backend);
  for (int l = 0; l < config.n_layer; ++l) attention_.emplace_back(config, l, backend, allocator, wide);
}

int64_t GPT::memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                          const ModelMemory& memory) {
  const int64_t P = model_layout(config).num_params;
  const ModelConfig shape = activation_shape(config, memory);
  // weights, gradients and their bf16 copy, unless on the host or in the source
  const int64_t weights = memory.in_source == InSource::states ? 0 : (precision == Precision::bf16 ? 6 : 4) * P;
  int64_t bytes = memory.weights_on_host ? 0 : weights + (memory.in_source == InSource::nothing ? 4 * P : 0);
  bytes += precision == Precision::bf16
               ? activation_bytes<bf16>(shape, max_tokens, memory.selective_recompute, memory.spare_values)
               : activation_bytes<float>(shape, max_tokens, memory.selective_recompute, memory.spare_values);
  if (device != Device::cpu) bytes += 4 * index_values(max_tokens, memory);
  bytes += 4 * config.n_head * config.linear_layers();  // the decay slopes
  return bytes;
}

ParamWindow GPT::resident_weights() {
  TRIDENT_CHECK(!params_on_host_ && holds_weights(), "a model whose weights are in a store or its source runs its "
                "passes through its runner");
  if (precision_ == Precision::bf16) backend_->convert(weights16_.data<bf16>(), params(), layout_.num_params);
  return {.begin = 0,
          .end = layout_.num_params,
          .params = params(),
          .params16 = precision_ == Precision::bf16 ? weights16_.data<bf16>() : nullptr,
          .grads = grads()};
}

std::vector<float> initial_weights(const ModelLayout& layout, uint64_t seed, std::optional<FlatRange> range) {
  const FlatRange kept = range.value_or(FlatRange{0, layout.num_params});
  std::mt19937_64 rng(seed);
  std::vector<float> p(static_cast<std::size_t>(kept.numel));
  auto keep = [&](int64_t offset, float value) {
    if (offset >= kept.offset && offset < kept.offset + kept.numel)
      p[static_cast<std::size_t>(offset - kept.offset)] = value;
  };
  for (const ParamEntry& e : layout.params) {
    if (e.init_std == 0.0f) {
      for (int64_t i = 0; i < e.numel; ++i) keep(e.offset + i, e.init_value);
      continue;
    }
    std::normal_distribution<float> dist(0.0f, e.init_std);
    for (int64_t i = 0; i < e.numel; ++i) keep(e.offset + i, dist(rng));
  }
  return p;
}

void GPT::init_weights(uint64_t seed) {
  TRIDENT_CHECK(holds_weights(), "a model whose weights its runner's source keeps is initialised there");
  const std::vector<float> p = initial_weights(layout_, seed);
  store_backend().upload(params(), p.data(), p.size() * sizeof(float));
}

void GPT::zero_grads() {
  if (grads() != nullptr) store_backend().fill(grads(), layout_.num_params, 0.0f);
  if (runner_) runner_->grads_zeroed();
}

void GPT::grad_ready(std::size_t bucket) {
  if (grad_ready_) grad_ready_(buckets_[bucket].first, buckets_[bucket].second);
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
                "{} index values staged for {} int32 values on the device", host_indices_.size(),
                index_buffer_.numel());
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
Activations<float>& GPT::activations<float>() {
  return acts32_;
}
template <>
Activations<bf16>& GPT::activations<bf16>() {
  return acts16_;
}

// ---- one layer, forward ---------------------------------------------------------------------------------------------
// Norms read the fp32 master weights; the matmuls read w.matmul<T> (the same for fp32).
template <class T>
void GPT::forward_layer(int l, const ParamWindow& w, const TokenBatch& b, const T* x, LayerActivations<T>& a) {
  const int64_t N = b.num_tokens;
  const int C = static_cast<int>(config_.n_embd);
  const BlockOffsets& o = layout_.blocks[static_cast<std::size_t>(l)];
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

// ---- one layer, backward ------------------------------------------------------------------------------------------
// dres enters as the gradient at the layer's output and leaves as the gradient at its input; dnarrow and the wide
// scratch are overwritten. Parameter gradients are fp32 whatever T is.
template <class T>
void GPT::backward_layer(int l, const ParamWindow& w, const TokenBatch& b, const T* x, const LayerActivations<T>& a,
                         T* dres, T* dnarrow) {
  const int64_t N = b.num_tokens;
  const int C = static_cast<int>(config_.n_embd);
  const BlockOffsets& o = layout_.blocks[static_cast<std::size_t>(l)];
  Activations<T>& acts = activations<T>();
  T* dwide1 = acts.dwide1;
  T* dwide2 = acts.dwide2;
  if (selective_recompute_) {  // the slot every layer shares: this layer's norms and GELU again, the same arithmetic
    backend_->layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, w.param(o.ln1_w), w.param(o.ln1_b), N, C);
    backend_->layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.param(o.ln2_w), w.param(o.ln2_b), N, C);
    backend_->bias_gelu_forward(a.fc, a.gelu, static_cast<const T*>(nullptr), N, 4 * C);  // a.fc holds its bias
  }
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

// ---- one pass: embeddings, the layers, ln_f, then the tied LM head + cross-entropy a chunk of tokens at a time ----
// logits = ln_f(x) @ wte^T; training also does d ln_f(x) += dlogits @ wte and dwte += dlogits^T @ ln_f(x) (fp32),
// so the (N, V) logits never exist at once. Training then runs the layers' backward in reverse, handing each range of
// gradients to the grad-ready hook as it is final.
template <class T>
double GPT::run(const TokenBatch& host_batch, PassKind pass, float loss_weight, float* host_logits) {
  check_batch(host_batch, pass != PassKind::logits);
  TRIDENT_CHECK(activation_layers_ == config_.n_layer, "a model with the activations of {} of its {} layers runs its "
                "passes through its strategy", activation_layers_, config_.n_layer);
  const TokenBatch b = on_backend({host_batch})[0];
  const ParamWindow w = resident_weights();
  Activations<T>& acts = activations<T>();
  const auto L = static_cast<int>(config_.n_layer);
  auto input = [&](int l) { return l == 0 ? acts.encoded : acts.layers[static_cast<std::size_t>(l - 1)].res3; };
  embed<T>(b, w);
  for (int l = 0; l < L; ++l) forward_layer<T>(l, w, b, input(l), acts.layers[static_cast<std::size_t>(l)]);
  const double loss_sum = head<T>(b, pass, loss_weight, host_logits, {w, w}, input(L));
  if (pass != PassKind::train) return loss_sum;
  final_norm_backward<T>({w, w}, input(L), b.num_tokens);
  grad_ready(0);  // ln_f
  T* dres = acts.dnarrow;  // the gradient at the trunk's output; acts.dres is free
  T* dnarrow = acts.dres;
  for (int l = L - 1; l >= 0; --l) {
    backward_layer<T>(l, w, b, input(l), acts.layers[static_cast<std::size_t>(l)], dres, dnarrow);
    grad_ready(static_cast<std::size_t>(L - l));
  }
  embed_backward<T>(b, w, dres);
  grad_ready(buckets_.size() - 1);  // embeddings
  return loss_sum;
}

// ln_f and the tied LM head: logits, or the losses, or (training) the losses, d ln_f(x) into acts.dres and dwte.
// Returns the sum of the losses (0 for logits).
template <class T>
double GPT::head(const TokenBatch& b, PassKind pass, float loss_weight, float* host_logits, const OuterWindows& outer,
                 const T* trunk_output) {
  Activations<T>& acts = activations<T>();
  const int64_t N = b.num_tokens, C = config_.n_embd, V = config_.vocab_size;
  const ParamWindow& emb = outer.embeddings;
  const ParamWindow& fin = outer.final_norm;
  backend_->layernorm_forward(acts.lnf, acts.lnf_mean, acts.lnf_rstd, trunk_output, fin.param(layout_.lnf_w),
                              fin.param(layout_.lnf_b), N, static_cast<int>(C));
  const T* wte = emb.matmul<T>(layout_.wte);
  const bool train = pass == PassKind::train;
  if (train) {
    backend_->fill(acts.loss_weight, N, loss_weight);
    backend_->fill(acts.dres, N * C, 0.0f);
  }
  for (int64_t t0 = 0; t0 < N; t0 += kHeadChunk) {
    const int64_t n = std::min(kHeadChunk, N - t0);
    const T* x = acts.lnf + t0 * C;
    backend_->gemm(Trans::no, Trans::yes, n, V, C, 1.0f, x, C, wte, C, 0.0f, acts.logits, V);
    if (pass == PassKind::logits) download_floats(*backend_, host_logits + t0 * V, acts.logits, n * V);
    else if (pass == PassKind::loss) {
      backend_->crossentropy_forward(acts.losses + t0, acts.logits, b.targets + t0, n, V);
    } else if (train) {
      backend_->crossentropy_fused_backward(acts.losses + t0, acts.logits, b.targets + t0, acts.loss_weight + t0, n,
                                            V);
      backend_->gemm(Trans::no, Trans::no, n, C, V, 1.0f, acts.logits, V, wte, C, 1.0f, acts.dres + t0 * C, C);
      backend_->gemm(Trans::yes, Trans::no, V, C, n, 1.0f, acts.logits, V, x, C, 1.0f, emb.grad(layout_.wte), C);
    }
  }
  return pass == PassKind::logits ? 0.0 : sum_losses(acts.losses, N);
}

double GPT::dispatch(const TokenBatch& batch, PassKind pass, float loss_weight, float* host_logits) {
  if (runner_) return runner_->run(batch, pass, loss_weight, host_logits);
  return precision_ == Precision::bf16 ? run<bf16>(batch, pass, loss_weight, host_logits)
                                       : run<float>(batch, pass, loss_weight, host_logits);
}

double GPT::forward_backward(const TokenBatch& batch, float loss_weight) {
  return dispatch(batch, PassKind::train, loss_weight, nullptr);
}

double GPT::forward_backward(const std::vector<TokenBatch>& passes, float loss_weight) {
  if (runner_) return runner_->run_passes(passes, loss_weight);
  double loss_sum = 0;
  for (const TokenBatch& pass : passes) loss_sum += forward_backward(pass, loss_weight);
  return loss_sum;
}

double GPT::forward_loss(const TokenBatch& batch) { return dispatch(batch, PassKind::loss, 0.0f, nullptr); }

void GPT::forward_logits(const TokenBatch& batch, float* logits) { dispatch(batch, PassKind::logits, 0.0f, logits); }

template <class T>
void GPT::embed(const TokenBatch& b, const ParamWindow& emb) {
  backend_->embedding_forward(activations<T>().encoded, b.tokens, b.positions, emb.param(layout_.wte),
                              layout_.wpe >= 0 ? emb.param(layout_.wpe) : nullptr, b.num_tokens,
                              static_cast<int>(config_.n_embd));
}

template <class T>
void GPT::embed_backward(const TokenBatch& b, const ParamWindow& emb, const T* dencoded) {
  backend_->embedding_backward(emb.grad(layout_.wte), layout_.wpe >= 0 ? emb.grad(layout_.wpe) : nullptr, dencoded,
                               b.tokens, b.positions, b.num_tokens, static_cast<int>(config_.n_embd));
}

template <class T>
void GPT::final_norm_backward(const OuterWindows& outer, const T* trunk_output, int64_t n) {
  Activations<T>& acts = activations<T>();
  const ParamWindow& fin = outer.final_norm;
  backend_->fill(acts.dnarrow, n * config_.n_embd, 0.0f);
  backend_->layernorm_backward(acts.dnarrow, fin.grad(layout_.lnf_w), fin.grad(layout_.lnf_b), acts.dres,
                               trunk_output, fin.param(layout_.lnf_w), acts.lnf_mean, acts.lnf_rstd, n,
                               static_cast<int>(config_.n_embd));
}

double GPT::flops(const TokenBatch& b) const {
  const double C = static_cast<double>(config_.n_embd);
  const double linear_layers = static_cast<double>(config_.linear_layers());
  const double softmax_layers = static_cast<double>(config_.n_layer) - linear_layers;
  const double matmul_params =
      static_cast<double>(layout_.num_params) - (layout_.wpe >= 0 ? static_cast<double>(config_.max_seq_len) * C : 0.0);
  double total = 6.0 * matmul_params * static_cast<double>(b.num_tokens);
  const double D = C / static_cast<double>(config_.n_head);
  for (int s = 0; s < b.num_sequences; ++s) {
    const double n = b.cu_seqlens[s + 1] - b.cu_seqlens[s];
    total += 6.0 * softmax_layers * C * n * n;  // QK^T and PV over the causal half: 2 n^2 C forward, x3 with backward
    const double chunk = std::min<double>(static_cast<double>(config_.linear_chunk), n);
    total += 3.0 * linear_layers * n * config_.n_head * (2.0 * chunk * D + 4.0 * D * D);  // intra, inter, state
  }
  return total;
}

// The steps of a pass, for both activation types (core/model/layer_runner.h).
#define TRIDENT_PASS_STEPS(T)                                                                                       \
  template void GPT::embed<T>(const TokenBatch&, const ParamWindow&);                                               \
  template void GPT::embed_backward<T>(const TokenBatch&, const ParamWindow&, const T*);                            \
  template void GPT::forward_layer<T>(int, const ParamWindow&, const TokenBatch&, const T*, LayerActivations<T>&);  \
  template void GPT::backward_layer<T>(int, const ParamWindow&, const TokenBatch&, const T*,                        \
                                       const LayerActivations<T>&, T*, T*);                                         \
  template double GPT::head<T>(const TokenBatch&, PassKind, float, float*, const OuterWindows&, const T*);          \
  template void GPT::final_norm_backward<T>(const OuterWindows&, const T*, int64_t);
TRIDENT_PASS_STEPS(float)
TRIDENT_PASS_STEPS(bf16)
#undef TRIDENT_PASS_STEPS

}  // namespace trident
