#pragma once
// LASP as the model sees it: one AttentionOp per linear-attention layer (core/model/attention.h), each holding its
// own LinearAttentionSP and so its own cached state, over the rank's sequence-parallel group.
#include <memory>

#include "core/model/attention.h"
#include "parallel/lasp/lasp.h"

namespace trident {

std::unique_ptr<AttentionOp> make_lasp_op(Communicator& sp, Backend& backend, LaspVariant variant, int H, int D);

}  // namespace trident
