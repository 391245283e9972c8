#pragma once
// Text generation for a person to read at the end of training: continue a prompt token by token, greedily
// (temperature 0) or by sampling softmax(logits / temperature), within the model's context window.
#include <cstdint>
#include <vector>

#include "core/model/gpt.h"

namespace trident {

std::vector<int32_t> generate(GPT& model, std::vector<int32_t> prompt, int64_t count, double temperature,
                              uint64_t seed);

}  // namespace trident
