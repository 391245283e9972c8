#pragma once
// main() of an MPI test on CUDA devices: each rank takes the device of its node-local rank and runs the tests with
// `run(session, device)`; without a usable device, or with fewer devices than the node's ranks (NCCL takes one rank
// a device), every rank prints why and exits 77 (ctest's skip). Listing the tests needs no device.
#include <cstdio>
#include <string>

#include "kernels/cuda/device.h"
#include "parallel/comm/communicator.h"
#include "support/catch_session.h"

namespace trident::test {

template <class Run>
int cuda_mpi_main(int argc, char** argv, Run&& run) {
  CatchSession session(argc, argv);
  if (session.parse_error() != 0) return session.parse_error();
  if (session.only_lists()) return session.run();
  std::string why;
  const int devices = cuda::device_count(&why);
  if (devices == 0) {
    if (world().rank() == 0) std::printf("skipped: no usable CUDA device (%s)\n", why.c_str());
    return 77;
  }
  // NCCL refuses two ranks on one device: a machine with fewer GPUs than this node's ranks cannot run the test.
  const int node_ranks = world().node_group()->size();
  if (node_ranks > devices) {
    if (world().rank() == 0)
      std::printf("skipped: %d ranks on this node and %d CUDA device(s); NCCL takes one rank a device\n", node_ranks,
                  devices);
    return 77;
  }
  return run(session, world().node_group()->rank() % devices);
}

}  // namespace trident::test
