#include "app/train/sample.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernels/common/error.h"

namespace trident {

std::vector<int32_t> generate(GPT& model, std::vector<int32_t> prompt, int64_t count, double temperature,
                              uint64_t seed) {
  if (prompt.empty()) throw_runtime_error("generation needs a prompt of at least one token");
  const int64_t V = model.config().vocab_size, window = model.config().max_seq_len;
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out;
  std::vector<float> logits;
  for (int64_t i = 0; i < count; ++i) {
    // the last `window` tokens form one sequence; recomputing it each time keeps this simple (outputs are short)
    const int64_t n = std::min<int64_t>(window, static_cast<int64_t>(prompt.size()));
    std::vector<int32_t> tokens(prompt.end() - n, prompt.end()), positions(n), cu_seqlens = {0, int32_t(n)};
    std::iota(positions.begin(), positions.end(), 0);
    logits.resize(n * V);
    model.forward_logits({tokens.data(), nullptr, positions.data(), cu_seqlens.data(), n, 1}, logits.data());
    const float* last = logits.data() + (n - 1) * V;
    int32_t next;
    if (temperature <= 0) {
      next = static_cast<int32_t>(std::max_element(last, last + V) - last);
    } else {
      const float m = *std::max_element(last, last + V);
      std::vector<double> weights(V);
      for (int64_t v = 0; v < V; ++v) weights[v] = std::exp((last[v] - m) / temperature);
      next = static_cast<int32_t>(std::discrete_distribution<int64_t>(weights.begin(), weights.end())(rng));
    }
    prompt.push_back(next);
    out.push_back(next);
  }
  return out;
}

}  // namespace trident
