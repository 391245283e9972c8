#include "app/train/device_blas.h"

#include <spdlog/spdlog.h>

#include "kernels/common/error.h"
#include "kernels/cpu/blas.h"

namespace trident {

void use_configured_blas(const std::string& name) {
  try {
    cpu::use_blas(name);
  } catch (const RuntimeError& e) {
    throw_config_error("device.blas: {}: {}", name, e.what());
  }
  for (const std::string& line : cpu::blas_report()) spdlog::info("BLAS {}", line);
}

}  // namespace trident
