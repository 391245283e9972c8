// The schedule. A pass is a fixed list of uses: forward of sub-models 0..G-1, then (training) backward of G-1..0; a
// cursor walks it as the model acquires and releases sub-models, in that order only. After every acquire and release,
// prefetch looks ahead from the cursor: the distinct sub-models needed next, as many as there are slots, nearest
// first; each keeps the slot that holds it or takes a free slot none of them needs, and its load (weights, and for a
// backward use its gradient window from the store) is queued on the copy engine at once. So while sub-model k
// computes, the next slots-1 are already loading; the compute waits (exposed time) only in acquire, for the ticket of
// its own load. A backward release queues the drain of the slot's gradients to the store before anything may load
// into that slot (the copy engine runs its queue in order). The embeddings and final norm load at the start of a pass
// and drain at its end. Every pass starts with every slot empty: the store may have changed in between (an optimizer
// step, a checkpoint), so nothing stale is reused.
#include "parallel/atom/swapper.h"

#include <algorithm>

#include <fmt/core.h>

#include "kernels/common/error.h"

namespace trident {

namespace {

// Sub-model k's flat range: from its first layer's first tensor to the next sub-model's (or ln_f).
std::vector<std::pair<int64_t, int64_t>> sub_model_ranges(const ModelLayout& layout, const std::vector<int>& starts) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const int64_t begin = layout.blocks[static_cast<std::size_t>(starts[k])].ln1_w;
    const int64_t end = k + 1 < starts.size() ? layout.blocks[static_cast<std::size_t>(starts[k + 1])].ln1_w
                                              : layout.lnf_w;
    out.emplace_back(begin, end);
  }
  return out;
}

int64_t outer_params(const ModelLayout& layout) { return layout.blocks[0].ln1_w + (layout.num_params - layout.lnf_w); }

}  // namespace

int64_t LayerSwapper::device_bytes(const ModelConfig& config, const std::vector<int>& sub_model_starts, int slots,
                                   Precision precision) {
  const ModelLayout layout = model_layout(config);
  int64_t widest = 0;
  for (auto [begin, end] : sub_model_ranges(layout, sub_model_starts)) widest = std::max(widest, end - begin);
  const int64_t per_param = 8 + (precision == Precision::bf16 ? 2 : 0);
  const int64_t used_slots = std::min<int64_t>(slots, static_cast<int64_t>(sub_model_starts.size()));
  return per_param * (outer_params(layout) + used_slots * widest);
}

LayerSwapper::LayerSwapper(SubModelRunner& runner, Allocator& device, SwapOptions options)
    : runner_(runner), model_(runner.model()), options_(options), bf16_(model_.precision() == Precision::bf16),
      engine_(model_.backend().make_copy_queue(), options.copy_bytes_per_s) {
  const GPT& model = model_;
  TRIDENT_CHECK(options.slots >= 2, "swapping needs at least 2 device slots (one computing, one loading)");
  const ModelLayout& layout = model.layout();
  for (auto [begin, end] : sub_model_ranges(layout, runner.sub_model_starts())) sub_models_.push_back({begin, end});
  embeddings_ = {0, layout.blocks[0].ln1_w};
  final_norm_ = {layout.lnf_w, layout.num_params};
  const int64_t outer = outer_params(layout);
  outer_params_ = Tensor::empty(device, {outer});
  outer_grads_ = Tensor::empty(device, {outer});
  if (bf16_) outer_params16_ = Tensor::empty(device, {outer}, DType::bf16);
  int64_t widest = 0;
  for (const Range& r : sub_models_) widest = std::max(widest, r.end - r.begin);
  slots_.resize(std::min<std::size_t>(static_cast<std::size_t>(options.slots), sub_models_.size()));
  for (Slot& s : slots_) {
    s.params = Tensor::empty(device, {widest});
    s.grads = Tensor::empty(device, {widest});
    if (bf16_) s.params16 = Tensor::empty(device, {widest}, DType::bf16);
  }
  store_grads_zero_.assign(sub_models_.size() + 1, false);  // the store's gradients are whatever it holds
  runner.set_source(this);
}

LayerSwapper::~LayerSwapper() {
  try {
    engine_.wait_all();  // no job may outlive the slots it writes
  } catch (...) {
    // a failed copy is reported by the pass that waits for it (end_pass waits for all); nothing is left to report to
  }
  runner_.set_source(nullptr);
}

CopyEngine::Ticket LayerSwapper::load(std::string label, Range range, std::size_t part, float* params, bf16* params16,
                                      float* grads, bool with_params, bool with_grads) {
  const int64_t n = range.end - range.begin;
  const float* store_params = model_.params() + range.begin;
  const float* store_grads = model_.grads() + range.begin;
  const bool zero = store_grads_zero_[part];
  int64_t bytes = 0;
  if (with_params) {
    bytes += 4 * n;
    ++stats_.loads;
  }
  if (with_grads && !zero) bytes += 4 * n;
  stats_.h2d_bytes += bytes;
  return engine_.submit(std::move(label), bytes, [=](CopyQueue& copies) {
    const auto size = sizeof(float) * static_cast<std::size_t>(n);
    if (with_params) {
      copies.upload(params, store_params, size);
      if (params16) copies.round_to_bf16(params16, params, n);  // as the resident model's per-pass conversion rounds
    }
    if (with_grads) {
      if (zero) copies.zero(grads, n);
      else copies.upload(grads, store_grads, size);
    }
  });
}

ParamWindow LayerSwapper::window(const Slot& slot, Range range) const {
  return {.begin = range.begin,
          .end = range.end,
          .params = const_cast<float*>(slot.params.data<float>()),
          .params16 = bf16_ ? const_cast<bf16*>(slot.params16.data<bf16>()) : nullptr,
          .grads = const_cast<float*>(slot.grads.data<float>())};
}

LayerSource::Outer LayerSwapper::begin_pass(bool train, int passes) {
  train_ = train;
  uses_.clear();
  const int G = static_cast<int>(sub_models_.size());
  for (int k = 0; k < G; ++k) uses_.push_back({k, false});
  if (train)
    for (int k = G - 1; k >= 0; --k) uses_.push_back({k, true});
  cursor_ = 0;
  // The store may have changed since the last pass (an optimizer step, a checkpoint): every slot reloads.
  engine_.wait_all();  // nothing of an interrupted pass still writes a slot
  for (Slot& s : slots_) {
    s.sub_model = -1;
    s.in_use = s.grads_ready = false;
  }
  const std::size_t outer = sub_models_.size();
  const int64_t split = embeddings_.end - embeddings_.begin;
  float* p = outer_params_.data<float>();
  float* g = outer_grads_.data<float>();
  bf16* p16 = bf16_ ? outer_params16_.data<bf16>() : nullptr;
  stats_.passes += passes;
  load("load embeddings", embeddings_, outer, p, p16, g, true, train);
  const CopyEngine::Ticket ready =
      load("load final norm", final_norm_, outer, p + split, p16 ? p16 + split : nullptr, g + split, true, train);
  prefetch();
  stats_.exposed_s += engine_.wait(ready);
  Outer out;
  out.embeddings = {.begin = embeddings_.begin, .end = embeddings_.end, .params = p, .params16 = p16, .grads = g};
  out.final_norm = {.begin = final_norm_.begin,
                    .end = final_norm_.end,
                    .params = p + split,
                    .params16 = p16 ? p16 + split : nullptr,
                    .grads = g + split};
  return out;
}

void LayerSwapper::end_pass(bool train) {
  TRIDENT_CHECK(cursor_ == uses_.size(), "a pass ended after {} of its {} sub-model uses", cursor_, uses_.size());
  if (train) {
    const int64_t n = outer_grads_.numel();
    float* device = outer_grads_.data<float>();
    float* store_head = model_.grads();
    float* store_tail = model_.grads() + final_norm_.begin;
    const int64_t split = embeddings_.end - embeddings_.begin;
    stats_.d2h_bytes += 4 * n;
    engine_.submit("drain embeddings, final norm", 4 * n, [=](CopyQueue& copies) {
      copies.download(store_head, device, sizeof(float) * static_cast<std::size_t>(split));
      copies.download(store_tail, device + split, sizeof(float) * static_cast<std::size_t>(n - split));
    });
    store_grads_zero_.back() = false;
  }
  stats_.exposed_s += engine_.wait_all();
}

LayerSwapper::Slot* LayerSwapper::holding(int sub_model) {
  for (Slot& s : slots_)
    if (s.sub_model == sub_model) return &s;
  return nullptr;
}

void LayerSwapper::prepare(Slot& slot, Use use) {
  const bool with_params = slot.sub_model != use.sub_model;
  if (with_params) slot.grads_ready = false;
  const bool with_grads = use.backward && !slot.grads_ready;
  if (!with_params && !with_grads) return;
  const CopyEngine::Ticket ticket =
      load(fmt::format("load {}{}", use.sub_model, with_grads ? (with_params ? " with gradients" : " gradients") : ""),
           sub_models_[static_cast<std::size_t>(use.sub_model)], static_cast<std::size_t>(use.sub_model),
           slot.params.data<float>(), bf16_ ? slot.params16.data<bf16>() : nullptr, slot.grads.data<float>(),
           with_params, with_grads);
  slot.sub_model = use.sub_model;
  if (with_params) slot.weights_ready = ticket;
  if (with_grads) {
    slot.grads_ready = true;
    slot.gradients_ready = ticket;
  }
}

void LayerSwapper::prefetch() {
  // The distinct sub-models needed from the current use on, as many as there are slots, nearest first: each keeps
  // or gets a slot (a free one whose sub-model none of them needs), and is prepared for its uses in order.
  std::vector<int> ahead;
  for (std::size_t i = cursor_; i < uses_.size(); ++i) {
    const int sub_model = uses_[i].sub_model;
    if (std::find(ahead.begin(), ahead.end(), sub_model) != ahead.end()) continue;
    if (ahead.size() == slots_.size()) break;
    ahead.push_back(sub_model);
  }
  for (std::size_t i = cursor_; i < uses_.size(); ++i) {
    const Use use = uses_[i];
    if (std::find(ahead.begin(), ahead.end(), use.sub_model) == ahead.end()) break;
    Slot* slot = holding(use.sub_model);
    for (Slot& s : slots_)
      if (!slot && !s.in_use && std::find(ahead.begin(), ahead.end(), s.sub_model) == ahead.end()) slot = &s;
    if (!slot) break;  // every slot busy: the next release prefetches again
    prepare(*slot, use);
  }
}

ParamWindow LayerSwapper::acquire(int sub_model, bool backward) {
  TRIDENT_CHECK(cursor_ < uses_.size() && uses_[cursor_].sub_model == sub_model && uses_[cursor_].backward == backward,
                "sub-model {} was asked for out of order ({})", sub_model, backward ? "backward" : "forward");
  prefetch();
  Slot* slot = holding(sub_model);
  TRIDENT_CHECK(slot && !slot->in_use, "sub-model {} has no free slot", sub_model);
  slot->in_use = true;
  const CopyEngine::Ticket ready =
      backward ? std::max(slot->weights_ready, slot->gradients_ready) : slot->weights_ready;
  stats_.exposed_s += engine_.wait(ready);
  compute_start_ = engine_.now();
  return window(*slot, sub_models_[static_cast<std::size_t>(sub_model)]);
}

void LayerSwapper::release(int sub_model, bool backward) {
  Slot* slot = holding(sub_model);
  TRIDENT_CHECK(slot && slot->in_use && uses_[cursor_].sub_model == sub_model, "sub-model {} released but not acquired",
                sub_model);
  slot->in_use = false;
  compute_spans_.push_back({fmt::format("{} {}", backward ? "backward" : "forward", sub_model), 0, compute_start_,
                            compute_start_, engine_.now()});
  if (backward) {  // the gradients are final: back to the store, then the slot is free for the next load
    const Range range = sub_models_[static_cast<std::size_t>(sub_model)];
    const int64_t n = range.end - range.begin;
    float* store = model_.grads() + range.begin;
    const float* device = slot->grads.data<float>();
    stats_.d2h_bytes += 4 * n;
    engine_.submit(fmt::format("drain {}", sub_model), 4 * n,
                   [=](CopyQueue& copies) {
                     copies.download(store, device, sizeof(float) * static_cast<std::size_t>(n));
                   });
    store_grads_zero_[static_cast<std::size_t>(sub_model)] = false;
    slot->grads_ready = false;
  }
  ++cursor_;
  prefetch();
}

int64_t LayerSwapper::copy_activations(std::string label, std::vector<Copy> copies, bool to_host) {
  int64_t bytes = 0;
  for (const Copy& c : copies) bytes += static_cast<int64_t>(c.bytes);
  (to_host ? stats_.d2h_bytes : stats_.h2d_bytes) += bytes;
  stats_.activation_bytes += bytes;
  return engine_.submit(std::move(label), bytes, [copies = std::move(copies), to_host](CopyQueue& queue) {
    for (const Copy& c : copies) {
      if (to_host) queue.download(c.dst, c.src, c.bytes);
      else queue.upload(c.dst, c.src, c.bytes);
    }
  });
}

void LayerSwapper::wait_copies(int64_t ticket) { stats_.exposed_s += engine_.wait(ticket); }

void LayerSwapper::grads_zeroed() { std::fill(store_grads_zero_.begin(), store_grads_zero_.end(), true); }

void LayerSwapper::collect_copy_spans() {
  for (CopyEngine::Span& s : engine_.take_spans()) {
    stats_.copy_s += s.end - s.start;
    stats_.copy_cpu_s += s.cpu_s;
    if (options_.timeline) copy_spans_.push_back(std::move(s));
  }
  if (!options_.timeline) compute_spans_.clear();
}

SwapStats LayerSwapper::take_stats() {
  collect_copy_spans();
  SwapStats out = stats_;
  out.sub_models = static_cast<int>(sub_models_.size());
  stats_ = {};
  return out;
}

std::vector<CopyEngine::Span> LayerSwapper::take_timeline() {
  collect_copy_spans();
  std::vector<CopyEngine::Span> out = std::move(copy_spans_);
  out.insert(out.end(), compute_spans_.begin(), compute_spans_.end());
  copy_spans_.clear();
  compute_spans_.clear();
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.start < y.start; });
  return out;
}

}  // namespace trident
