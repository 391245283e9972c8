// The host side of the cross-entropy target check: the same RuntimeError as kernels/cpu/crossentropy.cpp.
#include "kernels/common/error.h"
#include "kernels/cuda/crossentropy.h"

namespace trident::cuda::detail {

void throw_crossentropy_target_error(int32_t target, int64_t token, int V) {
  throw_runtime_error("cross-entropy: target {} of token {} is outside the vocabulary [0, {}) (and not -1)", target,
                      token, V);
}

}  // namespace trident::cuda::detail
