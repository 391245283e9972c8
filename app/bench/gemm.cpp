// trident bench gemm: sgemm GFLOP/s at the GEMM shapes of a GPT-2-small step. The best rate is the roof that
// MFU figures are quoted against.
#include <omp.h>

#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "app/bench/report.h"
#include "kernels/cpu/gemm.h"

namespace trident::bench {

void run_gemm(const Options& options) {
  struct Shape {
    const char* name;
    int64_t M, N, K;
    Trans tb;
  };
  const int64_t tokens = 1024;  // e.g. B=4 x T=256
  const Shape shapes[] = {
      {"attn.c_attn (qkv)", tokens, 2304, 768, Trans::no},
      {"attn.c_proj", tokens, 768, 768, Trans::no},
      {"mlp.c_fc", tokens, 3072, 768, Trans::no},
      {"mlp.c_proj", tokens, 768, 3072, Trans::no},
      {"lm_head (tied wte^T)", tokens, 50304, 768, Trans::yes},
      {"square 2048", 2048, 2048, 2048, Trans::no},
  };
  Report report(fmt::format("sgemm (OpenBLAS, {} threads)", omp_get_max_threads()), options.json);
  double roof = 0;
  for (const Shape& s : shapes) {
    std::vector<float> A(s.M * s.K, 0.5f), B(s.K * s.N, 0.25f), C(s.M * s.N);
    const int64_t ldb = s.tb == Trans::yes ? s.K : s.N;
    double sec = time_call(
        [&] { cpu::gemm(Trans::no, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.K, B.data(), ldb, 0.0f, C.data(), s.N); },
        options.min_seconds);
    double gflops = 2.0 * s.M * s.N * s.K / sec / 1e9;
    roof = std::max(roof, gflops);
    report.add({{{"shape", s.name}, {"MxNxK", fmt::format("{}x{}x{}", s.M, s.N, s.K)}},
                {{"ms", sec * 1e3}, {"GFLOP/s", gflops}}});
  }
  report.add({{{"shape", "roof (best)"}, {"MxNxK", "-"}}, {{"ms", 0.0}, {"GFLOP/s", roof}}});
  report.print();
}

}  // namespace trident::bench
