#pragma once
// The BLAS library behind cpu::gemm, chosen once per process (device.blas, `trident bench ... --blas`):
//   openblas-debian  Debian's OpenBLAS 0.3.21, OpenMP build, linked into the binary: always there
//   blis             Debian's BLIS 0.9, OpenMP build (libblis4-openmp), loaded with dlopen: its zen* configurations
//   openblas         a current OpenBLAS release (PyPI's scipy-openblas32, which scripts/install-deps.sh installs into
//                    .deps/python), loaded with dlopen: it knows recent CPUs (Zen 4/5 run its AVX-512 kernels); a
//                    pthreads build, whose own pool stays idle (every call is single-threaded, below)
//   onednn           Debian's oneDNN 2.6 (libdnnl2, OpenMP build), loaded with dlopen: its dnnl_sgemm, JIT-compiled
//                    for the widest instruction set the processor has (the kernel set it reports)
//   auto             openblas-debian, unless it runs its generic kernels (Prescott: OpenBLAS 0.3.21 does not know
//                    the processor), then onednn, openblas, blis: the first that loads, passes its check and runs
//                    kernels made for the processor (else the first that passes)
// The order is the measured one (docs/benchmarks/cpu.md): where both run the same kernels, Debian's
// OpenBLAS was as fast as the current one or faster, and BLIS slower or level. Where Debian's library falls back to
// its generic kernels it is far slower than all (an Intel Emerald Rapids: 37-56 GFLOP/s against 250-290), and there
// oneDNN ran a GPT-2-small step's GEMMs in tiles faster than the current OpenBLAS. The rule reads the kernel set, not
// a timing, so every rank and every run of a machine takes the same library: a resumed run stays bit-exact.
// oneDNN 2.6's dnnl_sgemm corrupts the heap when a signal handler runs on its thread in the middle of a call (the
// others do not): trident takes its stop signals on a thread of their own (app/train/signals.h).
// A library is checked before it is used: GEMMs of every transpose combination, odd sizes, strides and a non-zero
// beta against the double reference. One that fails (a kernel set that computes wrong results on this processor)
// is refused, and auto passes over it with the reason in blas_report().
//
// cpu::gemm calls a library single-threaded, one call a tile, on OpenMP's threads (gemm.h): Debian's OpenBLAS and
// oneDNN, OpenMP builds, keep to the calling thread inside an OpenMP region by themselves; a loaded library with its
// own pool is set to one thread (blas_one_thread). With device.gemm_threads: library, one call runs on the library's
// own threads instead.
#include <string>
#include <string_view>
#include <vector>

namespace trident::cpu {

struct BlasLibrary {
  std::string name;     // as device.blas spells it
  std::string version;  // as the library reports it
  std::string kernels;  // the kernel set it runs on this processor (OpenBLAS core name, BLIS architecture)
  std::string path;     // the shared library
};

// Whether `lib` runs its library's generic kernels, made for no processor in particular (auto passes over it).
bool generic_kernels(const BlasLibrary& lib);

// The names device.blas accepts, auto first.
const std::vector<std::string>& blas_names();

// Loads, checks and switches cpu::gemm to `name` (auto: see above). An unknown name is a ConfigError naming
// device.blas and the choices; a library that is not installed or fails its check is a RuntimeError saying which
// and why. Not thread-safe: call it before GEMMs run (start-up, a benchmark between measurements).
const BlasLibrary& use_blas(std::string_view name);

// Whether this build can load the libraries other than openblas-debian: not in an address-sanitizer build, whose
// runtime refuses dlopen's RTLD_DEEPBIND (use_blas then refuses them, saying so).
bool blas_loading_supported();

// The library cpu::gemm calls now (openblas-debian until use_blas picks another).
const BlasLibrary& current_blas();

// One line per library tried so far: in use, checked, or why it was refused (for logs and `trident bench gemm`).
std::vector<std::string> blas_report();

// What cpu::gemm calls: the current library's row-major sgemm (ta/tb: op(A) = A^T, op(B) = B^T), on one thread
// inside an OpenMP region.
void blas_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                float beta, float* C, int ldc);

// The same product on the library's own threads, as many as OpenMP's (device.gemm_threads: library; `trident bench
// gemm` times it beside the tiles). Call it from serial code.
void blas_sgemm_own_threads(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc);

// Sets a loaded library to one thread before single-threaded calls run in an OpenMP region (a no-op when it is
// already, and when called inside a region).
void blas_one_thread();

}  // namespace trident::cpu
