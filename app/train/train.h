#pragma once
// `trident train` on every rank of the job (collective over world()): each step on the strategy the selector picks
// (parallel/select/). Rank 0 writes RUN_DIR/config.resolved.yaml, metrics.jsonl, checkpoints/, model_init.safetensors
// and model_final.safetensors; every rank logs to trident.log. Shows a progress line, evaluates on the held-out split
// every train.eval_every steps, and prints a generated sample at the end.
#include "core/config/config.h"

namespace trident {

void run_training(const Config& config);

}  // namespace trident
