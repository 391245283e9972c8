// Device memory under the budgeted Allocator, pinned host memory, and the copy/compute streams ordered by events.
#include <cmath>

#include <catch2/catch.hpp>

#include "core/tensor/allocator.h"
#include "core/tensor/tensor.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/streams.h"
#include "support/assert_close.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;
using Catch::Matchers::Contains;

namespace {

std::vector<float> download(const Tensor& t) {
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  TRIDENT_CUDA_CHECK(cudaMemcpy(host.data(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace

TEST_CASE("cuda device memory: budget enforced, zeros, NaN poisoning, peak, reuse after release", "[cuda][memory]") {
  cuda::DeviceMemory memory(0);
  Allocator alloc({.name = "cuda", .budget_bytes = 1 << 20, .poison_fresh_memory = true, .resource = &memory});
  CHECK(alloc.device() == Device::cuda);
  {
    Tensor zeros = Tensor::zeros(alloc, {1000});
    CHECK(zeros.device() == Device::cuda);
    for (float x : download(zeros)) CHECK(x == 0.0f);
    Tensor poisoned = Tensor::empty(alloc, {1000});
    for (float x : download(poisoned)) CHECK(std::isnan(x));
    CHECK_THROWS_WITH(Tensor::empty(alloc, {300000}), Contains("cuda memory budget exceeded"));
    CHECK(alloc.in_use() == 8000);
  }
  CHECK(alloc.in_use() == 0);
  CHECK(alloc.peak() == 8000);
  Tensor again = Tensor::empty(alloc, {200000});  // 800 KB fits once the others are gone
  CHECK(alloc.live_allocations() == 1);
}

TEST_CASE("cuda streams: copy in, compute and copy out overlap-ready, ordered by events", "[cuda][streams]") {
  const int64_t n = 1 << 20;
  cuda::PinnedHostMemory pinned;
  cuda::DeviceMemory device(0);
  Allocator host_alloc({.name = "pinned", .budget_bytes = 64 << 20, .resource = &pinned});
  Allocator device_alloc({.name = "cuda", .budget_bytes = 64 << 20, .resource = &device});
  Tensor in_host = Tensor::empty(host_alloc, {n}), out_host = Tensor::empty(host_alloc, {n});
  Tensor in_dev = Tensor::empty(device_alloc, {n}), out_dev = Tensor::empty(device_alloc, {n});
  CHECK(in_host.device() == Device::cpu);
  auto x = random_normal<float>(n, 3);
  std::copy(x.begin(), x.end(), in_host.data<float>());

  cuda::DeviceStreams streams;
  cuda::Event copied_in, computed, copied_out;
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(in_dev.raw(), in_host.raw(), in_host.nbytes(), cudaMemcpyHostToDevice,
                                     streams.copy_in.get()));
  streams.copy_in.record(copied_in);
  streams.compute.wait(copied_in);
  cuda::bias_gelu_forward(in_dev.data<float>(), out_dev.data<float>(), static_cast<const float*>(nullptr), n, 1,
                          streams.compute.get());
  streams.compute.record(computed);
  streams.copy_out.wait(computed);
  TRIDENT_CUDA_CHECK(cudaMemcpyAsync(out_host.raw(), out_dev.raw(), out_dev.nbytes(), cudaMemcpyDeviceToHost,
                                     streams.copy_out.get()));
  streams.copy_out.record(copied_out);
  copied_out.synchronize();
  CHECK(copied_out.done());

  std::vector<float> expect(n);
  cpu::bias_gelu_forward(x.data(), expect.data(), nullptr, n, 1);
  check_close("gelu through three streams", out_host.data<float>(), expect.data(), n, 1e-6);
}
