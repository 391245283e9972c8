#pragma once
// A backend's float buffer copied to the host, for tests that compare a device's results with the CPU's.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace trident::test {

inline std::vector<float> download(Backend& backend, const float* x, int64_t n) {
  std::vector<float> host(static_cast<std::size_t>(n));
  backend.download(host.data(), x, sizeof(float) * static_cast<std::size_t>(n));
  return host;
}

}  // namespace trident::test
