#pragma once
// Where `trident plan` gets the sequence lengths of its batches.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "parallel/strategy_entry.h"

namespace trident::app::plan {

struct BatchSource {
  std::string lengths_file;     // --lengths FILE: whitespace-separated lengths
  int64_t batch_sequences = 0;  // --batch-sequences N: N documents per batch (0 = the trainer's batches)
  int64_t batches = 1;          // --batches N
};

// - lengths file: consecutive runs of batch_sequences lengths (the whole file when 0), the first `batches` of them;
//   a bad entry is a ConfigError naming the file, line and text.
// - batch_sequences > 0: documents [b N, (b+1) N) of the configured corpus (wrapping around); those longer than
//   model.max_seq_len are left out, as the FlexSP paper drops sequences over its context limit.
// - otherwise: the lengths of the sequences of training batches 0 .. batches-1 (core/data/batcher.h: documents
//   cut at model.max_seq_len and packed to train.batch_tokens), exactly what `trident train` would see.
std::vector<PlanBatch> draw_batches(const Config& config, const BatchSource& source);

}  // namespace trident::app::plan
