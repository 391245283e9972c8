#include "core/optim/adamw.h"

#include <algorithm>

#include "kernels/common/error.h"
#include "kernels/cpu/adamw.h"

namespace trident {

AdamW::AdamW(const ModelLayout& layout, const TrainConfig& config, Allocator& allocator, Backend& backend,
             std::optional<FlatRange> owned)
    : config_(config), backend_(&backend), owned_(owned.value_or(FlatRange{0, layout.num_params})) {
  TRIDENT_CHECK(owned_.offset >= 0 && owned_.numel >= 0 && owned_.offset + owned_.numel <= layout.num_params,
                "an optimizer owning [{}, {}) of {} parameters", owned_.offset, owned_.offset + owned_.numel,
                layout.num_params);
  for (const ParamEntry& e : layout.params) {
    if (!ranges_.empty() && ranges_.back().decay == e.decay && ranges_.back().offset + ranges_.back().numel == e.offset)
      ranges_.back().numel += e.numel;
    else
      ranges_.push_back({e.offset, e.numel, e.decay});
  }
  m_ = Tensor::zeros(allocator, {owned_.numel});
  v_ = Tensor::zeros(allocator, {owned_.numel});
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale,
                 const std::vector<std::pair<int64_t, int64_t>>& only, bool grads_of_owned, bool params_of_owned) {
  ++steps_;
  const int64_t grads_at = grads_of_owned ? owned_.offset : 0;  // the flat offset grads[0] belongs to
  const int64_t params_at = params_of_owned ? owned_.offset : 0;
  const std::vector<std::pair<int64_t, int64_t>> all = {{owned_.offset, owned_.numel}};
  for (const Range& r : ranges_) {
    const cpu::AdamWHyper hyper{lr, static_cast<float>(config_.beta1), static_cast<float>(config_.beta2),
                                static_cast<float>(config_.eps),
                                r.decay ? static_cast<float>(config_.weight_decay) : 0.0f};
    for (const auto& [offset, numel] : only.empty() ? all : only) {
      const int64_t begin = std::max({r.offset, offset, owned_.offset});
      const int64_t end = std::min({r.offset + r.numel, offset + numel, owned_.offset + owned_.numel});
      if (begin < end)
        backend_->adamw_update(params + (begin - params_at), grads + (begin - grads_at), m() + (begin - owned_.offset),
                               v() + (begin - owned_.offset), end - begin, cpu::adamw_step(hyper, steps_),
                               grad_scale);
    }
  }
}

}  // namespace trident
