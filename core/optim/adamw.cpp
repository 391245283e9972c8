#include "core/optim/adamw.h"

#include "kernels/cpu/adamw.h"

namespace trident {

AdamW::AdamW(const ModelLayout& layout, const TrainConfig& config, Allocator& allocator, Backend& backend)
    : config_(config), backend_(&backend) {
  for (const ParamEntry& e : layout.params) {
    if (!ranges_.empty() && ranges_.back().decay == e.decay && ranges_.back().offset + ranges_.back().numel == e.offset)
      ranges_.back().numel += e.numel;
    else
      ranges_.push_back({e.offset, e.numel, e.decay});
  }
  m_ = Tensor::zeros(allocator, {layout.num_params});
  v_ = Tensor::zeros(allocator, {layout.num_params});
}

void AdamW::step(float* params, const float* grads, float lr, float grad_scale) {
  ++steps_;
  for (const Range& r : ranges_) {
    const cpu::AdamWHyper hyper{lr, static_cast<float>(config_.beta1), static_cast<float>(config_.beta2),
                                static_cast<float>(config_.eps),
                                r.decay ? static_cast<float>(config_.weight_decay) : 0.0f};
    backend_->adamw_update(params + r.offset, grads + r.offset, m() + r.offset, v() + r.offset, r.numel,
                           cpu::adamw_step(hyper, steps_), grad_scale);
  }
}

}  // namespace trident
