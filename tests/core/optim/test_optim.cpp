#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/layout.h"
#include "core/optim/adamw.h"
#include "core/optim/schedule.h"

using namespace trident;

TEST_CASE("learning rate: linear warmup, then cosine decay to min_lr at the last step", "[core][optim]") {
  TrainConfig c;
  c.steps = 111;  // 100 decay steps after warmup: step 60 is halfway
  c.warmup_steps = 10;
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  CHECK(learning_rate(c, 0) == Approx(1e-4));
  CHECK(learning_rate(c, 9) == Approx(1e-3));
  CHECK(learning_rate(c, 10) == Approx(1e-3));
  CHECK(learning_rate(c, 60) == Approx(5.5e-4));
  CHECK(learning_rate(c, 110) == Approx(1e-4));
  for (int64_t s = 10; s < 110; ++s) CHECK(learning_rate(c, s + 1) <= learning_rate(c, s));
  c.warmup_steps = 0;
  CHECK(learning_rate(c, 0) == Approx(1e-3));
}

TEST_CASE("AdamW decays matrices and embeddings but not biases or norms", "[core][optim]") {
  ModelConfig m;
  m.n_layer = 1;
  m.n_embd = 8;
  m.n_head = 2;
  m.vocab_size = 11;
  m.max_seq_len = 4;
  ModelLayout layout = model_layout(m);
  TrainConfig t;
  t.weight_decay = 0.5;
  t.lr = 0.1;
  Allocator allocator({.name = "cpu", .budget_bytes = 1 << 20});
  AdamW adam(layout, t, allocator);
  std::vector<float> params(layout.num_params, 1.0f), grads(layout.num_params, 0.0f);
  adam.step(params.data(), grads.data(), 0.1f, 1.0f);  // zero gradients: only weight decay moves parameters
  CHECK(adam.steps_taken() == 1);
  for (const ParamEntry& e : layout.params) {
    INFO(e.name);
    CHECK(params[e.offset] == Approx(e.decay ? 1.0f - 0.1f * 0.5f : 1.0f));
    CHECK(e.decay == (e.shape.size() == 2));
  }
}
