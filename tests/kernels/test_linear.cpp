#include <omp.h>

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("linear (GEMM + bias) matches the double reference, forward and backward", "[kernels][linear]") {
  auto [N, C, OC] = GENERATE(std::tuple<int64_t, int, int>{1, 1, 1}, std::tuple<int64_t, int, int>{5, 17, 3},
                             std::tuple<int64_t, int, int>{67, 96, 288});
  bool with_bias = GENERATE(true, false);
  CAPTURE(N, C, OC, with_bias);
  auto x = random_normal<float>(N * C, 1), w = random_normal<float>(C * OC, 2, 0.2), b = random_normal<float>(OC, 3);
  auto dout = random_normal<float>(N * OC, 4);
  auto xd = cast<double>(x), wd = cast<double>(w), bd = cast<double>(b), dyd = cast<double>(dout);

  std::vector<float> y(N * OC, 99.0f);  // forward overwrites
  cpu::linear_forward(y.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, N, C, OC);
  check_close("linear forward", y, reference::linear_forward(xd, wd, with_bias ? &bd : nullptr, N, C, OC), 1e-5);

  std::vector<float> dx(N * C, 1.0f), dw(C * OC, 1.0f), db(OC, 1.0f);
  cpu::linear_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), x.data(), w.data(), N, C,
                       OC);
  for (auto* g : {&dx, &dw, &db})
    for (auto& v : *g) v -= 1.0f;
  auto ref = reference::linear_backward(dyd, xd, wd, N, C, OC);
  check_close("linear dinp", dx, ref.dx, 1e-5);
  check_close("linear dweight", dw, ref.dw, 1e-5);
  if (with_bias) check_close("linear dbias", db, ref.db, 1e-5);
}

TEST_CASE("linear reference backward matches finite differences", "[kernels][linear]") {
  const int64_t N = 3;
  const int C = 4, OC = 5;
  auto x = random_normal<double>(N * C, 5), w = random_normal<double>(C * OC, 6), b = random_normal<double>(OC, 7);
  auto dy = random_normal<double>(N * OC, 8);
  auto loss = [&] { return weighted_sum(reference::linear_forward(x, w, &b, N, C, OC), dy); };
  auto g = reference::linear_backward(dy, x, w, N, C, OC);
  check_gradient("linear dx", loss, x, g.dx);
  check_gradient("linear dw", loss, w, g.dw);
  check_gradient("linear db", loss, b, g.db);
}

TEST_CASE("gemm handles every transpose combination, strides and strided batches", "[kernels][gemm]") {
  const int64_t M = 13, N = 7, K = 29, pad = 3, batch = 5;
  auto ta = GENERATE(Trans::no, Trans::yes);
  auto tb = GENERATE(Trans::no, Trans::yes);
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  const int64_t lda = (at ? M : K) + pad, ldb = (bt ? K : N) + pad, ldc = N + pad;
  const int64_t sa = (at ? K : M) * lda, sb = (bt ? N : K) * ldb, sc = M * ldc;
  auto A = random_normal<float>(batch * sa, 9), B = random_normal<float>(batch * sb, 10);
  auto C0 = random_normal<float>(batch * sc, 11);
  const float alpha = 0.75f, beta = 0.5f;

  std::vector<double> expect(C0.begin(), C0.end());
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          double a = at ? A[i * sa + k * lda + r] : A[i * sa + r * lda + k];
          double b = bt ? B[i * sb + c * ldb + k] : B[i * sb + k * ldb + c];
          acc += a * b;
        }
        expect[i * sc + r * ldc + c] = alpha * acc + beta * C0[i * sc + r * ldc + c];
      }

  std::vector<float> single = C0;
  for (int64_t i = 0; i < batch; ++i)
    cpu::gemm(ta, tb, M, N, K, alpha, A.data() + i * sa, lda, B.data() + i * sb, ldb, beta, single.data() + i * sc,
              ldc);
  check_close("gemm", single, expect, 1e-5);

  std::vector<float> batched = C0;
  cpu::gemm_strided_batched(ta, tb, M, N, K, alpha, A.data(), lda, sa, B.data(), ldb, sb, beta, batched.data(), ldc,
                            sc, batch);
  check_close("gemm_strided_batched", batched, expect, 1e-5);
}

TEST_CASE("gemm's tile grid covers the output, keeps tiles worth a call and is capped by the cores, not the threads",
          "[kernels][gemm]") {
  struct Shape {
    int64_t M, N, K;
  };
  for (const Shape s : {Shape{256, 768, 768}, Shape{768, 3072, 256}, Shape{1024, 50304, 768}, Shape{13, 7, 29},
                        Shape{1, 4096, 4096}, Shape{333, 97, 5000}, Shape{4096, 1, 64}}) {
    const int64_t max_tiles = GENERATE(cpu::GemmGrid::kMaxTiles, 8, 1);
    CAPTURE(s.M, s.N, s.K, max_tiles);
    const cpu::GemmGrid grid = cpu::gemm_grid(s.M, s.N, s.K, max_tiles);
    CHECK(grid.tiles() >= 1);
    CHECK(grid.tiles() <= max_tiles);
    CHECK(grid.row_start(0) == 0);
    CHECK(grid.col_start(0) == 0);
    CHECK(grid.row_start(grid.rows) == s.M);
    CHECK(grid.col_start(grid.cols) == s.N);
    for (int64_t r = 0; r < grid.rows; ++r) CHECK(grid.row_start(r) < grid.row_start(r + 1));
    for (int64_t c = 0; c < grid.cols; ++c) CHECK(grid.col_start(c) < grid.col_start(c + 1));
    if (grid.tiles() > 1) {  // no tile smaller than the rule allows (boundaries rounded to kTileAlign)
      const double smallest_rows = double(s.M) / grid.rows - cpu::GemmGrid::kTileAlign;
      const double smallest_cols = double(s.N) / grid.cols - cpu::GemmGrid::kTileAlign;
      CHECK(std::max(smallest_rows, 1.0) * std::max(smallest_cols, 1.0) * 2.0 * s.K >=
            cpu::GemmGrid::kMinTileFlops * 0.5);
    }
  }
  constexpr int64_t most = cpu::GemmGrid::kMaxTiles;
  CHECK(cpu::gemm_grid(256, 768, 768, most).tiles() > 1);  // a GPT-2 projection at 256 tokens is shared out
  CHECK(cpu::gemm_grid(13, 7, 29, most).tiles() == 1);     // a small product is one call
  CHECK(cpu::gemm_grid(1024, 50304, 768, most).tiles() == most);
  CHECK(cpu::gemm_grid(1024, 50304, 768, 8).tiles() == 8);
  // gemm's cap follows the machine's cores, not the thread count, so a product's bits do not depend on device.threads
  const int64_t procs = omp_get_num_procs();
  CHECK(cpu::gemm_max_tiles() == std::min(cpu::GemmGrid::kMaxTiles, cpu::GemmGrid::kTilesPerCore * procs));
}

TEST_CASE("a tiled gemm equals the reference and has the same bits on any thread count", "[kernels][gemm]") {
  const int64_t M = 512, N = 600, K = 512, pad = 5;
  auto ta = GENERATE(Trans::no, Trans::yes);
  auto tb = GENERATE(Trans::no, Trans::yes);
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  REQUIRE(cpu::gemm_grid(M, N, K, cpu::gemm_max_tiles()).rows > 1);  // the grid gemm runs here
  REQUIRE(cpu::gemm_grid(M, N, K, cpu::gemm_max_tiles()).cols > 1);
  const int64_t lda = (at ? M : K) + pad, ldb = (bt ? K : N) + pad, ldc = N + pad;
  auto A = random_normal<float>((at ? K : M) * lda, 12), B = random_normal<float>((bt ? N : K) * ldb, 13);
  auto C0 = random_normal<float>(M * ldc, 14);
  const float alpha = 0.75f, beta = 0.5f;
  std::vector<double> expect(C0.begin(), C0.end());
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(at ? A[k * lda + r] : A[r * lda + k]) * double(bt ? B[c * ldb + k] : B[k * ldb + c]);
      expect[r * ldc + c] = alpha * acc + beta * C0[r * ldc + c];
    }
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (const int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> C = C0;
    cpu::gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    results.push_back(C);
  }
  // device.gemm_threads: library, one call on the library's own threads
  cpu::use_gemm_threads("library");
  std::vector<float> library = C0;
  cpu::gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, library.data(), ldc);
  cpu::use_gemm_threads("tiles");
  omp_set_num_threads(saved);
  check_close("tiled gemm", results[0], expect, 1e-5);
  CHECK(results[1] == results[0]);
  CHECK(results[2] == results[0]);
  check_close("gemm on the library's threads", library, expect, 1e-5);
  CHECK_THROWS_WITH(cpu::use_gemm_threads("fast"), Catch::Contains("device.gemm_threads"));
  CHECK(cpu::gemm_threads() == cpu::GemmThreads::tiles);
}
