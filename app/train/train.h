#pragma once
// `trident train`: the single-rank training loop. Writes RUN_DIR/config.resolved.yaml, trident.log, metrics.jsonl,
// model_init.safetensors and model_final.safetensors, shows a progress line, evaluates on the held-out split every
// train.eval_every steps, and prints a generated sample at the end.
#include "core/config/config.h"

namespace trident {

void run_training(const Config& config);

}  // namespace trident
