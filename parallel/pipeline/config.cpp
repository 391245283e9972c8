// The pipeline's name for parallel.strategy; its stages and micro-batches follow from the model and the batch
// (train.micro_batches, device.memory_gb; parallel/pipeline/README.md), so it has no keys of its own.
#include "core/config/schema.h"

namespace trident {

// Collected by the build into strategy_config_sections() (core/config/schema.h).
ConfigSection pipeline_config_section() {
  return {.strategies = {"pipeline"}};
}

}  // namespace trident
