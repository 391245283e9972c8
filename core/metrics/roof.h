#pragma once
// The sgemm rate of this machine at a GPT-2-small MLP shape (1024 x 3072 x 768), measured in-process: the roof that
// model FLOPs utilisation (MFU) is quoted against. `trident bench gemm` shows the rate at every model GEMM shape.
namespace trident {

double measure_sgemm_gflops(double min_seconds);

}  // namespace trident
