// LASP on the CUDA backend: each rank's qkv, out and gradients in device memory, states through the host and MPI.
// Outputs and input gradients of both variants against the CPU kernel on the whole batch, as the CPU tests do
// (tests/parallel/lasp/test_lasp.cpp), within the CUDA linear-attention kernel's fp32 tolerance (2e-5). Runs under
// mpirun with 1, 2 and 4 ranks, on as many devices as the node has (ranks may share one); without a usable device
// every rank prints why and exits 77.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "kernels/cpu/attention_linear.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"
#include "kernels/shared/decay.h"
#include "parallel/comm/communicator.h"
#include "parallel/lasp/lasp.h"
#include "parallel/sp/shard.h"
#include "support/assert_close.h"
#include "support/cuda_mpi_main.h"
#include "support/device_vector.h"
#include "support/random.h"
#include "support/sp_rows.h"

using namespace trident;
using namespace trident::test;

namespace {

Backend* g_cuda = nullptr;  // this rank's device, made in main

void check_against_kernel(Communicator& sp, const std::vector<int>& lengths, int H, int D, int chunk, uint64_t seed) {
  const PackedProblem p = packed_problem(lengths, H, D, seed);
  const std::vector<int32_t>& cu = p.cu;
  const std::vector<float>&qkv = p.qkv, &dout = p.dout, &dqkv0 = p.dqkv0, &slopes = p.slopes;
  const int n_seq = p.n_seq;
  const int64_t N = p.N, C = p.C;

  std::vector<float> want_out(N * C), want_dqkv = dqkv0;
  cpu::attention_linear_forward(want_out.data(), nullptr, qkv.data(), slopes.data(), nullptr, cu.data(), n_seq, N, H,
                                D, chunk);
  cpu::attention_linear_backward(want_dqkv.data(), nullptr, dout.data(), nullptr, qkv.data(), slopes.data(), nullptr,
                                 cu.data(), n_seq, N, H, D, chunk);

  const int64_t begin = shard_begin(N, sp.size(), sp.rank()), end = shard_begin(N, sp.size(), sp.rank() + 1);
  for (LaspVariant variant : {LaspVariant::lasp1, LaspVariant::lasp2}) {
    const DeviceVector<float> d_qkv(rows(qkv, begin, end, 3 * C)), d_dout(rows(dout, begin, end, C));
    const DeviceVector<float> d_slopes(slopes);
    DeviceVector<float> d_out(std::vector<float>((end - begin) * C, -1.0f)), d_dqkv(rows(dqkv0, begin, end, 3 * C));
    LinearAttentionSP op(sp, *g_cuda, variant);
    op.forward(d_out.data(), d_qkv.data(), d_slopes.data(), cu.data(), n_seq, N, H, D, chunk);
    op.backward(d_dqkv.data(), d_dout.data(), d_qkv.data());
    const std::string name =
        fmt::format("cuda {} T={} N={} H={} D={} chunk={}", lasp_variant_name(variant), sp.size(), N, H, D, chunk);
    check_close(name + " out", gather_rows(sp, d_out.to_host(), N, C), want_out, 2e-5);
    check_close(name + " dqkv", gather_rows(sp, d_dqkv.to_host(), N, 3 * C), want_dqkv, 2e-5);
  }
}

}  // namespace

TEST_CASE("LASP on the cuda backend equals the kernel on the whole batch", "[lasp][cuda]") {
  for (int chunk : {1, 7, 64}) check_against_kernel(world(), {37, 1, 100, 5, 64}, 3, 8, chunk, 11);
  check_against_kernel(world(), {203}, 3, 16, 7, 21);                          // one document over every rank
  check_against_kernel(world(), {3, 2, 1, 4, 2, 3, 1, 5, 2, 1, 3}, 3, 8, 7, 31);  // documents shorter than a share
  check_against_kernel(world(), {2}, 3, 8, 1, 41);                              // fewer tokens than ranks
}

int main(int argc, char** argv) {
  // LASP's states go over MPI: any number of ranks may share a device.
  return cuda_mpi_main(argc, argv, [](CatchSession& session, int device, bool /*one_rank_a_device*/) {
    std::unique_ptr<Backend> backend = cuda::make_cuda_backend(device);
    g_cuda = backend.get();
    const int result = session.run();
    g_cuda = nullptr;
    return result;
  });
}
