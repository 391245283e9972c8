#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "kernels/cpu/blas.h"
#include "support/assert_close.h"
#include "support/fixtures.h"
#include "support/random.h"
#include "support/token_batch.h"

using namespace trident;
using namespace trident::test;

namespace {

// "softmax", "linear" (the default block: silu, gated, norm over the hidden dimension), or a linear block variant
// named "linear/<qk_activation>/<gate|nogate>/<hidden|head>".
ModelConfig tiny_model(const std::string& attention) {
  ModelConfig m;
  if (attention.rfind("linear/", 0) == 0) {
    const std::string rest = attention.substr(7);
    const std::size_t a = rest.find('/'), b = rest.rfind('/');
    m.linear_qk_activation = rest.substr(0, a);
    m.linear_output_gate = rest.substr(a + 1, b - a - 1) == "gate";
    m.linear_output_norm = rest.substr(b + 1);
  }
  m.n_layer = 2;
  m.n_embd = 24;
  m.n_head = 3;
  m.vocab_size = 37;
  m.max_seq_len = 16;
  m.attention = attention.substr(0, attention.find('/'));
  m.linear_chunk = 4;
  return m;
}

}  // namespace

// Every linear block variant: the default, elu1 with a per-head norm, the old block (no map, no gate, per head).
#define ALL_ATTENTION_KINDS "softmax", "linear", "linear/elu1/gate/head", "linear/none/nogate/head", \
                            "linear/silu/nogate/hidden"

TEST_CASE("GPT gradients match finite differences of the loss", "[core][model]") {
  const std::string attention = GENERATE(ALL_ATTENTION_KINDS);
  CAPTURE(attention);
  GPT model(tiny_model(attention), 64, test_allocator());
  model.init_weights(7);
  // larger weights than GPT-2's init so every path carries signal above fp32 noise
  for (int64_t i = 0; i < model.num_params(); ++i) model.params()[i] *= 2.0f;
  OwnedBatch b = make_batch({5, 1, 9}, 37, 3);
  const float w = 1.0f / b.num_targets();
  model.zero_grads();
  model.forward_backward(b.view(), w);
  std::vector<float> analytic(model.grads(), model.grads() + model.num_params());

  // central differences on a sample of parameters from every tensor, in fp32 (hence the loose tolerance)
  double worst = 0;
  for (const ParamEntry& e : model.layout().params) {
    for (int64_t k = 0; k < std::min<int64_t>(e.numel, 3); ++k) {
      const int64_t i = e.offset + (k * 7919) % e.numel;
      float& p = model.params()[i];
      const float saved = p, eps = 1e-3f;
      p = saved + eps;
      double plus = model.forward_loss(b.view()) * w;
      p = saved - eps;
      double minus = model.forward_loss(b.view()) * w;
      p = saved;
      double numeric = (plus - minus) / (2 * eps);
      double err = std::abs(numeric - analytic[i]) / std::max(1e-2, std::abs(numeric));
      INFO(e.name << "[" << (i - e.offset) << "] analytic " << analytic[i] << " numeric " << numeric);
      CHECK(err < 2e-2);
      worst = std::max(worst, err);
    }
  }
  INFO("worst relative error " << worst);
  SUCCEED();
}

TEST_CASE("a packed batch equals its documents run one by one", "[core][model]") {
  const std::string attention = GENERATE(ALL_ATTENTION_KINDS);
  CAPTURE(attention);
  GPT model(tiny_model(attention), 64, test_allocator());
  model.init_weights(11);
  OwnedBatch packed = make_batch({6, 10, 3}, 37, 5);
  model.zero_grads();
  double packed_loss = model.forward_backward(packed.view(), 1.0f);
  std::vector<float> packed_grads(model.grads(), model.grads() + model.num_params());

  model.zero_grads();
  double loss = 0;
  for (int s = 0; s < 3; ++s) {
    OwnedBatch one;
    for (int32_t t = packed.cu_seqlens[s]; t < packed.cu_seqlens[s + 1]; ++t) {
      one.tokens.push_back(packed.tokens[t]);
      one.targets.push_back(packed.targets[t]);
      one.positions.push_back(packed.positions[t]);
    }
    one.cu_seqlens = {0, static_cast<int32_t>(one.tokens.size())};
    loss += model.forward_backward(one.view(), 1.0f);
  }
  CHECK(packed_loss == Approx(loss).epsilon(1e-6));
  std::vector<float> separate(model.grads(), model.grads() + model.num_params());
  check_close("packed vs separate gradients", packed_grads, separate, 1e-5);
}

TEST_CASE("the chunked LM head gives the loss of the full logits", "[core][model]") {
  ModelConfig m = tiny_model("softmax");
  m.max_seq_len = 200;
  GPT model(m, 300, test_allocator());
  model.init_weights(13);
  OwnedBatch b = make_batch({200, 57}, 37, 9);  // more tokens than one head chunk
  std::vector<float> logits(b.tokens.size() * 37);
  model.forward_logits(b.view(), logits.data());
  double expect = 0;
  for (std::size_t t = 0; t < b.tokens.size(); ++t) {
    if (b.targets[t] < 0) continue;
    double mx = -1e30, sum = 0;
    for (int v = 0; v < 37; ++v) mx = std::max(mx, double(logits[t * 37 + v]));
    for (int v = 0; v < 37; ++v) sum += std::exp(logits[t * 37 + v] - mx);
    expect += mx + std::log(sum) - logits[t * 37 + b.targets[t]];
  }
  CHECK(model.forward_loss(b.view()) == Approx(expect).epsilon(1e-6));
  // at GPT-2 initialisation the loss is close to ln(V)
  CHECK(expect / b.num_targets() == Approx(std::log(37.0)).epsilon(0.05));
}

TEST_CASE("the model rejects tokens and targets outside the vocabulary and batches larger than its activations",
          "[core][model]") {
  GPT model(tiny_model("softmax"), 8, test_allocator());
  OwnedBatch b = make_batch({4}, 37, 1);
  b.tokens[2] = 37;
  CHECK_THROWS_WITH(model.forward_loss(b.view()), Catch::Contains("token id 37 at position 2"));
  b.tokens[2] = 0;
  b.targets[1] = -2;  // -1 means no target; anything else outside [0, 37) is an error, before any kernel runs
  CHECK_THROWS_WITH(model.forward_loss(b.view()), Catch::Contains("target -2 of token 1 of the batch is outside"));
  b.targets[1] = 37;
  CHECK_THROWS_WITH(model.forward_backward(b.view(), 1.0f), Catch::Contains("target 37 of token 1"));
  OwnedBatch big = make_batch({9}, 37, 1);
  CHECK_THROWS_WITH(model.forward_loss(big.view()), Catch::Contains("batch of 9 tokens exceeds the 8"));
}

TEST_CASE("backward reports every gradient range once, in gradient_buckets order", "[core][model]") {
  GPT model(tiny_model("softmax"), 64, test_allocator());
  model.init_weights(3);
  std::vector<std::pair<int64_t, int64_t>> seen;
  model.set_grad_ready_hook([&](int64_t offset, int64_t numel) { seen.emplace_back(offset, numel); });
  OwnedBatch b = make_batch({7, 4}, 37, 2);
  model.zero_grads();
  model.forward_backward(b.view(), 1.0f);
  CHECK(seen == gradient_buckets(model.layout()));
  CHECK(seen.size() == 4);  // ln_f, 2 blocks, embeddings
  int64_t covered = 0;
  for (auto [offset, numel] : seen) covered += numel;
  CHECK(covered == model.num_params());
  CHECK(seen.back().first == 0);
}

// ---- train.precision: bf16 (activations and matmul weights in bf16, fp32 masters and gradients), run on the CPU
// backend's bf16 emulation: the same model code the CUDA backend runs in bf16.

TEST_CASE("the bf16 model tracks the fp32 model: loss, gradients and logits", "[core][model][bf16]") {
  const std::string attention = GENERATE(ALL_ATTENTION_KINDS);
  CAPTURE(attention);
  const ModelConfig m = tiny_model(attention);
  GPT fp32(m, 64, test_allocator()), bf16(m, 64, test_allocator(), cpu_backend(), Precision::bf16);
  fp32.init_weights(5);
  bf16.init_weights(5);
  const OwnedBatch b = make_batch({9, 1, 14}, 37, 4);
  const float w = 1.0f / b.num_targets();
  fp32.zero_grads();
  bf16.zero_grads();
  const double loss32 = fp32.forward_backward(b.view(), w), loss16 = bf16.forward_backward(b.view(), w);
  // bf16 keeps 8 significant bits (relative rounding 2^-9 per store); the loss and gradients carry a few of those.
  CHECK(loss16 != loss32);  // the activations really are bf16
  CHECK(std::abs(loss16 - loss32) <= 5e-3 * std::abs(loss32));
  for (const ParamEntry& e : fp32.layout().params) {
    // rms error relative to the tensor's gradient: robust to a few elements near zero
    const CloseReport r = compare(bf16.grads() + e.offset, fp32.grads() + e.offset, static_cast<std::size_t>(e.numel));
    INFO(e.name << ": rms relative error " << r.rms_rel << ", normalised max error " << r.normalised);
    CHECK(r.rms_rel <= 0.05);
  }
  std::vector<float> logits32(b.tokens.size() * 37), logits16(logits32.size());
  fp32.forward_logits(b.view(), logits32.data());
  bf16.forward_logits(b.view(), logits16.data());
  check_close("bf16 logits", logits16, logits32, 2e-2);
}

TEST_CASE("a bf16 forward reads the master weights as they are now", "[core][model][bf16]") {
  const ModelConfig m = tiny_model("softmax");
  GPT model(m, 64, test_allocator(), cpu_backend(), Precision::bf16);
  model.init_weights(8);
  const OwnedBatch b = make_batch({12, 5}, 37, 6);
  const double before = model.forward_loss(b.view());
  float* p = model.params();  // held across forwards, as an optimizer does
  for (int64_t i = 0; i < model.num_params(); ++i) p[i] *= 1.5f;
  const double after = model.forward_loss(b.view());
  CHECK(after != before);
  GPT fresh(m, 64, test_allocator(), cpu_backend(), Precision::bf16);
  std::copy(p, p + model.num_params(), fresh.params());
  CHECK(fresh.forward_loss(b.view()) == after);  // bit for bit: the copy was refreshed, not reused
}

TEST_CASE("bf16 activations take half the memory of fp32 ones", "[core][model][bf16]") {
  ModelConfig m = tiny_model("linear");
  m.max_seq_len = 1024;
  const int64_t tokens = 4096;  // activations dominate the parameters at this size
  Allocator a32({.name = "cpu", .budget_bytes = std::size_t(1) << 30}), a16({.name = "cpu", .budget_bytes = std::size_t(1) << 30});
  GPT fp32(m, tokens, a32), bf16(m, tokens, a16, cpu_backend(), Precision::bf16);
  const double params_bytes = 4.0 * static_cast<double>(fp32.num_params());
  const double acts32 = static_cast<double>(a32.in_use()) - 2 * params_bytes;  // params + grads
  const double acts16 = static_cast<double>(a16.in_use()) - 2.5 * params_bytes;  // + the bf16 weight copy
  INFO("activation bytes: fp32 " << acts32 << ", bf16 " << acts16);
  // Norm statistics, lse, losses and loss weights stay fp32, so slightly more than half.
  CHECK(acts16 < 0.55 * acts32);
  CHECK(acts16 > 0.45 * acts32);
}

// An AttentionOp that is the fp32 kernel itself: what a 1-rank sequence-parallel group runs.
class KernelOp final : public AttentionOp {
 public:
  KernelOp(bool linear, int H, int D) : linear_(linear), H_(H), D_(D) {}
  void forward(float* out, float* lse, const float* qkv, const float* slopes, int chunk,
               const TokenBatch& b) override {
    batch_ = b;
    slopes_ = slopes;
    chunk_ = chunk;
    if (linear_)
      cpu_backend().attention_linear_forward(out, nullptr, qkv, slopes, nullptr, b.cu_seqlens, b.num_sequences,
                                             b.num_tokens, H_, D_, chunk);
    else
      cpu_backend().attention_softmax_forward(out, lse, qkv, b.cu_seqlens, b.num_sequences, b.num_tokens, H_, D_);
  }
  void backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse) override {
    const TokenBatch& b = batch_;
    if (linear_)
      cpu_backend().attention_linear_backward(dqkv, nullptr, dout, nullptr, qkv, slopes_, nullptr, b.cu_seqlens,
                                              b.num_sequences, b.num_tokens, H_, D_, chunk_);
    else
      cpu_backend().attention_softmax_backward(dqkv, dout, qkv, out, lse, b.cu_seqlens, b.num_sequences,
                                               b.num_tokens, H_, D_);
  }

 private:
  bool linear_;
  int H_, D_, chunk_ = 0;
  const float* slopes_ = nullptr;
  TokenBatch batch_{};
};

// With bf16 activations an op sees exact fp32 copies and its outputs are rounded once: the arithmetic of the
// emulated bf16 kernels, so the model with the kernel as an op is the model without it, bit for bit.
TEST_CASE("sequence-parallel attention ops on bf16 activations equal the bf16 kernels bit for bit",
          "[core][model][bf16]") {
  for (const char* attention : {ALL_ATTENTION_KINDS}) {
    const ModelConfig m = tiny_model(attention);
    GPT plain(m, 64, test_allocator(), cpu_backend(), Precision::bf16);
    GPT with_op(m, 64, test_allocator(), cpu_backend(), Precision::bf16);
    plain.init_weights(9);
    with_op.init_weights(9);
    const int H = static_cast<int>(m.n_head), D = static_cast<int>(m.n_embd / m.n_head);
    std::vector<std::unique_ptr<AttentionOp>> ops;
    std::vector<AttentionOp*> layer_ops;
    for (int l = 0; l < m.n_layer; ++l) {
      ops.push_back(std::make_unique<KernelOp>(m.attention == "linear", H, D));
      layer_ops.push_back(ops.back().get());
    }
    const OwnedBatch b = make_batch({12, 5, 9}, 37, 6);
    // A 1-rank group: the micro-batch is its own slice.
    const SequenceParallelContext group{b.cu_seqlens.data(), static_cast<int>(b.cu_seqlens.size()) - 1,
                                        static_cast<int64_t>(b.tokens.size()), layer_ops.data()};
    TokenBatch sliced = b.view();
    sliced.sp = &group;
    const float w = 1.0f / b.num_targets();
    plain.zero_grads();
    with_op.zero_grads();
    INFO(attention);
    CHECK(plain.forward_backward(b.view(), w) == with_op.forward_backward(sliced, w));
    CHECK(std::equal(plain.grads(), plain.grads() + plain.num_params(), with_op.grads()));
  }
}

TEST_CASE("memory_bytes is what the model takes from its allocator", "[core][model]") {
  for (const char* attention : {"softmax", "linear", "linear/none/nogate/head"})
    for (const Precision precision : {Precision::fp32, Precision::bf16})
      for (const int64_t tokens : {int64_t{1}, int64_t{100}, int64_t{1000}}) {
        Allocator allocator({.name = "cpu", .budget_bytes = std::size_t(1) << 30});
        const ModelConfig m = tiny_model(attention);
        const GPT model(m, tokens, allocator, cpu_backend(), precision);
        INFO(attention << ", " << (precision == Precision::bf16 ? "bf16" : "fp32") << ", " << tokens << " tokens");
        CHECK(static_cast<int64_t>(allocator.in_use()) == GPT::memory_bytes(m, tokens, precision, Device::cpu));
        const std::size_t before = allocator.in_use();
        const AdamW optimizer(model.layout(), TrainConfig{}, allocator);
        CHECK(static_cast<int64_t>(allocator.in_use() - before) == AdamW::memory_bytes(model.num_params()));
      }
}

TEST_CASE("a step's loss and gradients have the same bits on 1, 2 and 3 threads", "[core][model]") {
  // On every library: the GEMMs are cut into tiles by shape and core count, never by thread count
  // (kernels/cpu/gemm.h), and the reductions into fixed blocks, so a run may resume or go on with another thread
  // count and stay bit-exact. Width 64 at 1,024 tokens is
  // tests/app/configs/tiny_train.yaml's model, whose bits the pthreads OpenBLAS's own threading changed; width 256
  // has GEMMs of several tiles.
  const std::string attention = GENERATE("softmax", "linear");
  const int width = GENERATE(64, 256);
  const std::string blas = GENERATE("openblas-debian", "openblas", "blis", "onednn");
  CAPTURE(attention, width, blas);
  if (blas != "openblas-debian" && !cpu::blas_loading_supported()) return;  // a sanitizer build has only the one
  cpu::use_blas(blas);
  ModelConfig m = tiny_model(attention);
  m.n_embd = width;
  m.n_head = 4;
  m.vocab_size = width == 64 ? 64 : 512;
  m.max_seq_len = 256;
  m.linear_chunk = 32;
  GPT model(m, 1024, test_allocator());
  model.init_weights(13);
  OwnedBatch b = make_batch(width == 64 ? std::vector<int>(16, 64) : std::vector<int>{256, 100, 156}, m.vocab_size,
                            17);
  const int saved = omp_get_max_threads();
  std::vector<double> losses;
  std::vector<std::vector<float>> grads;
  for (const int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    model.zero_grads();
    losses.push_back(model.forward_backward(b.view(), 1.0f / b.num_targets()));
    grads.emplace_back(model.grads(), model.grads() + model.num_params());
  }
  omp_set_num_threads(saved);
  cpu::use_blas("openblas-debian");
  CHECK(losses[1] == losses[0]);
  CHECK(losses[2] == losses[0]);
  CHECK(grads[1] == grads[0]);
  CHECK(grads[2] == grads[0]);
}
