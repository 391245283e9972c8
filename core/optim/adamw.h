#pragma once
// AdamW over the model's flat parameter buffer (torch.optim.AdamW semantics: decoupled weight decay, bias
// correction), with weight decay only on the entries the layout marks (matrices and embeddings). Moments m and v
// share the parameter layout, so checkpoints store them as flat tensors. An optimizer may own one range of the layout
// (parallel.zero.stage: 1 or 2): it then holds the moments of that range alone and updates those parameters only.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/model/layout.h"
#include "core/tensor/tensor.h"
#include "kernels/backend.h"

namespace trident {

class AdamW {
 public:
  // The moments live in the backend's memory, taken from `allocator`; step() runs on the backend. `owned`: the range
  // of the layout this optimizer holds moments for and updates (nothing: all of it).
  AdamW(const ModelLayout& layout, const TrainConfig& config, Allocator& allocator, Backend& backend = cpu_backend(),
        std::optional<FlatRange> owned = std::nullopt);
  // The bytes the constructor takes from its allocator: two fp32 moments per parameter.
  static int64_t memory_bytes(int64_t num_params) { return 2 * 4 * num_params; }

  // One update at learning rate `lr`; every gradient is first multiplied by `grad_scale` (the clip coefficient).
  // With `only` ({offset, numel} ranges of the layout), the parameters there alone (those a rank updates); never
  // any outside owned(). `params` is the whole flat buffer, or, with `params_of_owned`, owned()'s alone
  // (parallel.zero.stage: 3 keeps no other); `grads` the same, with `grads_of_owned` (stages 2 and 3).
  void step(float* params, const float* grads, float lr, float grad_scale,
            const std::vector<std::pair<int64_t, int64_t>>& only = {}, bool grads_of_owned = false,
            bool params_of_owned = false);

  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }
  // The moments of owned(): m()[i] is parameter owned().offset + i's.
  float* m() { return m_.data<float>(); }
  float* v() { return v_.data<float>(); }
  const float* m() const { return m_.data<float>(); }
  const float* v() const { return v_.data<float>(); }
  int64_t size() const { return m_.numel(); }  // owned().numel
  const FlatRange& owned() const { return owned_; }
  Backend& backend() const { return *backend_; }

 private:
  struct Range {
    int64_t offset, numel;
    bool decay;
  };
  std::vector<Range> ranges_;  // consecutive layout entries with the same decay flag, merged
  TrainConfig config_;
  Backend* backend_;
  FlatRange owned_;
  Tensor m_, v_;
  int64_t steps_ = 0;
};

}  // namespace trident
