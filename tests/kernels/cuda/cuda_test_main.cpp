// Main of the CUDA kernel tests: without a usable device every test reports skipped (exit 77) with the reason;
// listing the tests (ctest does it at build time) needs no device.
#define CATCH_CONFIG_RUNNER
#include <cstdio>
#include <string>

#include <catch2/catch.hpp>

#include "kernels/cuda/device.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (session.config().listTestNamesOnly() || session.config().listTests()) return session.run();
  std::string why;
  if (trident::cuda::device_count(&why) == 0) {
    std::printf("skipped: no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  return session.run();
}
