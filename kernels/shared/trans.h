#pragma once
// Whether a GEMM operand is used as stored or transposed; shared by the CPU (OpenBLAS) and CUDA (cuBLAS) GEMMs.
namespace trident {

enum class Trans : bool { no = false, yes = true };

}  // namespace trident
