#pragma once
// What the CUDA backend can use on this machine, asked rather than assumed.
#include <cstddef>
#include <cstdint>
#include <string>

namespace trident::cuda {

// Number of usable CUDA devices; 0 with the reason in `why` when there is none (no driver, a driver too old for
// this runtime, no device).
int device_count(std::string* why);

// Bytes of `device` in use by every process on it (cudaMemGetInfo: total - free): beside the allocator's peak, what
// the CUDA libraries and launch scratch take outside the device.memory_gb budget.
int64_t device_memory_in_use(int device);

// Why `ranks` ranks sharing `device`, each with a budget of `budget_bytes` (device.memory_gb = `memory_gb`) and up to
// `scratch_bytes` of launch scratch beside it, do not fit the memory free on it now (once the device's pool has
// handed back what it kept: it waits for the device), or "" when they do. Call it
// once every such rank holds its CUDA context, cuBLAS workspace and NCCL communicators (they count as used) and
// before any allocates from its budget. The reason names device.memory_gb and the largest value that fits.
std::string memory_shortfall(int device, double memory_gb, std::size_t budget_bytes, std::size_t scratch_bytes,
                             int ranks);

// "NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB" for logs and benchmark headers.
std::string device_description(int device);

// Dense peak FLOP/s of `device`: tensor-core bf16 (fp32 accumulate) when `bf16`, else fp32 FMA without TF32. NVIDIA's
// datasheet figure for the cards it knows (A100, H100 SXM/PCIe/NVL, H200); otherwise FLOP per clock per SM by
// architecture (sm_80: 2048 bf16, 128 fp32; sm_90: 4096 bf16, 256 fp32) x SMs x the device's maximum clock; 0 for
// other architectures. `how` says which. MFU is quoted against it.
double dense_peak_flops(int device, bool bf16, std::string* how);

}  // namespace trident::cuda
