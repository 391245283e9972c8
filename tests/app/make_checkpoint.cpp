// Writes a real checkpoint of a tiny model for the `trident ckpt` tests (training does not write them yet):
//   trident_make_checkpoint RUN_DIR STEP
// The weights and moments are a deterministic function of STEP. Prints the checkpoint directory.
#include <cstdio>
#include <cstring>
#include <string>

#include "core/checkpoint/checkpoint.h"
#include "kernels/common/error.h"

int main(int argc, char** argv) {
  using namespace trident;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s RUN_DIR STEP\n", argv[0]);
    return 2;
  }
  try {
    const int64_t step = std::stoll(argv[2]);
    Config config;
    config.model.n_layer = 2;
    config.model.n_embd = 16;
    config.model.n_head = 2;
    config.model.vocab_size = 29;
    config.model.max_seq_len = 8;
    Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 28});
    GPT model(config.model, 8, allocator);
    model.init_weights(static_cast<uint64_t>(step));
    AdamW optimizer(model.layout(), config.train, allocator);
    for (int64_t i = 0; i < optimizer.size(); ++i) {
      optimizer.m()[i] = 1e-3f * static_cast<float>(i % 97);
      optimizer.v()[i] = 1e-6f * static_cast<float>(i % 89);
    }
    optimizer.set_steps_taken(step);
    const SavedCheckpoint saved = save_checkpoint(argv[1], step, model, optimizer, config, 1, config.checkpoint.keep);
    std::printf("%s\n", saved.dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident_make_checkpoint: %s\n", e.what());
    return 1;
  }
}
