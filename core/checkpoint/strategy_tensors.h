#pragma once
// A strategy's own state in a checkpoint (strategy.safetensors): F32 vectors by name, such as DiLoCo's outer momentum.
#include <map>
#include <string>
#include <vector>

namespace trident {

using StrategyTensors = std::map<std::string, std::vector<float>>;

}  // namespace trident
