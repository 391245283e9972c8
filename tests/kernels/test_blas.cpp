#include <omp.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/common/error.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/gemm.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

// C = op(A) op(B) through cpu::gemm at a GPT-like shape, against the double reference, on one and two threads.
void check_library_products() {
  const int64_t M = 67, N = 96, K = 80;
  for (const Trans tb : {Trans::no, Trans::yes}) {
    auto A = random_normal<float>(M * K, 1), B = random_normal<float>(K * N, 2);
    for (const int threads : {1, 2}) {
      omp_set_num_threads(threads);
      std::vector<float> C(M * N, 0.0f);
      cpu::gemm(Trans::no, tb, M, N, K, 1.0f, A.data(), K, B.data(), tb == Trans::yes ? K : N, 0.0f, C.data(), N);
      std::vector<double> expect(M * N, 0.0);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k)
            expect[i * N + j] += double(A[i * K + k]) * (tb == Trans::yes ? B[j * K + k] : B[k * N + j]);
      check_close(cpu::current_blas().name + " gemm", C, expect, 1e-5);
    }
  }
}

}  // namespace

TEST_CASE("every BLAS library device.blas names loads, passes its check and computes the reference products",
          "[kernels][blas]") {
  const int threads = omp_get_max_threads();
  for (const char* name : {"openblas", "blis", "onednn", "openblas-debian"}) {
    INFO("device.blas = " << name);
    if (!cpu::blas_loading_supported() && std::string(name) != "openblas-debian") {
      CHECK_THROWS_WITH(cpu::use_blas(name), Catch::Contains("sanitizer build"));
      continue;
    }
    const cpu::BlasLibrary& lib = cpu::use_blas(name);  // scripts/install-deps.sh installs all four
    CHECK(lib.name == name);
    CHECK_FALSE(lib.kernels.empty());
    CHECK_FALSE(lib.version.empty());
    CHECK(cpu::current_blas().name == name);
    check_library_products();
  }
  omp_set_num_threads(threads);
  // auto: the first of openblas-debian, onednn, openblas, blis that passes and runs kernels made for this processor.
  const std::string picked = cpu::use_blas("auto").name;
  const bool debian_generic = cpu::generic_kernels(cpu::use_blas("openblas-debian"));
  // oneDNN's JIT knows every processor here; a sanitizer build loads no other library
  CHECK(picked == (debian_generic && cpu::blas_loading_supported() ? "onednn" : "openblas-debian"));
  CHECK(cpu::use_blas("auto").name == picked);  // the same every time
  const std::vector<std::string> report = cpu::blas_report();
  CHECK(report.size() == 4);  // each in use, checked or refused with the reason
  cpu::use_blas("openblas-debian");
}

TEST_CASE("device.blas refuses a library it does not know, naming the key and the choices", "[kernels][blas]") {
  CHECK_THROWS_AS(cpu::use_blas("mkl"), ConfigError);
  CHECK_THROWS_WITH(cpu::use_blas("mkl"), Catch::Contains("device.blas") && Catch::Contains("openblas-debian"));
  CHECK(cpu::current_blas().name == "openblas-debian");  // unchanged
}
