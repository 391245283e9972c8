#pragma once
// Where the run's model is, when the strategy family that runs it says (parallel/strategy_entry.h, `place`): ATOM
// keeps the weights in host memory and swaps sub-models through the device, a pipeline stage keeps its own layers'
// activations. Made on every rank before the model, from the config alone; the model is then built with memory() and
// handed to attach(), and the family's strategies find what attach() made in StrategyEnv::placed.
#include <cstdint>
#include <memory>

#include "core/model/gpt.h"
#include "core/tensor/allocator.h"
#include "parallel/placement/capacity.h"

namespace trident {

// What a placement attached to a model: its runner and whatever feeds it. Kept by the caller while the model lives
// and destroyed before it.
class PlacedRun {
 public:
  virtual ~PlacedRun() = default;
};

class ModelPlacement {
 public:
  virtual ~ModelPlacement() = default;
  // Tokens one pass's activations hold: the model's max_tokens.
  virtual int64_t capacity_tokens() const = 0;
  // How the model is built; `host_store` is host memory for weights a runner keeps there.
  virtual ModelMemory memory(Allocator& host_store) const = 0;
  // After the model is built with memory(): what runs its passes, its device memory from `device` (the model's
  // allocator). nullptr: the model runs its passes itself, or the family's strategy drives them.
  virtual std::unique_ptr<PlacedRun> attach(GPT& model, Allocator& device, Allocator& host_store) const = 0;
  // The start-up log's lines on memory.
  virtual void log(const GPT& model, const Allocator& device, const Allocator& host_store) const = 0;
  // The budget of the run's host store: this machine's memory, unless the placement keeps a budget of its own.
  virtual int64_t host_store_bytes() const { return host_memory_bytes(); }
};

}  // namespace trident
