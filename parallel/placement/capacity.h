#pragma once
// How many tokens one rank's activations hold: what device.memory_gb leaves once the model's weights, gradients and
// AdamW state are in. Training sizes the model's activations with it (unless a placement says otherwise,
// model_placement.h); `trident plan` asks it of the candidates.
#include <cstdint>
#include <functional>

#include "core/config/config.h"
#include "core/model/gpt.h"

namespace trident {

// The device bytes of a model (and whatever runs its passes) sized for a number of tokens, AdamW's state aside.
using ModelBytes = std::function<int64_t(int64_t tokens)>;

// The bytes of a rank's AdamW moments (every parameter's, or its range's: parallel.zero.stage 1 and up), and at stages
// 2 and 3 of its shards and the windows they move through (ModelShards::memory_bytes; the model then holds no
// gradients, and at stage 3 no weights).
int64_t optimizer_state_bytes(const Config& config, int zero_ranks);

// At most train.batch_tokens (no step holds more). A ConfigError naming device.memory_gb when not even one token fits.
// `zero_ranks`: the ranks parallel.zero shards the optimizer state over (parallel/zero/shards.h; 1: none).
int64_t token_capacity(const Config& config, const ModelBytes& model_bytes, int zero_ranks = 1);
// A model built with `memory` (a pipeline stage holds its layers' activations only), nothing beside it.
int64_t token_capacity(const Config& config, Precision precision, Device device, const ModelMemory& memory = {},
                       int zero_ranks = 1);

// This machine's physical memory: the host store's budget unless a placement keeps one of its own.
int64_t host_memory_bytes();

// The start-up log's line on a model that holds `capacity` tokens of activations in device.memory_gb: the bytes of
// its weights, gradients and optimizer state, and of its activations.
void log_activation_memory(const Config& config, const ModelBytes& model_bytes, int64_t capacity, int zero_ranks = 1);
void log_activation_memory(const Config& config, Precision precision, Device device, int64_t capacity,
                           const ModelMemory& memory = {}, int zero_ranks = 1);

}  // namespace trident
