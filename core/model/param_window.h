#pragma once
// Where the weights of the layers a pass computes are: a window onto the flat layout (core/model/layout.h). A resident
// model's one window is its whole flat buffer; a strategy that runs the layers itself (core/model/layer_runner.h)
// hands the model windows of its own, such as ATOM's device slots for a sub-model's layers.
#include <cstdint>

#include "kernels/shared/bf16.h"

namespace trident {

// Offsets [begin, end) of the parameters, their bf16 copy (train.precision: bf16) and their gradients. Accessors take
// the layout's flat offsets.
struct ParamWindow {
  int64_t begin = 0, end = 0;
  float* params = nullptr;
  bf16* params16 = nullptr;
  float* grads = nullptr;

  const float* param(int64_t offset) const { return params + (offset - begin); }
  float* grad(int64_t offset) const { return grads + (offset - begin); }
  // The weights the matmuls read: fp32 masters, or their bf16 copy.
  template <class T>
  const T* matmul(int64_t offset) const;
};

template <>
inline const float* ParamWindow::matmul<float>(int64_t offset) const {
  return param(offset);
}
template <>
inline const bf16* ParamWindow::matmul<bf16>(int64_t offset) const {
  return params16 + (offset - begin);
}

// The weights outside the blocks: the embeddings [0, first block) and the final norm [ln_f, end) of the layout.
struct OuterWindows {
  ParamWindow embeddings, final_norm;
};

}  // namespace trident
