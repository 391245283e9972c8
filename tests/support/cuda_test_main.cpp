// Main of the CUDA kernel tests: without a usable device every test reports skipped (exit 77) with the reason;
// listing the tests (ctest does it at build time) needs no device.
#include <cstdio>
#include <string>

#include "kernels/cuda/device.h"
#include "support/catch_session.h"

int main(int argc, char** argv) {
  trident::test::CatchSession session(argc, argv);
  if (session.parse_error() != 0) return session.parse_error();
  if (session.only_lists()) return session.run();
  std::string why;
  if (trident::cuda::device_count(&why) == 0) {
    std::printf("skipped: no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  return session.run();
}
