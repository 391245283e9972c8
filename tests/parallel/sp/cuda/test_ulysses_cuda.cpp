// DeepSpeed-Ulysses on the CUDA backend: each rank's qkv, out and gradients in device memory, the all-to-alls over
// NCCL. Outputs and input gradients against the CPU kernel on the whole batch, both attention types, within the
// CUDA kernels' fp32 tolerance (2e-5). Runs under mpirun with 1, 2 and 4 ranks, one device per rank; without a
// usable device every rank prints why and exits 77.
#define CATCH_CONFIG_RUNNER
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "kernels/cpu/attention_linear.h"
#include "kernels/cpu/attention_softmax.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"
#include "kernels/shared/decay.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/nccl.h"
#include "parallel/sp/shard.h"
#include "parallel/sp/ulysses.h"
#include "support/assert_close.h"
#include "support/cuda_mpi_main.h"
#include "support/device_vector.h"
#include "support/random.h"
#include "support/sp_rows.h"

using namespace trident;
using namespace trident::test;

namespace {

Backend* g_cuda = nullptr;       // this rank's device, made in main
Communicator* g_nccl = nullptr;  // the world over NCCL (results are gathered over MPI: host buffers)

void check_against_kernel(const std::vector<int>& lengths, int H, int D, bool linear, uint64_t seed) {
  Communicator& sp = *g_nccl;
  constexpr int kChunk = 7;
  const PackedProblem p = packed_problem(lengths, H, D, seed);
  const std::vector<int32_t>& cu = p.cu;
  const std::vector<float>&qkv = p.qkv, &dout = p.dout, &dqkv0 = p.dqkv0, &slopes = p.slopes;
  const int n_seq = p.n_seq;
  const int64_t N = p.N, C = p.C;

  std::vector<float> want_out(N * C), want_lse(int64_t(H) * N), want_dqkv = dqkv0;
  if (linear) {
    cpu::attention_linear_forward(want_out.data(), nullptr, qkv.data(), slopes.data(), nullptr, cu.data(), n_seq, N,
                                  H, D, kChunk);
    cpu::attention_linear_backward(want_dqkv.data(), nullptr, dout.data(), nullptr, qkv.data(), slopes.data(),
                                   nullptr, cu.data(), n_seq, N, H, D, kChunk);
  } else {
    cpu::attention_softmax_forward(want_out.data(), want_lse.data(), qkv.data(), cu.data(), n_seq, N, H, D);
    cpu::attention_softmax_backward(want_dqkv.data(), dout.data(), qkv.data(), want_out.data(), want_lse.data(),
                                    cu.data(), n_seq, N, H, D);
  }

  const int64_t begin = shard_begin(N, sp.size(), sp.rank()), end = shard_begin(N, sp.size(), sp.rank() + 1);
  const DeviceVector<float> d_qkv(rows(qkv, begin, end, 3 * C)), d_dout(rows(dout, begin, end, C));
  const DeviceVector<float> d_slopes(slopes);
  DeviceVector<float> d_out(std::vector<float>((end - begin) * C, -1.0f)), d_dqkv(rows(dqkv0, begin, end, 3 * C));
  UlyssesCache cache(*g_cuda);
  const SpBatch batch{cu.data(), n_seq, N, H, D};
  if (linear) {
    ulysses_linear_forward(sp, d_out.data(), cache, d_qkv.data(), d_slopes.data(), batch, kChunk);
    ulysses_linear_backward(sp, d_dqkv.data(), d_dout.data(), cache, d_slopes.data(), batch, kChunk);
  } else {
    ulysses_softmax_forward(sp, d_out.data(), cache, d_qkv.data(), batch);
    ulysses_softmax_backward(sp, d_dqkv.data(), d_dout.data(), cache, batch);
  }
  g_cuda->synchronize();
  const std::string name = fmt::format("cuda ulysses {} T={} N={} H={} D={}", linear ? "linear" : "softmax",
                                       sp.size(), N, H, D);
  check_close(name + " out", gather_rows(world(), d_out.to_host(), N, C), want_out, 2e-5);
  check_close(name + " dqkv", gather_rows(world(), d_dqkv.to_host(), N, 3 * C), want_dqkv, 2e-5);
}

}  // namespace

TEST_CASE("Ulysses on the cuda backend over NCCL equals the kernel on the whole batch", "[sp][cuda]") {
  for (bool linear : {false, true}) {
    check_against_kernel({37, 1, 100, 5, 64}, 4, 16, linear, 11);  // documents across rank boundaries
    check_against_kernel({203}, 4, 29, linear, 21);                // one document over every rank, odd D
    check_against_kernel({2}, 4, 8, linear, 31);                   // fewer tokens than ranks
  }
}

int main(int argc, char** argv) {
  return cuda_mpi_main(argc, argv, [](Catch::Session& session, int device) {
    std::unique_ptr<Backend> backend = cuda::make_cuda_backend(device);
    std::unique_ptr<Communicator> nccl = make_nccl_communicator(world(), device);
    g_cuda = backend.get();
    g_nccl = nccl.get();
    const int result = session.run();
    g_cuda = nullptr;
    g_nccl = nullptr;
    return result;
  });
}
