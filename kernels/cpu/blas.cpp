#include "kernels/cpu/blas.h"

#include <cblas.h>  // Debian's OpenBLAS (openblas-openmp), the one linked
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <oneapi/dnnl/dnnl.h>  // types and signatures only: the library itself is loaded with dlopen
#include <oneapi/dnnl/dnnl_debug.h>

#include "kernels/common/error.h"
#include "kernels/cpu/gemm.h"

namespace trident::cpu {

namespace {

using CblasSgemm = void (*)(int order, int ta, int tb, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc);
using SetThreads = void (*)(int threads);

// A library ready to use: what it is, its sgemm (null: the linked OpenBLAS), how to set its thread count (null: it
// follows OpenMP by itself).
struct Library {
  BlasLibrary info;
  CblasSgemm sgemm = nullptr;
  SetThreads set_threads = nullptr;
};

std::string trimmed(const char* s) {
  std::string text = s == nullptr ? "" : s;
  const size_t begin = text.find_first_not_of(' '), end = text.find_last_not_of(' ');
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRIDENT_BLAS_ASAN
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(TRIDENT_BLAS_ASAN)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

void* open_library(const std::string& path) {
  if (kAddressSanitizer)
    throw_runtime_error("{}: not loaded in a sanitizer build (its runtime refuses RTLD_DEEPBIND)", path);
  // RTLD_DEEPBIND: the library's calls to its own symbols (BLIS's cblas_sgemm calls its sgemm_) stay inside it
  // instead of binding to the same names in the OpenBLAS linked into the binary.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) throw_runtime_error("cannot load {}: {}", path, dlerror());
  return handle;
}

template <class F>
F symbol(void* handle, const std::string& path, const char* name) {
  void* f = dlsym(handle, name);
  if (f == nullptr) throw_runtime_error("{} has no symbol {}", path, name);
  return reinterpret_cast<F>(f);
}

Library load_debian() {
  return {{"openblas-debian", trimmed(openblas_get_config()), trimmed(openblas_get_corename()),
           TRIDENT_OPENBLAS_DEBIAN_PATH}};
}

Library load_openblas() {
  const std::string path = TRIDENT_OPENBLAS_PYPI_PATH;
  void* handle = open_library(path);
  auto config = symbol<char* (*)()>(handle, path, "scipy_openblas_get_config");
  auto core = symbol<char* (*)()>(handle, path, "scipy_openblas_get_corename");
  return {{"openblas", trimmed(config()), trimmed(core()), path},
          symbol<CblasSgemm>(handle, path, "scipy_cblas_sgemm"),
          symbol<SetThreads>(handle, path, "scipy_openblas_set_num_threads")};
}

// BLIS's thread count is a dim_t (int64); a plain function wraps it to SetThreads.
void (*blis_set_num_threads)(int64_t) = nullptr;
void blis_set_threads(int threads) { blis_set_num_threads(threads); }

Library load_blis() {
  const std::string path = TRIDENT_BLIS_PATH;
  void* handle = open_library(path);
  blis_set_num_threads = symbol<void (*)(int64_t)>(handle, path, "bli_thread_set_num_threads");
  auto version = symbol<const char* (*)()>(handle, path, "bli_info_get_version_str");
  auto arch_id = symbol<int (*)()>(handle, path, "bli_arch_query_id");
  auto arch = symbol<const char* (*)(int)>(handle, path, "bli_arch_string");
  return {{"blis", fmt::format("BLIS {}", trimmed(version())), trimmed(arch(arch_id())), path},
          symbol<CblasSgemm>(handle, path, "cblas_sgemm"),
          blis_set_threads};
}

// oneDNN's sgemm (row-major, 'N'/'T', 64-bit sizes) behind the CBLAS signature the others share. It runs on the
// calling thread inside an OpenMP region and on OpenMP's threads outside one, as the linked OpenBLAS does.
decltype(&dnnl_sgemm) onednn_sgemm_fn = nullptr;
void onednn_sgemm(int /*row-major*/, int ta, int tb, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) {
  const dnnl_status_t status = onednn_sgemm_fn(ta == CblasTrans ? 'T' : 'N', tb == CblasTrans ? 'T' : 'N', M, N, K,
                                               alpha, A, lda, B, ldb, beta, C, ldc);
  TRIDENT_CHECK(status == dnnl_success, "dnnl_sgemm {}x{}x{} returned status {}", M, N, K, int(status));
}

Library load_onednn() {
  const std::string path = TRIDENT_ONEDNN_PATH;
  void* handle = open_library(path);
  onednn_sgemm_fn = symbol<decltype(&dnnl_sgemm)>(handle, path, "dnnl_sgemm");
  const dnnl_version_t* version = symbol<decltype(&dnnl_version)>(handle, path, "dnnl_version")();
  auto isa = symbol<decltype(&dnnl_get_effective_cpu_isa)>(handle, path, "dnnl_get_effective_cpu_isa");
  auto isa_name = symbol<decltype(&dnnl_cpu_isa2str)>(handle, path, "dnnl_cpu_isa2str");
  std::string kernels = trimmed(isa_name(isa()));  // "cpu_isa_avx512_core_amx": the widest instruction set it uses
  if (kernels.starts_with("cpu_isa_")) kernels.erase(0, 8);
  return {{"onednn", fmt::format("oneDNN {}.{}.{}", version->major, version->minor, version->patch), kernels, path},
          onednn_sgemm};
}

// The libraries tried so far (each loaded once), and why each refused one was refused.
std::map<std::string, Library, std::less<>> loaded;
std::map<std::string, std::string, std::less<>> refused;

Library active = {};  // empty name: the linked OpenBLAS, described on first use
std::atomic<int> active_threads{0};  // the loaded library's own thread count, as last set (0: not yet)
std::mutex set_threads_mutex;

// From code outside OpenMP regions (calls inside them only read the count), on any thread.
void set_library_threads(int threads) {
  if (active.set_threads == nullptr || threads == active_threads.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(set_threads_mutex);
  if (threads == active_threads) return;
  active.set_threads(threads);
  active_threads = threads;
}

// The largest error of the current sgemm against the double reference, relative to alpha sum_k |a b| + |beta c|
// per entry, over every transpose combination at odd sizes with padded strides, alpha and beta neither 0 nor 1, and
// a product large enough to take the blocked path.
double check_error() {
  struct Case {
    int M, N, K;
  };
  double worst = 0;
  uint32_t state = 12345;
  auto next = [&] {  // uniform in [-1, 1)
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  };
  for (const Case c : {Case{37, 29, 41}, Case{5, 1, 300}, Case{192, 160, 144}})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const int lda = (ta ? c.M : c.K) + 3, ldb = (tb ? c.K : c.N) + 1, ldc = c.N + 2;
        std::vector<float> A(size_t(ta ? c.K : c.M) * lda), B(size_t(tb ? c.N : c.K) * ldb), C(size_t(c.M) * ldc);
        for (float& x : A) x = next();
        for (float& x : B) x = next();
        for (float& x : C) x = next();
        const std::vector<float> C0 = C;
        const float alpha = 0.75f, beta = 0.5f;
        blas_sgemm(ta, tb, c.M, c.N, c.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
        for (int i = 0; i < c.M; ++i)
          for (int j = 0; j < c.N; ++j) {
            double sum = 0, bound = 0;
            for (int k = 0; k < c.K; ++k) {
              const double a = ta ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k];
              const double b = tb ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j];
              sum += a * b;
              bound += std::abs(a * b);
            }
            const size_t at = size_t(i) * ldc + j;
            const double expect = alpha * sum + beta * C0[at];
            const double err = std::abs(C[at] - expect) / (alpha * bound + std::abs(beta * C0[at]));
            worst = std::max(worst, std::isfinite(err) ? err : 1e30);
          }
      }
  return worst;
}

// Makes `lib` current if it passes the check; otherwise the previous library stays and this throws.
void activate(const Library& lib) {
  const Library previous = active;
  active = lib;
  active_threads = 0;
  set_library_threads(1);
  // fp32 products of at most 300 terms: a correct kernel stays within a few 1e-7.
  constexpr double kTolerance = 1e-5;
  if (const double error = check_error(); error > kTolerance) {
    active = previous;
    active_threads = 0;
    throw_runtime_error("{} ({} kernels) computes wrong products on this processor: an error of {:.2g} of "
                        "sum |a b|, above {:.0g}", lib.info.name, lib.info.kernels, error, kTolerance);
  }
}

const BlasLibrary& use_one(std::string_view name) {
  try {
    auto it = loaded.find(name);
    if (it == loaded.end()) {
      const Library lib = name == "openblas" ? load_openblas()
                          : name == "blis"   ? load_blis()
                          : name == "onednn" ? load_onednn()
                                             : load_debian();
      it = loaded.emplace(std::string(name), lib).first;
    }
    activate(it->second);
  } catch (const RuntimeError& e) {
    refused[std::string(name)] = e.what();
    throw;
  }
  refused.erase(std::string(name));
  return active.info;
}

}  // namespace

void blas_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                float beta, float* C, int ldc) {
  const CBLAS_TRANSPOSE op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
  if (active.sgemm == nullptr)  // the linked OpenBLAS
    return cblas_sgemm(CblasRowMajor, op_a, op_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  active.sgemm(CblasRowMajor, op_a, op_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_sgemm_own_threads(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc) {
  set_library_threads(omp_get_max_threads());  // the linked OpenBLAS follows OpenMP's count by itself
  blas_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_one_thread() {
  if (!omp_in_parallel()) set_library_threads(1);
}

const std::vector<std::string>& blas_names() {
  static const std::vector<std::string> names = {"auto", "openblas-debian", "blis", "openblas", "onednn"};
  return names;
}

const BlasLibrary& use_blas(std::string_view name) {
  if (std::find(blas_names().begin(), blas_names().end(), name) == blas_names().end())
    throw_config_error("device.blas: '{}' is not a BLAS library Trident knows ({})", name,
                       fmt::join(blas_names(), ", "));
  if (name != "auto") return use_one(name);
  std::string fallback;  // the first that passed, should every one that passes run generic kernels
  for (const char* candidate : {"openblas-debian", "onednn", "openblas", "blis"}) {
    try {
      if (!generic_kernels(use_one(candidate))) return active.info;
      if (fallback.empty()) fallback = candidate;
    } catch (const RuntimeError&) {
      // why is in `refused`, for blas_report(); on to the next
    }
  }
  if (fallback.empty())
    throw_runtime_error("no BLAS library passes its check on this processor: {}", fmt::join(blas_report(), "; "));
  return use_one(fallback);
}

// OpenBLAS's DYNAMIC_ARCH fallback core, BLIS's reference configuration, oneDNN without a JIT instruction set.
bool generic_kernels(const BlasLibrary& lib) {
  return lib.kernels == "Prescott" || lib.kernels == "generic" || lib.kernels == "all";
}

bool blas_loading_supported() { return !kAddressSanitizer; }

const BlasLibrary& current_blas() {
  if (active.info.name.empty()) active = load_debian();
  return active.info;
}

std::vector<std::string> blas_report() {
  std::vector<std::string> lines;
  for (const std::string& name : blas_names()) {
    if (const auto why = refused.find(name); why != refused.end())
      lines.push_back(fmt::format("{}: refused: {}", name, why->second));
    else if (const auto lib = loaded.find(name); lib != loaded.end())
      lines.push_back(fmt::format("{}: {}{} ({} kernels)", name, name == current_blas().name ? "in use, " : "",
                                  lib->second.info.version, lib->second.info.kernels));
  }
  return lines;
}

}  // namespace trident::cpu
