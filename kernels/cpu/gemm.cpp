#include "kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>

#include "kernels/common/error.h"
#include "kernels/cpu/blas.h"

namespace trident::cpu {

namespace {

GemmThreads threading = GemmThreads::tiles;

// One library call: single-threaded (blas_sgemm), or on the library's own threads (blas_sgemm_own_threads).
void library_gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc, bool own_threads = false) {
  (own_threads ? blas_sgemm_own_threads : blas_sgemm)(
      ta == Trans::yes, tb == Trans::yes, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A,
      static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

}  // namespace

void use_gemm_threads(std::string_view name) {
  if (name == "tiles")
    threading = GemmThreads::tiles;
  else if (name == "library")
    threading = GemmThreads::library;
  else
    throw_config_error("device.gemm_threads: '{}' is not tiles or library", name);
}

GemmThreads gemm_threads() { return threading; }

int64_t GemmGrid::boundary(int64_t extent, int64_t parts, int64_t i) {
  if (i >= parts) return extent;
  const int64_t even = extent * i / parts;
  const int64_t step = extent >= parts * kTileAlign ? kTileAlign : 1;
  return even / step * step;
}

GemmGrid gemm_grid(int64_t M, int64_t N, int64_t K, int64_t max_tiles) {
  GemmGrid grid;
  grid.M = M;
  grid.N = N;
  while (grid.tiles() < max_tiles) {
    const double tile_m = double(M) / grid.rows, tile_n = double(N) / grid.cols;
    if (tile_m * tile_n * double(K) < GemmGrid::kMinTileFlops) break;  // a half's flops: 2 (m n / 2) K
    const bool split_rows = tile_m >= tile_n;
    if ((split_rows ? tile_m : tile_n) < 2 * GemmGrid::kMinTileSide) break;
    (split_rows ? grid.rows : grid.cols) *= 2;
  }
  return grid;
}

int64_t gemm_max_tiles() {
  static const int64_t max_tiles =
      std::min(GemmGrid::kMaxTiles, GemmGrid::kTilesPerCore * std::max(int64_t{1}, int64_t{omp_get_num_procs()}));
  return max_tiles;
}

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (omp_in_parallel()) return library_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (threading == GemmThreads::library)
    return library_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, /*own_threads=*/true);
  const GemmGrid grid = gemm_grid(M, N, K, gemm_max_tiles());
  blas_one_thread();
  // Always a parallel region, even for one tile: inside it every library runs single-threaded (blas.h), so a tile's
  // bits do not depend on how many threads there are.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < grid.tiles(); ++t) {
    const int64_t r = t / grid.cols, c = t % grid.cols;
    const int64_t i0 = grid.row_start(r), j0 = grid.col_start(c);
    const int64_t m = grid.row_start(r + 1) - i0, n = grid.col_start(c + 1) - j0;
    library_gemm(ta, tb, m, n, K, alpha, ta == Trans::yes ? A + i0 : A + i0 * lda, lda,
                 tb == Trans::yes ? B + j0 * ldb : B + j0, ldb, beta, C + i0 * ldc + j0, ldc);
  }
}

void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta,
                          float* C, int64_t ldc, int64_t stride_c, int64_t batch) {
  blas_one_thread();
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < batch; ++i)
    library_gemm(ta, tb, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
}

}  // namespace trident::cpu
