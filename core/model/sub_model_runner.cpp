#include "core/model/sub_model_runner.h"

#include <algorithm>
#include <utility>

#include <fmt/core.h>

#include "kernels/common/error.h"

namespace trident {

namespace {

// The layers of the widest of the first `count` sub-models (at most all); the last ends before layer `end`.
int64_t widest_sub_model(const std::vector<int>& starts, int64_t end, int count) {
  int64_t widest = 0;
  for (std::size_t k = 0; k < std::min(starts.size(), static_cast<std::size_t>(count)); ++k)
    widest = std::max<int64_t>(widest, (k + 1 < starts.size() ? starts[k + 1] : end) - starts[k]);
  return widest;
}

void check_sub_models(const std::vector<int>& starts, int64_t n_layer, int recomputed, int offloaded) {
  TRIDENT_CHECK(!starts.empty() && starts[0] == 0, "sub-models must start at layer 0");
  TRIDENT_CHECK(recomputed >= 0 && recomputed < static_cast<int>(starts.size()),
                "{} recomputed sub-models of {}: at most all but the last", recomputed, starts.size());
  TRIDENT_CHECK(offloaded >= 0 && offloaded < static_cast<int>(starts.size()),
                "{} offloaded sub-models of {}: at most all but the last", offloaded, starts.size());
  TRIDENT_CHECK(recomputed == 0 || offloaded == 0, "sub-models are either recomputed or offloaded, not both");
  for (std::size_t k = 1; k < starts.size(); ++k)
    TRIDENT_CHECK(starts[k] > starts[k - 1] && starts[k] < n_layer, "sub-model {} starts at layer {}: not increasing "
                  "below {} layers", k, starts[k], n_layer);
}

// Sub-models 0 .. transient take turns in the shared workspace(s) (Swapping::recomputed or Swapping::offloaded).
int transient_sub_models(const Swapping& swapping) { return std::max(swapping.recomputed, swapping.offloaded); }
int workspaces(const Swapping& swapping) { return swapping.offloaded > 0 ? 2 : 1; }

// The layers whose activations the model allocates: the widest sub-model up to the transient one (twice with two
// workspaces) and every later one.
int64_t workspace_layers(const ModelConfig& config, const Swapping& swapping) {
  const std::vector<int>& starts = swapping.sub_model_starts;
  const int transient = transient_sub_models(swapping);
  const std::size_t after = static_cast<std::size_t>(transient) + 1;
  const int64_t later = after < starts.size() ? config.n_layer - starts[after] : 0;
  return workspaces(swapping) * widest_sub_model(starts, config.n_layer, transient + 1) + later;
}

// The tokens the checkpoints and offloaded activations hold: a pass's, or a round's of several.
int64_t stash_tokens(int64_t max_tokens, const Swapping& swapping) {
  return std::max(max_tokens, swapping.round_tokens);
}
bool sub_model_major(int64_t max_tokens, const Swapping& swapping) { return swapping.round_tokens > max_tokens; }

// Values of the boundary checkpoints: the inputs of sub-models 1 .. transient.
int64_t checkpoint_values(const ModelConfig& config, int transient, int64_t tokens) {
  return transient * tokens * config.n_embd;
}

int64_t host_layer_bytes(const ModelConfig& config, int64_t tokens, Precision precision) {
  return (precision == Precision::bf16 ? saved_bytes_per_token<bf16>(config) : saved_bytes_per_token<float>(config)) *
         tokens;
}
// The layers whose activations move to the host: those of the offloaded sub-models but the last, or of all of them when
// a round runs sub-model by sub-model (the last one's backward no longer follows its forward).
int64_t moving_layers(const Swapping& swapping, int64_t max_tokens) {
  const int moving = sub_model_major(max_tokens, swapping) ? swapping.offloaded : swapping.offloaded - 1;
  return moving > 0 ? swapping.sub_model_starts[static_cast<std::size_t>(moving)] : 0;
}

}  // namespace

ModelMemory SubModelRunner::model_memory(const ModelConfig& config, int64_t max_tokens, const Swapping& swapping) {
  // int32 index values: one pass of max_tokens, or every pass of a round run sub-model by sub-model (at most a sequence
  // a token, each pass one more cu_seqlens entry)
  return {.weights_on_host = !swapping.resident,
          .store = swapping.store,
          .activation_layers = workspace_layers(config, swapping),
          .index_values = sub_model_major(max_tokens, swapping) ? 5 * swapping.round_tokens + 1 : 0,
          .selective_recompute = swapping.selective_recompute,
          .spare_values = swapping.recompute_as_needed
                              ? std::max(swapping.spare_values,
                                         checkpoint_values(config, transient_sub_models(swapping), max_tokens))
                              : 0,
          .in_source = swapping.in_source};
}

int64_t SubModelRunner::memory_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision, Device device,
                                    const Swapping& swapping) {
  // in the model's activations with recompute_as_needed
  const int64_t boundary_bytes = swapping.recompute_as_needed
                                     ? 0
                                     : checkpoint_values(config, transient_sub_models(swapping),
                                                         stash_tokens(max_tokens, swapping)) *
                                           activation_value_bytes(precision);
  return GPT::memory_bytes(config, max_tokens, precision, device, model_memory(config, max_tokens, swapping)) +
         (boundary_bytes + 3) / 4 * 4;  // whole fp32 elements, as allocated
}

int64_t SubModelRunner::offload_bytes(const ModelConfig& config, int64_t max_tokens, Precision precision,
                                     const Swapping& swapping) {
  return moving_layers(swapping, max_tokens) * host_layer_bytes(config, stash_tokens(max_tokens, swapping), precision);
}

namespace {

// The bytes of activations keeping `kept` layers' arrays for passes of `tokens`, with `spare` values after them.
int64_t kept_activation_bytes(ModelConfig config, Precision precision, int64_t kept, int64_t tokens, int64_t spare) {
  config.n_layer = kept;
  return precision == Precision::bf16 ? activation_bytes<bf16>(config, tokens, false, spare)
                                      : activation_bytes<float>(config, tokens, false, spare);
}

}  // namespace

int64_t SubModelRunner::as_needed_bytes(const ModelConfig& config, Precision precision, int64_t max_tokens,
                                        int64_t spare_values) {
  const int64_t checkpoints = checkpoint_values(config, static_cast<int>(config.n_layer) - 1, max_tokens);
  return kept_activation_bytes(config, precision, 1, max_tokens, std::max(spare_values, checkpoints));
}

int64_t SubModelRunner::as_needed_spare(const ModelConfig& config, Precision precision, int64_t max_tokens,
                                        int64_t free_bytes) {
  const int64_t checkpoints = checkpoint_values(config, static_cast<int>(config.n_layer) - 1, max_tokens);
  const int64_t least = as_needed_bytes(config, precision, max_tokens);
  const int64_t most = kept_activation_bytes(config, precision, config.n_layer, max_tokens, 0);
  const int64_t more = std::min(std::max<int64_t>(free_bytes, 0), std::max<int64_t>(most - least, 0));
  return checkpoints + more / activation_value_bytes(precision);
}

int SubModelRunner::layers_recomputed(const ModelConfig& config, Precision precision, int64_t room_bytes,
                                      int64_t pass_tokens) {
  auto bytes = [&](int64_t recomputed) {
    return kept_activation_bytes(config, precision, config.n_layer - recomputed, pass_tokens,
                                 checkpoint_values(config, static_cast<int>(recomputed), pass_tokens));
  };
  int recomputed = 0;
  while (recomputed < config.n_layer - 1 && bytes(recomputed) > room_bytes) ++recomputed;
  TRIDENT_CHECK(bytes(recomputed) <= room_bytes, "a pass of {} tokens does not fit the {} bytes of activations even "
                "recomputing {} layer(s)", pass_tokens, room_bytes, recomputed);
  return recomputed;
}

SubModelRunner::SubModelRunner(GPT& model, const Swapping& swapping, Allocator& device)
    : model_(model),
      starts_(swapping.sub_model_starts),
      end_layer_(static_cast<int>(model.config().n_layer)),
      recomputed_(swapping.recomputed),
      offloaded_(swapping.offloaded),
      transient_(transient_sub_models(swapping)),
      workspaces_(workspaces(swapping)) {
  const ModelConfig& config = model.config();
  const int64_t max_tokens = model.max_tokens();
  check_sub_models(starts_, config.n_layer, recomputed_, offloaded_);
  TRIDENT_CHECK((swapping.resident && offloaded_ == 0) || (swapping.store && swapping.store->device() == Device::cpu),
                "a swapped model's weights and offloaded activations need a store in host memory");
  TRIDENT_CHECK(model.activation_layers() == workspace_layers(config, swapping) &&
                    model.weights_on_host() == !swapping.resident &&
                    model.backend().device() == device.device(),
                "the model was not built with SubModelRunner::model_memory of its swapping");
  stash_tokens_ = stash_tokens(max_tokens, swapping);
  sub_model_major_ = sub_model_major(max_tokens, swapping);
  as_needed_ = swapping.recompute_as_needed;
  TRIDENT_CHECK(!as_needed_ || (swapping.resident && !swapping.selective_recompute && swapping.round_tokens == 0 &&
                                sub_models() == config.n_layer && recomputed_ == sub_models() - 1),
                "recomputing as needed takes a resident model's one-layer sub-models, all but the last recomputed");
  TRIDENT_CHECK(!sub_model_major_ || (starts_.size() >= 2 && transient_ == sub_models() - 1),
                "a round of {} tokens in passes of {} runs sub-model by sub-model: every sub-model but the last must "
                "be recomputed or offloaded", stash_tokens_, max_tokens);
  shared_layers_ = static_cast<int>(widest_sub_model(starts_, end_layer_, transient_ + 1));
  const int64_t boundary_values = checkpoint_values(config, transient_, stash_tokens_);
  if (!as_needed_)
    checkpoints_ = model.precision() == Precision::bf16 ? Tensor::empty(device, {boundary_values}, DType::bf16)
                                                        : Tensor::empty(device, {boundary_values});
  if (moving_layers(swapping, max_tokens) > 0) {
    host_layer_bytes_ = host_layer_bytes(config, stash_tokens_, model.precision());
    host_acts_ =
        Tensor::empty(*swapping.store, {(offload_bytes(config, max_tokens, model.precision(), swapping) + 3) / 4});
  }
  model.set_runner(this);
}

SubModelRunner::~SubModelRunner() { model_.set_runner(nullptr); }

int SubModelRunner::sub_model_end(int sub_model) const {
  return sub_model + 1 < sub_models() ? starts_[static_cast<std::size_t>(sub_model + 1)] : end_layer_;
}

void SubModelRunner::check_grad_ready() const {
  TRIDENT_CHECK(!model_.has_grad_ready_hook() || source_->reports_grad_ready(), "this model's gradients reach its "
                "store by sub-model, not by bucket: nothing would call its grad-ready hook");
}

void SubModelRunner::grads_zeroed() {
  if (source_) source_->grads_zeroed();
}

int SubModelRunner::take_recomputed_layers() { return std::exchange(most_recomputed_, 0); }

double SubModelRunner::run(const TokenBatch& batch, PassKind kind, float loss_weight, float* host_logits) {
  return model_.precision() == Precision::bf16 ? run_one<bf16>(batch, kind, loss_weight, host_logits)
                                               : run_one<float>(batch, kind, loss_weight, host_logits);
}

double SubModelRunner::run_passes(const std::vector<TokenBatch>& passes, float loss_weight) {
  if (sub_model_major_ && passes.size() > 1)
    return model_.precision() == Precision::bf16 ? run_round<bf16>(passes, loss_weight)
                                                 : run_round<float>(passes, loss_weight);
  double loss_sum = 0;
  for (const TokenBatch& p : passes) loss_sum += run(p, PassKind::train, loss_weight, nullptr);
  return loss_sum;
}

template <class T>
LayerActivations<T>& SubModelRunner::layer_acts(int l, int sub_model) {
  const int workspace = workspace_at_ >= 0 ? workspace_at_ : offloaded_ > 0 ? sub_model % 2 : 0;
  const int at = sub_model <= transient_
                     ? workspace * shared_layers_ + l - starts_[static_cast<std::size_t>(sub_model)]
                     : workspaces_ * shared_layers_ + l - starts_[static_cast<std::size_t>(transient_ + 1)];
  return model_.activations<T>().layers[static_cast<std::size_t>(at)];
}

template <class T>
const T* SubModelRunner::layer_input(int l, int sub_model) {
  if (l > starts_[static_cast<std::size_t>(sub_model)]) return layer_acts<T>(l - 1, sub_model).res3;
  if (sub_model == 0) return model_.activations<T>().encoded;
  // the sub-model after the workspace reads the last one in it, untouched until after its own backward
  return sub_model <= transient_ ? checkpoint<T>(sub_model) : layer_acts<T>(l - 1, sub_model - 1).res3;
}

template <class T>
T* SubModelRunner::checkpoint(int sub_model) {
  T* checkpoints = as_needed_ ? model_.activations<T>().spare : checkpoints_.data<T>();
  return checkpoints + (static_cast<int64_t>(sub_model - 1) * stash_tokens_ + pass_at_) * model_.config().n_embd;
}

// Every rank of a sequence-parallel group sizes its pass by the group's longest slice, so they recompute the same
// layers (a recomputed layer repeats its messages).
template <class T>
void SubModelRunner::fit_pass(int64_t tokens) {
  const ModelConfig& config = model_.config();
  const int recomputed = layers_recomputed(config, model_.precision(),
                                           static_cast<int64_t>(model_.activations<T>().storage.nbytes()), tokens);
  if (recomputed == recomputed_ && tokens == stash_tokens_) return;
  ModelConfig kept = config;
  kept.n_layer = config.n_layer - recomputed;
  recarve_activations<T>(model_.activations<T>(), kept, tokens, false,
                         checkpoint_values(config, recomputed, tokens));
  recomputed_ = transient_ = recomputed;
  stash_tokens_ = tokens;
}

template <class T>
void SubModelRunner::forward_layer(int l, int sub_model, const ParamWindow& w, const TokenBatch& b) {
  model_.forward_layer<T>(l, w, b, layer_input<T>(l, sub_model), layer_acts<T>(l, sub_model));
}

template <class T>
void SubModelRunner::backward_layer(int l, int sub_model, const ParamWindow& w, const TokenBatch& b, T* dres,
                                   T* dnarrow) {
  model_.backward_layer<T>(l, w, b, layer_input<T>(l, sub_model), layer_acts<T>(l, sub_model), dres, dnarrow);
}

// The sub-model's layers; unless recomputing, its output becomes the next sub-model's checkpoint when that one runs in
// the shared workspace.
template <class T>
void SubModelRunner::forward_sub_model(int sub_model, const ParamWindow& w, const TokenBatch& b, bool recomputing) {
  const int first = starts_[static_cast<std::size_t>(sub_model)], end = sub_model_end(sub_model);
  for (int l = first; l < end; ++l) forward_layer<T>(l, sub_model, w, b);
  if (recomputing || sub_model + 1 > transient_) return;
  const int64_t C = model_.config().n_embd;
  model_.backend().copy_rows(checkpoint<T>(sub_model + 1), C, layer_acts<T>(end - 1, sub_model).res3, C, b.num_tokens,
                             C);
}

template <class T>
int64_t SubModelRunner::copy_activations(int sub_model, int64_t n, bool to_host) {
  std::vector<LayerSource::Copy> copies;
  auto* host = static_cast<char*>(host_acts_.raw());
  for (int l = starts_[static_cast<std::size_t>(sub_model)]; l < sub_model_end(sub_model); ++l) {
    char* at = host + static_cast<int64_t>(l) * host_layer_bytes_;
    for (const SavedArray& a : saved_arrays(layer_acts<T>(l, sub_model), model_.config(), l)) {
      const auto bytes = static_cast<std::size_t>(n * a.bytes_per_token);
      char* pass = at + pass_at_ * a.bytes_per_token;
      copies.push_back(to_host ? LayerSource::Copy{pass, a.data, bytes} : LayerSource::Copy{a.data, pass, bytes});
      at += a.bytes_per_token * stash_tokens_;
    }
  }
  return source_->copy_activations(fmt::format("{} activations {}", to_host ? "drain" : "load", sub_model),
                                   std::move(copies), to_host);
}

// One pass: the embeddings, the sub-models, the head; training, the sub-models' backward in reverse, recomputing the
// forward of each recomputed one (Swapping::recomputed) from its checkpoint first or loading back its offloaded
// activations.
template <class T>
double SubModelRunner::run_one(const TokenBatch& host_batch, PassKind kind, float loss_weight, float* host_logits) {
  model_.check_batch(host_batch, kind != PassKind::logits);
  TRIDENT_CHECK(source_, "a swapped model needs its layer source before a pass");
  check_grad_ready();
  const bool train = kind == PassKind::train;
  if (as_needed_) {
    const int64_t group_tokens = host_batch.sp ? std::max(host_batch.sp->most_slice_tokens, host_batch.num_tokens)
                                               : host_batch.num_tokens;
    fit_pass<T>(group_tokens);
  }
  const TokenBatch b = model_.on_backend({host_batch})[0];
  const OuterWindows outer = source_->begin_pass(train, 1);
  Activations<T>& acts = model_.activations<T>();
  const int64_t N = b.num_tokens;
  model_.embed<T>(b, outer.embeddings);
  // Offloading: a sub-model's activations drain beside the next sub-model's forward; the one after that, in the same
  // workspace, waits for them.
  to_host_.assign(static_cast<std::size_t>(sub_models()), 0);
  to_device_.assign(static_cast<std::size_t>(sub_models()), 0);
  for (int k = 0; k < sub_models(); ++k) {
    const ParamWindow w = source_->acquire(k, false);
    if (train && k >= 2 && moves(k - 2)) source_->wait_copies(to_host_[static_cast<std::size_t>(k - 2)]);
    forward_sub_model<T>(k, w, b, false);
    if (train && moves(k)) to_host_[static_cast<std::size_t>(k)] = copy_activations<T>(k, N, true);
    source_->release(k, false);
  }
  const double loss_sum = model_.head<T>(b, kind, loss_weight, host_logits, outer, trunk_output<T>());
  if (train) {
    most_recomputed_ = std::max(most_recomputed_, recomputed_layers());
    model_.final_norm_backward<T>(outer, trunk_output<T>(), N);
    T* dres = acts.dnarrow;  // the gradient at the trunk's output; acts.dres is free
    T* dnarrow = acts.dres;
    for (int k = sub_models() - 1; k >= 0; --k) {
      const ParamWindow w = source_->acquire(k, true);
      if (k < recomputed_) forward_sub_model<T>(k, w, b, true);  // from its checkpoint
      if (moves(k)) source_->wait_copies(to_device_[static_cast<std::size_t>(k)]);
      for (int l = sub_model_end(k) - 1; l >= starts_[static_cast<std::size_t>(k)]; --l)
        backward_layer<T>(l, k, w, b, dres, dnarrow);
      source_->release(k, true);
      // its workspace is free: the activations of the sub-model two before it (the next to use it) load back
      if (k >= 2 && moves(k - 2)) to_device_[static_cast<std::size_t>(k - 2)] = copy_activations<T>(k - 2, N, false);
    }
    model_.embed_backward<T>(b, outer.embeddings, dres);
  }
  source_->end_pass(train);
  return loss_sum;
}

// A round of passes sub-model by sub-model (Swapping::round_tokens): the forward of every sub-model but the last over
// every pass, each pass's output of a sub-model kept as the next one's checkpoint (and, offloading, its activations
// sent to the store); then the last sub-model pass after pass, forward, loss and backward, the gradient at its input
// taking the place of its checkpoint; then the other sub-models' backward in reverse, pass after pass (each recomputed
// from its checkpoint or loaded back), and the embeddings'. Each sub-model comes onto the device once for the forward
// and once for the backward, whatever the passes. The gradients are those of the passes run one after another, but for
// the tied embedding's: it sums every pass's LM-head part before their embedding parts.
template <class T>
double SubModelRunner::run_round(const std::vector<TokenBatch>& host_passes, float loss_weight) {
  const int last = sub_models() - 1;
  const bool offload = offloaded_ > 0;
  int64_t tokens = 0;
  std::vector<int64_t> first_token;  // of each pass in the checkpoints and the store
  for (const TokenBatch& pass : host_passes) {
    model_.check_batch(pass, true);
    first_token.push_back(tokens);
    tokens += pass.num_tokens;
  }
  TRIDENT_CHECK(tokens <= stash_tokens_, "a round of {} tokens exceeds the {} the model's checkpoints were sized for",
                tokens, stash_tokens_);
  TRIDENT_CHECK(source_, "a swapped model needs its layer source before a pass");
  check_grad_ready();
  const std::vector<TokenBatch> passes = model_.on_backend(host_passes);
  const auto P = static_cast<int>(passes.size());
  Activations<T>& acts = model_.activations<T>();
  Backend& backend = model_.backend();
  const int64_t C = model_.config().n_embd;
  const OuterWindows outer = source_->begin_pass(true, P);
  const ParamWindow& emb = outer.embeddings;
  // Pass p of sub-model k computes in workspace `workspace_at_` with its tokens at pass_at_ in the checkpoints and
  // store.
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
      if (k == 0) model_.embed<T>(passes[static_cast<std::size_t>(p)], emb);
      forward_sub_model<T>(k, w, passes[static_cast<std::size_t>(p)], false);
      if (offload) drains.push_back(copy_activations<T>(k, passes[static_cast<std::size_t>(p)].num_tokens, true));
    }
    source_->release(k, false);
  }
  // The backward goes through (sub-model, pass) in this order; offloading, each loads into the workspace the one two
  // before it used, the first into the one the last sub-model does not use.
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
  source_->acquire(last, false);  // the protocol's forward of the last sub-model, which stays for its backward
  source_->release(last, false);
  {
    const ParamWindow w = source_->acquire(last, true);
    for (int p = 0; p < P; ++p) {
      const TokenBatch& b = passes[static_cast<std::size_t>(p)];
      enter(p, last_workspace);
      forward_sub_model<T>(last, w, b, false);
      loss_sum += model_.head<T>(b, PassKind::train, loss_weight, nullptr, outer, trunk_output<T>());
      model_.final_norm_backward<T>(outer, trunk_output<T>(), b.num_tokens);
      T* dres = acts.dnarrow;  // the gradient at the trunk's output; acts.dres is free
      T* dnarrow = acts.dres;
      for (int l = end_layer_ - 1; l >= starts_[static_cast<std::size_t>(last)]; --l)
        backward_layer<T>(l, last, w, b, dres, dnarrow);
      backend.copy_rows(checkpoint<T>(last), C, dres, C, b.num_tokens, C);
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
      if (k == 0) model_.embed<T>(b, emb);  // the first layer's input
      if (offload) source_->wait_copies(loads[unit]);
      else forward_sub_model<T>(k, w, b, true);
      T* dres = checkpoint<T>(last);  // the gradient at the pass's input of sub-model k + 1
      for (int l = sub_model_end(k) - 1; l >= starts_[static_cast<std::size_t>(k)]; --l)
        backward_layer<T>(l, k, w, b, dres, acts.dnarrow);
      load(unit + 2);
    }
    source_->release(k, true);
  }
  for (int p = 0; p < P; ++p) {
    const TokenBatch& b = passes[static_cast<std::size_t>(p)];
    enter(p, -1);
    model_.embed_backward<T>(b, emb, checkpoint<T>(last));
  }
  enter(0, -1);
  source_->end_pass(true);
  return loss_sum;
}

}  // namespace trident
