#pragma once
// The CPU backend's copy queue (kernels/copy_queue.h): the compute has finished when its call returns, so there is
// nothing to wait for, and each copy is the backend's own (memcpy) on the calling thread.
#include <memory>

#include "kernels/copy_queue.h"

namespace trident::cpu {

std::unique_ptr<CopyQueue> make_copy_queue();

}  // namespace trident::cpu
