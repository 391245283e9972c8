// Trident's loss at a checkpoint's weights on given documents, for comparing with other implementations:
//   trident_checkpoint_loss CHECKPOINT_DIR DOCUMENTS_FILE
// The model is the one the checkpoint's trainer_state.json records (its config), with the weights of its
// model.safetensors. DOCUMENTS_FILE holds one document per line, token ids separated by spaces; the documents are
// packed into one batch (attention stays inside each), every token but a document's last predicts the next.
// Prints "loss L targets T": L the mean cross-entropy over the T predicted tokens, in fp32 on the CPU backend.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/model_io.h"
#include "kernels/common/error.h"

int main(int argc, char** argv) {
  using namespace trident;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CHECKPOINT_DIR DOCUMENTS_FILE\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const ModelConfig config = parse_config(read_trainer_state(dir).config_yaml, "trainer_state.json").model;
    std::vector<int32_t> tokens, targets, positions, cu_seqlens = {0};
    std::ifstream in(argv[2]);
    if (!in) throw_runtime_error("cannot open '{}'", argv[2]);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::vector<int32_t> doc;
      for (int64_t id; words >> id;) {
        if (id < 0 || id >= config.vocab_size) throw_runtime_error("token {} is not below vocab_size", id);
        doc.push_back(static_cast<int32_t>(id));
      }
      if (!words.eof()) throw_runtime_error("'{}': '{}' is not a list of token ids", argv[2], line);
      if (doc.empty()) continue;
      if (config.attention == "softmax" && static_cast<int64_t>(doc.size()) > config.max_seq_len)
        throw_runtime_error("a document of {} tokens is longer than model.max_seq_len {}", doc.size(),
                            config.max_seq_len);
      for (std::size_t i = 0; i < doc.size(); ++i) {
        tokens.push_back(doc[i]);
        targets.push_back(i + 1 < doc.size() ? doc[i + 1] : -1);
        positions.push_back(static_cast<int32_t>(i));
      }
      cu_seqlens.push_back(static_cast<int32_t>(tokens.size()));
    }
    int64_t count = 0;
    for (int32_t t : targets) count += t >= 0;
    if (count == 0) throw_runtime_error("'{}' has no token with a next token", argv[2]);

    const int64_t n = static_cast<int64_t>(tokens.size());
    Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 32});
    GPT model(config, n, allocator);
    load_model(dir / "model.safetensors", model);
    const TokenBatch batch{tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), n,
                           static_cast<int>(cu_seqlens.size() - 1), nullptr};
    const double loss = model.forward_loss(batch) / static_cast<double>(count);
    std::printf("loss %.12g targets %lld\n", loss, static_cast<long long>(count));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident_checkpoint_loss: %s\n", e.what());
    return 1;
  }
}
