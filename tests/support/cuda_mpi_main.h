#pragma once
// main() of an MPI test on CUDA devices: each rank takes the device of its node-local rank % devices and runs the
// tests with `run(session, device, one_rank_a_device)`; without a usable device every rank prints why and exits 77
// (ctest's skip). `one_rank_a_device` is false where the node has fewer devices than ranks: a test over NCCL (which
// takes one rank a device) then stages its device buffers through the host instead (parallel/comm/staged.h), or
// skips with the reason. Listing the tests needs no device.
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
  const int node_ranks = world().node_group()->size();
  return run(session, world().node_group()->rank() % devices, node_ranks <= devices);
}

// What a test over NCCL prints and returns where the node has fewer devices than ranks.
inline int skip_without_a_device_a_rank() {
  if (world().rank() == 0)
    std::printf("skipped: %d ranks on this node share its CUDA device(s); NCCL takes one rank a device\n",
                world().node_group()->size());
  return 77;
}

}  // namespace trident::test
