#pragma once
// device.blas at start-up (training, benchmarks): the CPU's GEMM library chosen, checked and logged.
#include <string>

namespace trident {

// Switches the CPU's GEMMs to device.blas = `name` and logs the library, its kernel set and why auto passed over
// any other. A library that cannot load or fails its check is a ConfigError naming device.blas.
void use_configured_blas(const std::string& name);

}  // namespace trident
