#include "app/train/device_blas.h"

#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/gemm.h"

namespace trident {

void use_configured_blas(const std::string& name, const std::string& gemm_threads) {
  cpu::use_gemm_threads(gemm_threads);
  try {
    cpu::use_blas(name);
  } catch (const RuntimeError& e) {
    throw_config_error("device.blas: {}: {}", name, e.what());
  }
  for (const std::string& line : cpu::blas_report()) spdlog::info("BLAS {}", line);
  spdlog::info("GEMMs: {}", cpu::gemm_threads() == cpu::GemmThreads::tiles
                                ? "tiles fixed by the shape on OpenMP's threads (device.gemm_threads)"
                                : "one call on the library's own threads (device.gemm_threads)");
}

}  // namespace trident
