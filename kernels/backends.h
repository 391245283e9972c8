#pragma once
// The compute backends: which this build has, and whether this machine can run them. Asked before any work starts,
// so `device.backend: cuda` on a machine (or a build) without CUDA is a one-line configuration error that says
// which of the three is missing: the build, the driver, or a device.
#include <string>

namespace trident {

struct BackendStatus {
  bool built = false;   // compiled into this binary
  bool usable = false;  // and this machine can run it
  std::string detail;   // why not, or what was found ("2 CUDA device(s): NVIDIA H100 ...")
};

// `name` is a value of device.backend: "cpu" or "cuda".
BackendStatus backend_status(const std::string& name);

}  // namespace trident
