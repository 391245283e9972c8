#pragma once
// What the CUDA backend can use on this machine, asked rather than assumed.
#include <string>

namespace trident::cuda {

// Number of usable CUDA devices; 0 with the reason in `why` when there is none (no driver, a driver too old for
// this runtime, no device).
int device_count(std::string* why);

// "NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB" for logs and benchmark headers.
std::string device_description(int device);

}  // namespace trident::cuda
