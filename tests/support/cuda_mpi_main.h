#pragma once
// main() of an MPI test on CUDA devices (define CATCH_CONFIG_RUNNER first): each rank takes the device of its
// node-local rank and runs the tests with `run(device)`; without a usable device every rank prints why and exits 77
// (ctest's skip). Listing the tests needs no device.
#include <cstdio>
#include <string>

#include <catch2/catch.hpp>

#include "kernels/cuda/device.h"
#include "parallel/comm/communicator.h"

namespace trident::test {

template <class Run>
int cuda_mpi_main(int argc, char** argv, Run&& run) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (session.config().listTestNamesOnly() || session.config().listTests()) return session.run();
  std::string why;
  const int devices = cuda::device_count(&why);
  if (devices == 0) {
    if (world().rank() == 0) std::printf("skipped: no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  return run(session, world().node_group()->rank() % devices);
}

}  // namespace trident::test
