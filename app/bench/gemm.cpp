// trident bench gemm: sgemm GFLOP/s at the GEMM shapes of a GPT-2-small step, for every BLAS library device.blas can
// name, measured side by side in one run (rounds interleaved, the best of each kept): through cpu::gemm (tiles on
// OpenMP's threads, what training runs) and on the library's own threads. The best rate of the library in use is
// the roof that MFU figures are quoted against.
#include <omp.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include "app/bench/bench.h"
#include "core/metrics/bench_report.h"
#include "kernels/common/error.h"
#include "kernels/cpu/blas.h"
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
  // The libraries that load and pass their check here (or the one --blas names); auto's pick is the one training
  // uses by default.
  const std::string picked = cpu::use_blas("auto").name;
  std::vector<std::string> libraries;
  for (const std::string& name : cpu::blas_names()) {
    if (name == "auto" || (!options.blas.empty() && options.blas != "auto" && name != options.blas)) continue;
    try {
      cpu::use_blas(name);
      libraries.push_back(name);
    } catch (const RuntimeError&) {
      // listed by blas_report() below
    }
  }
  // (library, shape, own threads) -> the best time
  std::map<std::tuple<std::string, const Shape*, bool>, double> best_seconds;
  constexpr int kRounds = 3;  // interleaved, so a noisy moment hits every library alike
  Progress progress("bench gemm", kRounds * static_cast<int64_t>(libraries.size() * std::size(shapes)));
  for (int round = 0; round < kRounds; ++round)
    for (const std::string& name : libraries) {
      cpu::use_blas(name);
      for (const Shape& s : shapes) {
        progress.step(fmt::format("round {}, {}, {}", round + 1, name, s.name));
        std::vector<float> A(s.M * s.K, 0.5f), B(s.K * s.N, 0.25f), C(s.M * s.N);
        const int64_t ldb = s.tb == Trans::yes ? s.K : s.N;
        for (const bool own_threads : {false, true}) {
          const double sec = time_call(
              [&] {
                if (own_threads)
                  cpu::blas_sgemm_own_threads(false, s.tb == Trans::yes, int(s.M), int(s.N), int(s.K), 1.0f, A.data(),
                                              int(s.K), B.data(), int(ldb), 0.0f, C.data(), int(s.N));
                else
                  cpu::gemm(Trans::no, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.K, B.data(), ldb, 0.0f, C.data(), s.N);
              },
              options.min_seconds / kRounds / 2);
          auto [it, fresh] = best_seconds.try_emplace({name, &s, own_threads}, sec);
          if (!fresh) it->second = std::min(it->second, sec);
        }
      }
    }
  Report report(fmt::format("sgemm, {} threads; auto picks {}", omp_get_max_threads(), picked), options.json);
  for (const std::string& name : libraries) {
    const cpu::BlasLibrary& lib = cpu::use_blas(name);
    double roof = 0, roof_own = 0;
    for (const Shape& s : shapes) {
      const double sec = best_seconds.at({name, &s, false}), sec_own = best_seconds.at({name, &s, true});
      const double flops = 2.0 * s.M * s.N * s.K, gflops = flops / sec / 1e9, gflops_own = flops / sec_own / 1e9;
      roof = std::max(roof, gflops);
      roof_own = std::max(roof_own, gflops_own);
      report.add({{{"blas", name}, {"kernels", lib.kernels}, {"shape", s.name},
                   {"MxNxK", fmt::format("{}x{}x{}", s.M, s.N, s.K)}},
                  {{"ms", sec * 1e3}, {"GFLOP/s", gflops}, {"library threads GFLOP/s", gflops_own}}});
    }
    report.add({{{"blas", name}, {"kernels", lib.kernels}, {"shape", "roof (best)"}, {"MxNxK", "-"}},
                {{"ms", 0.0}, {"GFLOP/s", roof}, {"library threads GFLOP/s", roof_own}}});
  }
  cpu::use_blas(picked);
  report.print();
  for (const std::string& line : cpu::blas_report()) fmt::print("{}\n", line);
}

}  // namespace trident::bench
