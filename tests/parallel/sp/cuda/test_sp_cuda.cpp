// Sequence parallelism on the CUDA backend: each rank's qkv, out and gradients in device memory, the messages over
// NCCL (or, where ranks share a device, staged through the host over MPI). DeepSpeed-Ulysses (both attention types)
// and Ring Attention (softmax), fp32 and bf16 activations: outputs and input gradients against the CPU backend's
// kernels on the whole batch. Runs under mpirun with 1, 2 and 4 ranks; without a usable device every rank prints why
// and exits 77.
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device.h"
#include "parallel/comm/staged.h"
#include "kernels/shared/decay.h"
#include "parallel/comm/communicator.h"
#include "parallel/comm/nccl.h"
#include "parallel/sp/ring_attention.h"
#include "parallel/sp/shard.h"
#include "parallel/sp/ulysses.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/cuda_mpi_main.h"
#include "support/device_vector.h"
#include "support/random.h"
#include "support/sp_rows.h"

using namespace trident;
using namespace trident::test;

namespace {

Backend* g_cuda = nullptr;       // this rank's device, made in main
Communicator* g_nccl = nullptr;  // the world over NCCL (results are gathered over MPI: host buffers)

enum class Method { ulysses_softmax, ulysses_linear, ring };
constexpr int kChunk = 7;  // linear attention

const char* method_name(Method m) {
  return m == Method::ring ? "ring" : m == Method::ulysses_linear ? "ulysses linear" : "ulysses softmax";
}

// Activations of storage type T (float or bf16) against the CPU backend's kernels of the same type on the whole
// batch: out, dqkv (accumulated onto a non-zero dqkv) and, for Ring, this rank's columns of lse (H, N).
template <class T>
void check_against_kernel(const std::vector<int>& lengths, int H, int D, Method method, uint64_t seed, double tol) {
  Communicator& sp = *g_nccl;
  const bool linear = method == Method::ulysses_linear;
  const PackedProblem p = packed_problem(lengths, H, D, seed);
  const int64_t N = p.N, C = p.C;
  const std::vector<T> qkv = to_storage<T>(p.qkv), dout = to_storage<T>(p.dout), dqkv0 = to_storage<T>(p.dqkv0);
  std::vector<T> want_out(N * C), want_dqkv = dqkv0;
  std::vector<float> want_lse(int64_t(H) * N);
  Backend& cpu = cpu_backend();
  if (linear) {
    cpu.attention_linear_forward(want_out.data(), nullptr, qkv.data(), p.slopes.data(), nullptr, p.cu.data(), p.n_seq,
                                 N, H, D, kChunk);
    cpu.attention_linear_backward(want_dqkv.data(), nullptr, dout.data(), nullptr, qkv.data(), p.slopes.data(),
                                  nullptr, p.cu.data(), p.n_seq, N, H, D, kChunk);
  } else {
    cpu.attention_softmax_forward(want_out.data(), want_lse.data(), qkv.data(), p.cu.data(), p.n_seq, N, H, D);
    cpu.attention_softmax_backward(want_dqkv.data(), dout.data(), qkv.data(), want_out.data(), want_lse.data(),
                                   p.cu.data(), p.n_seq, N, H, D);
  }

  const int64_t begin = shard_begin(N, sp.size(), sp.rank()), end = shard_begin(N, sp.size(), sp.rank() + 1);
  auto mine = [&](const std::vector<T>& x, int64_t width) {
    return std::vector<T>(x.begin() + begin * width, x.begin() + end * width);
  };
  const DeviceVector<T> d_qkv(mine(qkv, 3 * C)), d_dout(mine(dout, C));
  const DeviceVector<float> d_slopes(p.slopes);
  DeviceVector<T> d_out(to_storage<T>(std::vector<float>((end - begin) * C, -1.0f))), d_dqkv(mine(dqkv0, 3 * C));
  DeviceVector<float> d_lse(std::vector<float>(H * (end - begin), 0.0f));
  const SpBatch batch{p.cu.data(), p.n_seq, N, H, D};
  if (method == Method::ring) {
    RingCache cache(*g_cuda);
    ring_attention_forward(sp, cache, d_out.data(), d_lse.data(), d_qkv.data(), batch);
    ring_attention_backward(sp, cache, d_dqkv.data(), d_dout.data(), d_qkv.data(), d_out.data(), d_lse.data(), batch);
  } else {
    UlyssesCacheOf<T> cache(*g_cuda);
    if (linear) {
      ulysses_linear_forward(sp, d_out.data(), cache, d_qkv.data(), d_slopes.data(), batch, kChunk);
      ulysses_linear_backward(sp, d_dqkv.data(), d_dout.data(), cache, d_slopes.data(), batch, kChunk);
    } else {
      ulysses_softmax_forward(sp, d_out.data(), cache, d_qkv.data(), batch);
      ulysses_softmax_backward(sp, d_dqkv.data(), d_dout.data(), cache, batch);
    }
  }
  g_cuda->synchronize();
  const std::string name = fmt::format("cuda {} {} T={} N={} H={} D={}", method_name(method),
                                       std::is_same_v<T, bf16> ? "bf16" : "fp32", sp.size(), N, H, D);
  check_close(name + " out", gather_rows(world(), from_storage(d_out.to_host()), N, C), from_storage(want_out), tol);
  check_close(name + " dqkv", gather_rows(world(), from_storage(d_dqkv.to_host()), N, 3 * C),
              from_storage(want_dqkv), tol);
  if (method == Method::ring) {  // lse stays fp32
    std::vector<float> want_local;
    for (int h = 0; h < H; ++h)
      want_local.insert(want_local.end(), want_lse.begin() + h * N + begin, want_lse.begin() + h * N + end);
    check_close(name + " lse", d_lse.to_host(), want_local, 2e-5);
  }
}

}  // namespace

// Tolerances: the CUDA attention kernels' against the CPU's (tests/kernels/cuda/test_attention_softmax_cuda.cpp),
// fp32 2e-5, bf16 2e-2.
TEST_CASE("Ulysses and Ring Attention on the cuda backend over NCCL equal the kernel on the whole batch",
          "[sp][cuda]") {
  for (Method method : {Method::ulysses_softmax, Method::ulysses_linear, Method::ring}) {
    check_against_kernel<float>({37, 1, 100, 5, 64}, 4, 16, method, 11, 2e-5);  // documents across rank boundaries
    check_against_kernel<float>({203}, 4, 29, method, 21, 2e-5);                // one document over every rank, odd D
    check_against_kernel<float>({2}, 4, 8, method, 31, 2e-5);                   // fewer tokens than ranks
  }
}

TEST_CASE("Ulysses and Ring on bf16 activations over NCCL (bf16 messages) equal the CPU's bf16 kernels",
          "[sp][cuda]") {
  for (Method method : {Method::ulysses_softmax, Method::ulysses_linear, Method::ring}) {
    check_against_kernel<bf16>({37, 1, 100, 5, 64}, 4, 16, method, 41, 2e-2);
    check_against_kernel<bf16>({2}, 4, 8, method, 51, 2e-2);
  }
}

int main(int argc, char** argv) {
  return cuda_mpi_main(argc, argv, [](CatchSession& session, int device, bool one_rank_a_device) {
    std::unique_ptr<Backend> backend = cuda::make_cuda_backend(device);
    // NCCL where every rank has a device of its own; else the device buffers staged through the host over MPI.
    std::unique_ptr<Communicator> nccl = one_rank_a_device
                                             ? make_nccl_communicator(world(), device, cuda::compute_stream(*backend))
                                             : make_staged_communicator(world(), *backend);
    g_cuda = backend.get();
    g_nccl = nccl.get();
    const int result = session.run();
    g_cuda = nullptr;
    g_nccl = nullptr;
    return result;
  });
}
