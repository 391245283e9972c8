// The whole model on the CUDA backend against the CPU backend (fp32): loss, every parameter gradient, and the
// weights after AdamW steps, for both attention types on a packed batch of uneven documents (one of a single token).
// Tolerance 1e-4 normalised, the bound the PyTorch parity test uses: the backends sum in different orders.
#include <random>

#include <catch2/catch.hpp>

#include "core/model/gpt.h"
#include "core/optim/adamw.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"
#include "support/assert_close.h"
#include "support/backend_download.h"

using namespace trident;
using namespace trident::test;

namespace {

ModelConfig small_model(const std::string& attention) {
  ModelConfig m;
  m.n_layer = 2;
  m.n_embd = 64;
  m.n_head = 4;
  m.vocab_size = 101;
  m.max_seq_len = 64;
  m.attention = attention;
  if (attention == "hybrid") m.layers = "SL";
  m.linear_chunk = 8;
  return m;
}

struct Batch {
  std::vector<int32_t> tokens, targets, positions, cu_seqlens{0};
  TokenBatch view() const {
    return {tokens.data(), targets.data(), positions.data(), cu_seqlens.data(), static_cast<int64_t>(tokens.size()),
            static_cast<int>(cu_seqlens.size()) - 1};
  }
};

Batch make_batch(int vocab, const std::vector<int>& lengths = {37, 1, 64, 20}) {
  Batch b;
  std::mt19937_64 rng(5);
  for (int len : lengths) {
    for (int i = 0; i < len; ++i) {
      b.tokens.push_back(static_cast<int32_t>(rng() % vocab));
      b.positions.push_back(i);
      b.targets.push_back(i + 1 < len ? static_cast<int32_t>(rng() % vocab) : -1);
    }
    b.cu_seqlens.push_back(static_cast<int32_t>(b.tokens.size()));
  }
  return b;
}

// One model on both backends from the same initial weights.
struct SideBySide {
  SideBySide(const std::string& attention, Precision precision)
      : cuda(cuda::make_cuda_backend(0)),
        host_alloc({.name = "cpu", .budget_bytes = std::size_t(1) << 30}),
        device_alloc({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &cuda->memory()}),
        m(small_model(attention)),
        on_cpu(m, 256, host_alloc, cpu_backend(), precision),
        on_gpu(m, 256, device_alloc, *cuda, precision) {
    on_cpu.init_weights(3);
    on_gpu.init_weights(3);
  }
  std::unique_ptr<Backend> cuda;
  Allocator host_alloc, device_alloc;
  ModelConfig m;
  GPT on_cpu, on_gpu;
};

}  // namespace

TEST_CASE("GPT on the cuda backend equals the cpu backend: loss, gradients, AdamW steps", "[cuda][model]") {
  const std::string attention = GENERATE("softmax", "linear", "hybrid");
  CAPTURE(attention);
  SideBySide both(attention, Precision::fp32);
  auto& [cuda, host_alloc, device_alloc, m, on_cpu, on_gpu] = both;
  TrainConfig t;
  AdamW opt_cpu(on_cpu.layout(), t, host_alloc), opt_gpu(on_gpu.layout(), t, device_alloc, *cuda);
  const Batch batch = make_batch(static_cast<int>(m.vocab_size));
  const int64_t P = on_cpu.num_params();

  for (int step = 0; step < 3; ++step) {
    on_cpu.zero_grads();
    on_gpu.zero_grads();
    const double loss_cpu = on_cpu.forward_backward(batch.view(), 1.0f / 100);
    const double loss_gpu = on_gpu.forward_backward(batch.view(), 1.0f / 100);
    CHECK(std::abs(loss_gpu - loss_cpu) <= 1e-4 * std::abs(loss_cpu));
    check_close_per_tensor("gradients step " + std::to_string(step), on_cpu.layout(),
                           download(*cuda, on_gpu.grads(), P), std::vector<float>(on_cpu.grads(), on_cpu.grads() + P),
                           1e-4);
    const double norm_cpu = cpu_backend().squared_norm(on_cpu.grads(), P);
    CHECK(std::abs(cuda->squared_norm(on_gpu.grads(), P) - norm_cpu) <= 1e-4 * norm_cpu);
    opt_cpu.step(on_cpu.params(), on_cpu.grads(), 1e-3f, 1.0f);
    opt_gpu.step(on_gpu.params(), on_gpu.grads(), 1e-3f, 1.0f);
    check_close("weights after step " + std::to_string(step), download(*cuda, on_gpu.params(), P).data(),
                on_cpu.params(), P, 1e-4);
  }
  std::vector<float> logits_cpu(batch.tokens.size() * m.vocab_size), logits_gpu(logits_cpu.size());
  on_cpu.forward_logits(batch.view(), logits_cpu.data());
  on_gpu.forward_logits(batch.view(), logits_gpu.data());
  check_close("logits", logits_gpu, logits_cpu, 1e-4);
}

// train.precision: bf16 on the GPU against the CPU backend's bf16 emulation (the same storage rules, fp32 arithmetic).
// The two round at the same points but sum in different orders, so a value can land on the neighbouring bf16: the
// bounds are those of bf16 against fp32 on the CPU (tests/core/model/test_model.cpp), which measure 0.3-1.8% rms there.
TEST_CASE("GPT in bf16 on the cuda backend tracks the cpu backend's bf16: loss, gradients, logits", "[cuda][model]") {
  const std::string attention = GENERATE("softmax", "linear", "hybrid");
  CAPTURE(attention);
  SideBySide both(attention, Precision::bf16);
  auto& [cuda, host_alloc, device_alloc, m, on_cpu, on_gpu] = both;
  const Batch batch = make_batch(static_cast<int>(m.vocab_size));
  on_cpu.zero_grads();
  on_gpu.zero_grads();
  const double loss_cpu = on_cpu.forward_backward(batch.view(), 1.0f / 100);
  const double loss_gpu = on_gpu.forward_backward(batch.view(), 1.0f / 100);
  CHECK(std::abs(loss_gpu - loss_cpu) <= 5e-3 * std::abs(loss_cpu));
  const std::vector<float> grads_gpu = download(*cuda, on_gpu.grads(), on_gpu.num_params());
  for (const ParamEntry& e : on_cpu.layout().params) {
    const CloseReport r = compare(grads_gpu.data() + e.offset, on_cpu.grads() + e.offset, std::size_t(e.numel));
    INFO(e.name << ": rms relative error " << r.rms_rel);
    CHECK(r.rms_rel <= 0.05);
  }
  std::vector<float> logits_cpu(batch.tokens.size() * m.vocab_size), logits_gpu(logits_cpu.size());
  on_cpu.forward_logits(batch.view(), logits_cpu.data());
  on_gpu.forward_logits(batch.view(), logits_gpu.data());
  check_close("bf16 logits", logits_gpu, logits_cpu, 2e-2);
}

#ifndef TRIDENT_SIMT_EMULATION
// GPT-2 124M at its real shapes (12 layers, width 768, 12 heads, T = 1,024, V = 50,304: every kernel at the sizes
// the GPU trains at), one step on both backends from the same weights: loss and every gradient within 1e-4. On a GPU
// only: the emulation would take hours.
TEST_CASE("GPT-2 124M at T = 1024, V = 50304 on the cuda backend equals the cpu backend", "[cuda][model]") {
  const std::string attention = GENERATE("softmax", "linear");
  CAPTURE(attention);
  const ModelConfig m{.n_layer = 12, .n_embd = 768, .n_head = 12, .vocab_size = 50304, .max_seq_len = 1024,
                      .attention = attention, .layers = ""};
  const int64_t T = 1024;
  std::unique_ptr<Backend> cuda = cuda::make_cuda_backend(0);
  Allocator host_alloc({.name = "cpu", .budget_bytes = std::size_t(8) << 30});
  Allocator device_alloc({.name = "cuda", .budget_bytes = std::size_t(8) << 30, .resource = &cuda->memory()});
  GPT on_cpu(m, T, host_alloc, cpu_backend(), Precision::fp32), on_gpu(m, T, device_alloc, *cuda, Precision::fp32);
  on_cpu.init_weights(11);
  on_gpu.init_weights(11);
  Batch batch;
  std::mt19937_64 rng(12);
  for (int64_t i = 0; i < T; ++i) {
    batch.tokens.push_back(static_cast<int32_t>(rng() % m.vocab_size));
    batch.positions.push_back(static_cast<int32_t>(i));
    batch.targets.push_back(i + 1 < T ? static_cast<int32_t>(rng() % m.vocab_size) : -1);
  }
  batch.cu_seqlens.push_back(static_cast<int32_t>(T));
  on_cpu.zero_grads();
  on_gpu.zero_grads();
  const double loss_cpu = on_cpu.forward_backward(batch.view(), 1.0f / (T - 1));
  const double loss_gpu = on_gpu.forward_backward(batch.view(), 1.0f / (T - 1));
  CHECK(std::abs(loss_gpu - loss_cpu) <= 1e-4 * std::abs(loss_cpu));
  const int64_t P = on_cpu.num_params();
  check_close_per_tensor("GPT-2 124M gradients", on_cpu.layout(), download(*cuda, on_gpu.grads(), P),
                         std::vector<float>(on_cpu.grads(), on_cpu.grads() + P), 1e-4);
}
#endif

#ifdef TRIDENT_SIMT_EMULATION
// The LM head runs 128 tokens at a time; none of its chunks waits for the device (the targets are checked on the
// host), so a pass of four chunks makes as many host round trips as a pass of one. The emulation counts them.
TEST_CASE("the LM head on the cuda backend waits for the device once a pass, not once a chunk", "[cuda][model]") {
  std::unique_ptr<Backend> cuda = cuda::make_cuda_backend(0);
  Allocator memory({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &cuda->memory()});
  const ModelConfig m = small_model("softmax");
  GPT model(m, 512, memory, *cuda, Precision::fp32);
  model.init_weights(3);
  auto waits_for = [&](int documents) {  // documents of 64 tokens
    Batch b;
    for (int d = 0; d < documents; ++d) {
      for (int i = 0; i < 64; ++i) {
        b.tokens.push_back((d * 64 + i) % static_cast<int>(m.vocab_size));
        b.positions.push_back(i);
        b.targets.push_back(i + 1 < 64 ? (d + i) % static_cast<int>(m.vocab_size) : -1);
      }
      b.cu_seqlens.push_back(static_cast<int32_t>(b.tokens.size()));
    }
    model.zero_grads();
    const uint64_t before = trident::simt::device().host_waits;
    model.forward_backward(b.view(), 1.0f / 100);
    return trident::simt::device().host_waits - before;
  };
  const uint64_t one_chunk = waits_for(2), four_chunks = waits_for(8);
  CHECK(four_chunks == one_chunk);
}
#endif

#ifdef TRIDENT_SIMT_EMULATION
// What the backend takes beside the allocator's budget (launch scratch from the pool) is bounded by
// launch_scratch_bytes, so the start-up check of device.memory_gb (cuda::memory_shortfall) covers it, and all of it
// is handed back. The emulation counts the device memory taken outside the allocator: a kernel that takes more
// scratch than the bound, or keeps some, fails here.
namespace {

class MarkedAsBudget final : public MemoryResource {
 public:
  explicit MarkedAsBudget(MemoryResource& inner) : inner_(inner) {}
  Device device() const override { return inner_.device(); }
  const char* name() const override { return inner_.name(); }
  void* allocate(std::size_t bytes) override {
    trident::simt::device().in_budget = true;
    void* p = inner_.allocate(bytes);
    trident::simt::device().in_budget = false;
    return p;
  }
  void release(void* ptr) override { inner_.release(ptr); }
  void fill(void* ptr, std::size_t bytes, uint8_t value) override { inner_.fill(ptr, bytes, value); }

 private:
  MemoryResource& inner_;
};

}  // namespace

TEST_CASE("the cuda backend takes at most launch_scratch_bytes beside its budget, and gives it back",
          "[cuda][memory]") {
  std::unique_ptr<Backend> cuda = cuda::make_cuda_backend(0);
  MarkedAsBudget budget(cuda->memory());
  Allocator memory({.name = "cuda", .budget_bytes = std::size_t(1) << 30, .resource = &budget});
  // Each term of the bound the largest in one case: the embedding's sort (few channels), the bias gradients'
  // partials (many channels and rows), the gradient norm's partials (few rows, many parameters). The layernorm's
  // partials are never the largest in a GPT block (at most the MLP bias's), but are bounded all the same.
  struct Case {
    const char* attention;
    int64_t channels, vocab;
    std::vector<int> lengths;
  };
  for (const Case& c : {Case{"softmax", 64, 101, {37, 1, 64, 20}}, Case{"linear", 64, 101, {37, 1, 64, 20}},
                        Case{"softmax", 256, 101, {64, 64, 64, 64, 64, 64, 64, 64}}, Case{"linear", 256, 101, {3}},
                        Case{"softmax", 64, 20000, {3}}}) {
    ModelConfig m = small_model(c.attention);
    m.n_embd = c.channels;
    m.vocab_size = c.vocab;
    const Batch b = make_batch(static_cast<int>(c.vocab), c.lengths);
    GPT model(m, b.view().num_tokens, memory, *cuda, Precision::bf16);
    model.init_weights(3);
    cuda->synchronize();
    trident::simt::Device& device = trident::simt::device();
    const std::size_t before = device.outside_bytes;  // the cuBLAS workspaces
    device.outside_peak = before;
    model.zero_grads();
    model.forward_backward(b.view(), 1.0f / 100);
    cuda->squared_norm(model.grads(), model.num_params());
    cuda->synchronize();
    INFO(c.attention << ", " << c.channels << " channels, " << b.view().num_tokens << " tokens");
    const int C = static_cast<int>(m.n_embd);
    const std::size_t most = cuda::launch_scratch_bytes(b.view().num_tokens, C, 4 * C, model.num_params());
    CHECK(device.outside_peak - before <= most);
    CHECK(device.outside_peak - before == most);  // the largest is taken: the bound is not slack
    CHECK(device.outside_bytes == before);
  }
}

// device.memory_gb is checked against the memory free on the GPU before the run allocates (the emulated device has
// 4 GiB): a budget that fits passes; one that does not, alone or times the ranks sharing the GPU, names the key and
// the largest value that fits.
TEST_CASE("cuda memory_shortfall names device.memory_gb and the largest budget that fits", "[cuda][memory]") {
  constexpr std::size_t kGiB = std::size_t(1) << 30;
  CHECK(cuda::memory_shortfall(0, 1.0, kGiB, 1 << 20, 1).empty());
  CHECK(cuda::memory_shortfall(0, 1.0, kGiB, 1 << 20, 3).empty());
  using Catch::Matchers::Contains;
  const std::string alone = cuda::memory_shortfall(0, 8.0, 8 * kGiB, 1 << 20, 1);
  CHECK_THAT(alone, Contains("device.memory_gb = 8 does not fit GPU 0") && Contains("1 rank(s)") &&
                        Contains("set device.memory_gb to at most 3.9"));
  const std::string shared = cuda::memory_shortfall(0, 1.5, 3 * kGiB / 2, 1 << 20, 4);
  CHECK_THAT(shared, Contains("device.memory_gb = 1.5 does not fit") && Contains("4 rank(s)") &&
                         Contains("set device.memory_gb to at most 0.9"));
  CHECK_THAT(cuda::memory_shortfall(0, 1.0, kGiB, 4 * kGiB, 1), Contains("no budget fits"));
}
#endif
