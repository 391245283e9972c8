#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "core/tensor/allocator.h"
#include "core/tensor/tensor.h"

using namespace trident;

TEST_CASE("allocator enforces the budget and tracks current and peak bytes", "[core][allocator]") {
  Allocator alloc({.name = "cpu", .budget_bytes = 1000});
  void* a = alloc.allocate(400);
  void* b = alloc.allocate(500);
  CHECK(alloc.in_use() == 900);
  CHECK(alloc.peak() == 900);
  alloc.release(a);
  CHECK(alloc.in_use() == 500);
  CHECK(alloc.peak() == 900);

  try {
    alloc.allocate(501);
    FAIL("allocation past the budget succeeded");
  } catch (const RuntimeError& e) {
    std::string msg = e.what();
    CHECK(msg.find("cpu memory budget exceeded") != std::string::npos);
    CHECK(msg.find("requested 501 B") != std::string::npos);
    CHECK(msg.find("in use 500 B") != std::string::npos);
    CHECK(msg.find("budget 1000 B") != std::string::npos);
    CHECK(e.exit_code() == 1);
  }
  CHECK(alloc.in_use() == 500);  // a failed request changes nothing
  void* c = alloc.allocate(500);  // exactly up to the budget is allowed
  CHECK(alloc.in_use() == 1000);
  alloc.release(b);
  alloc.release(c);
  CHECK(alloc.in_use() == 0);
  CHECK(alloc.live_allocations() == 0);
  alloc.reset_peak();
  CHECK(alloc.peak() == 0);
}

TEST_CASE("allocator refuses a single request larger than the whole budget", "[core][allocator]") {
  Allocator alloc({.name = "cuda", .budget_bytes = gib_to_bytes(0.5)});
  CHECK_THROWS_WITH(alloc.allocate(gib_to_bytes(1.0)), Catch::Contains("requested 1.00 GiB") &&
                                                           Catch::Contains("budget 512.00 MiB"));
}

TEST_CASE("poisoned allocations read as NaN until written", "[core][allocator]") {
  Allocator alloc({.name = "cpu", .budget_bytes = 1 << 20, .poison_fresh_memory = true});
  Tensor t = Tensor::empty(alloc, {3, 5});
  CHECK(std::isnan(t.data<float>()[7]));
  Tensor z = Tensor::zeros(alloc, {3, 5});
  CHECK(z.data<float>()[7] == 0.0f);
}

TEST_CASE("tensors release their memory and views share it", "[core][tensor]") {
  Allocator alloc({.name = "cpu", .budget_bytes = 1 << 20});
  {
    Tensor t = Tensor::zeros(alloc, {4, 6, 8});
    CHECK(alloc.in_use() == 4 * 6 * 8 * 4);
    CHECK(t.numel() == 192);
    CHECK(t.is_contiguous());
    CHECK(t.strides() == Shape{48, 8, 1});
    Tensor v = t.view({24, -1});
    CHECK(v.shape() == Shape{24, 8});
    Tensor n = t.narrow(1, 2, 3);
    CHECK(n.shape() == Shape{4, 3, 8});
    CHECK_FALSE(n.is_contiguous());
    n.data<float>()[0] = 5.0f;
    CHECK(t.data<float>()[2 * 8] == 5.0f);
    CHECK(n.describe() == "f32[4, 3, 8] cpu strided");
    CHECK_THROWS_AS(t.data<bf16>(), RuntimeError);
    Tensor h = Tensor::zeros(alloc, {10}, DType::bf16);
    CHECK(h.nbytes() == 20);
  }
  CHECK(alloc.in_use() == 0);
}

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN", "[core][tensor]") {
  CHECK(bf16_to_float(float_to_bf16(1.0f)) == 1.0f);
  CHECK(bf16_to_float(float_to_bf16(-2.5f)) == -2.5f);
  // 1 + 2^-8 is halfway between two bf16 values (1 and 1 + 2^-7): ties go to even (1).
  CHECK(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)) == 1.0f);
  CHECK(bf16_to_float(float_to_bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  CHECK(std::isinf(bf16_to_float(float_to_bf16(INFINITY))));
}
