#pragma once
// device.blas and device.gemm_threads at start-up (training, benchmarks): the CPU's GEMM library chosen, checked and
// logged, with how its GEMMs use the threads.
#include <string>

namespace trident {

// Switches the CPU's GEMMs to device.blas = `name` and logs the library, its kernel set and why auto passed over
// any other; GEMMs then use the threads as `gemm_threads` says (tiles | library). A library that cannot load or fails
// its check is a ConfigError naming device.blas.
void use_configured_blas(const std::string& name, const std::string& gemm_threads = "tiles");

}  // namespace trident
