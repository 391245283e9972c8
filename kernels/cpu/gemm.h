#pragma once
// Row-major single-precision GEMM through the BLAS library device.blas chose (kernels/cpu/blas.h): C = alpha * op(A)
// op(B) + beta * C, op = transpose or not.
//
// Called from serial code, a GEMM's output is cut into a grid of tiles that depends on the shape and the machine's
// core count, never on the thread count (gemm_grid), and OpenMP's threads take the tiles one at a time, each a
// single-threaded library call. So:
//   - a thread whose core another process takes does fewer tiles instead of holding up the others at a static split
//     (the step beside one busy process: docs/benchmarks/cpu.md);
//   - every product's bits are the same on any thread count (device.threads), as the fixed-block reductions of the
//     other kernels are: a run may resume or continue on another thread count and stay bit-exact;
//   - every library runs in OpenMP's thread pool (the pthreads OpenBLAS's own pool stays idle).
// Called inside an OpenMP region (per-head attention, gemm_strided_batched) it runs on the calling thread.
// GemmThreads::library (device.gemm_threads) instead makes one call on the library's own threads, as many as
// OpenMP's: its threads share packed panels, but its static split waits for the slowest thread, and the bits depend
// on the thread count.
#include <cstdint>
#include <string_view>

#include "kernels/shared/trans.h"

namespace trident::cpu {

enum class GemmThreads { tiles, library };

// Sets how gemm uses the threads (device.gemm_threads: "tiles" or "library"; anything else is a ConfigError naming
// the key). Call it from serial code before GEMMs run.
void use_gemm_threads(std::string_view name);
GemmThreads gemm_threads();

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are row strides of the stored matrices.
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// `batch` independent GEMMs, matrix i at A + i*stride_a etc., spread over the OpenMP threads.
void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta,
                          float* C, int64_t ldc, int64_t stride_c, int64_t batch);

// How gemm cuts an M x N output with inner dimension K: `rows` x `cols` tiles, tile (r, c) spanning rows
// [row_start(r), row_start(r + 1)) and columns [col_start(c), col_start(c + 1)). The tiles halve the longer side
// until there are `max_tiles` or a tile would fall under kMinTileFlops or a side under kMinTileSide; boundaries sit
// on multiples of kTileAlign where the side allows. Each tile packs its own panels of A and B, which the library's
// own threads would share: the minimums and the cap bound that repacking. gemm caps the tiles at kTilesPerCore a
// core of the machine (gemm_max_tiles), enough for the threads to even out a core taken by another process: on 2
// cores, 8 tiles instead of up to 64 made the GEMMs of a GPT-2-small step at 256 tokens 4-10% faster timed alone,
// quiet and beside a busy process (docs/benchmarks/cpu.md, "Tiles").
struct GemmGrid {
  static constexpr int64_t kMaxTiles = 64;
  static constexpr int64_t kTilesPerCore = 4;
  static constexpr double kMinTileFlops = 64e6;
  static constexpr int64_t kMinTileSide = 64;
  static constexpr int64_t kTileAlign = 16;

  int64_t M = 0, N = 0, rows = 1, cols = 1;
  int64_t row_start(int64_t r) const { return boundary(M, rows, r); }
  int64_t col_start(int64_t c) const { return boundary(N, cols, c); }
  int64_t tiles() const { return rows * cols; }

 private:
  static int64_t boundary(int64_t extent, int64_t parts, int64_t i);
};

GemmGrid gemm_grid(int64_t M, int64_t N, int64_t K, int64_t max_tiles);

// kTilesPerCore for each core OpenMP sees on this machine (omp_get_num_procs: not the thread count), at most kMaxTiles.
int64_t gemm_max_tiles();

}  // namespace trident::cpu
