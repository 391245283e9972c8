// CUDA chunked linear attention against the CPU kernel (itself verified against the fp64 recurrence), forward and
// backward, on a packing with a one-token sequence and lengths that are not multiples of the chunk or of the
// kernel's 32-row tiles, H = 3, D in {32, 64} plus D = 48 (a partial 32-column state slice), chunk in {1, 7, 64, 100}
// (100 spans several 32-row tiles and ends in a partial one), and every nullptr combination of the optional states.
// Tolerances (max error normalised by the reference's max magnitude):
//   fp32  2e-5: both sides run fp32 with different summation orders (shared-memory tiles vs OpenBLAS GEMMs) and exp
//         implementations; the CPU kernel itself is within 1e-5 of the fp64 recurrence.
//   bf16  2e-2 for out and dqkv: inputs are rounded to bf16 before both runs, so the comparison sees the rounding of
//         out to bf16 and of dqkv when it accumulates into a bf16 buffer (2^-9 relative each). States and state
//         gradients stay fp32 and are computed from the same rounded inputs, so they keep the fp32 tolerance.
#include <catch2/catch.hpp>

#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention_linear.h"
#include "kernels/cuda/attention_linear.h"
#include "kernels/shared/bf16.h"
#include "kernels/shared/decay.h"
#include "support/assert_close.h"
#include "support/bf16_vectors.h"
#include "support/device_vector.h"
#include "support/random.h"
#include "support/vector_ops.h"

using namespace trident;
using namespace trident::test;

namespace {

template <class T>
const T* or_null(const std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}
template <class T>
T* or_null(std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

// One problem. Empty state_in / dstate_out stand for nullptr (zeros); want_* = false passes nullptr for the output.
struct LinearProblem {
  std::vector<int32_t> cu_seqlens;
  int H = 0, D = 0;
  std::vector<float> qkv, slopes, state_in, dout, dstate_out, dqkv_prefill, dstate_in_prefill;
  bool want_state_out = true, want_dstate_in = true;

  int n_seq() const { return int(cu_seqlens.size()) - 1; }
  int64_t N() const { return cu_seqlens.back(); }
  int64_t C() const { return int64_t(H) * D; }
  std::size_t state_size() const { return std::size_t(n_seq()) * H * D * D; }
};

struct LinearResult {
  std::vector<float> out, state_out, dqkv, dstate_in;  // dqkv, dstate_in as accumulated onto the prefills
};

LinearResult run_cpu(const LinearProblem& p, int chunk) {
  LinearResult r{std::vector<float>(p.N() * p.C()), std::vector<float>(p.want_state_out ? p.state_size() : 0),
           p.dqkv_prefill, p.want_dstate_in ? p.dstate_in_prefill : std::vector<float>{}};
  cpu::attention_linear_forward(r.out.data(), or_null(r.state_out), p.qkv.data(), p.slopes.data(), or_null(p.state_in),
                                p.cu_seqlens.data(), p.n_seq(), p.N(), p.H, p.D, chunk);
  cpu::attention_linear_backward(r.dqkv.data(), or_null(r.dstate_in), p.dout.data(), or_null(p.dstate_out),
                                 p.qkv.data(), p.slopes.data(), or_null(p.state_in), p.cu_seqlens.data(), p.n_seq(),
                                 p.N(), p.H, p.D, chunk);
  return r;
}

// T = float or bf16 storage of qkv, out, dout, dqkv; states stay fp32.
template <class T>
LinearResult run_cuda(const LinearProblem& p, int chunk) {
  auto ptr = [](auto& dv, bool present) { return present ? dv.data() : nullptr; };
  DeviceVector<int32_t> cu(p.cu_seqlens);
  DeviceVector<T> qkv(to_storage<T>(p.qkv)), dout(to_storage<T>(p.dout)), out(p.N() * p.C()), dqkv(to_storage<T>(p.dqkv_prefill));
  DeviceVector<float> slopes(p.slopes), state_in(p.state_in), dstate_out(p.dstate_out), state_out(p.state_size()),
      dstate_in(p.dstate_in_prefill);
  cuda::attention_linear_forward(out.data(), ptr(state_out, p.want_state_out), qkv.data(), slopes.data(),
                                 ptr(state_in, !p.state_in.empty()), cu.data(), p.n_seq(), p.N(), p.H, p.D, chunk,
                                 nullptr);
  cuda::attention_linear_backward(dqkv.data(), ptr(dstate_in, p.want_dstate_in), dout.data(),
                                  ptr(dstate_out, !p.dstate_out.empty()), qkv.data(), slopes.data(),
                                  ptr(state_in, !p.state_in.empty()), cu.data(), p.n_seq(), p.N(), p.H, p.D, chunk,
                                  nullptr);
  return {from_storage(out.to_host()), p.want_state_out ? state_out.to_host() : std::vector<float>{}, from_storage(dqkv.to_host()),
          p.want_dstate_in ? dstate_in.to_host() : std::vector<float>{}};
}

void compare(const std::string& name, const LinearResult& got, const LinearResult& want, const LinearProblem& p,
             double tol, double state_tol) {
  check_close(name + " out", got.out, want.out, tol);
  if (p.want_state_out) check_close(name + " state_out", got.state_out, want.state_out, state_tol);
  const auto dg = minus(got.dqkv, p.dqkv_prefill), dw = minus(want.dqkv, p.dqkv_prefill);
  const int64_t C = p.C();
  const char* part[] = {" dq", " dk", " dv"};
  for (int k = 0; k < 3; ++k)
    check_close(name + part[k], columns(dg, 3 * C, k * C, C), columns(dw, 3 * C, k * C, C), tol);
  if (p.want_dstate_in)
    check_close(name + " dstate_in", minus(got.dstate_in, p.dstate_in_prefill),
                minus(want.dstate_in, p.dstate_in_prefill), state_tol);
}

// On a device every head shape runs with every variant of the optional states; under the SIMT emulation
// (tests/kernels/simt/), where the full product takes minutes, each head shape with one variant: every shape, every
// variant and every chunk still run, in fp32 and bf16.
#if defined(TRIDENT_SIMT_EMULATION)
constexpr bool kEveryPair = false;
#else
constexpr bool kEveryPair = true;
#endif

}  // namespace

TEST_CASE("cuda attention_linear forward and backward equal the CPU kernel (fp32 and bf16)", "[cuda][attention]") {
  const std::vector<int32_t> cu_seqlens{0, 100, 101, 138, 208, 213};  // lengths 100, 1, 37, 70, 5
  const struct {
    int H, D;
  } heads[] = {{3, 64}, {3, 32}, {3, 48}};
  // Which optional states are present: state_in, dstate_out given; state_out, dstate_in wanted.
  const struct {
    const char* name;
    bool state_in, dstate_out, state_out, dstate_in;
  } variants[] = {{"no state_in", false, true, true, true},
                  {"no dstate_out", true, false, true, true},
                  {"no state_out, no dstate_in", true, true, false, false}};

  for (std::size_t h = 0; h < std::size(heads); ++h) {
    for (std::size_t i = 0; i < std::size(variants); ++i) {
      if (!kEveryPair && i != h) continue;
      const auto& hd = heads[h];
      const auto& v = variants[i];
      LinearProblem p;
      p.cu_seqlens = cu_seqlens;
      p.H = hd.H;
      p.D = hd.D;
      p.slopes = linear_attention_slopes(p.H);
      // bf16-representable inputs, so the fp32 and bf16 runs share one CPU result.
      p.qkv = round_bf16(random_normal<float>(p.N() * 3 * p.C(), 1, 0.5));
      p.dout = round_bf16(random_normal<float>(p.N() * p.C(), 2));
      p.dqkv_prefill = round_bf16(random_normal<float>(p.N() * 3 * p.C(), 3));  // backward accumulates
      p.dstate_in_prefill = random_normal<float>(p.state_size(), 4);
      if (v.state_in) p.state_in = random_normal<float>(p.state_size(), 5);
      if (v.dstate_out) p.dstate_out = random_normal<float>(p.state_size(), 6);
      p.want_state_out = v.state_out;
      p.want_dstate_in = v.dstate_in;

      for (int chunk : {1, 7, 64, 100}) {
        const std::string name = "H=" + std::to_string(p.H) + " D=" + std::to_string(p.D) +
                                 " chunk=" + std::to_string(chunk) + " " + v.name;
        const LinearResult want = run_cpu(p, chunk);
        compare(name + " fp32", run_cuda<float>(p, chunk), want, p, 2e-5, 2e-5);
        compare(name + " bf16", run_cuda<bf16>(p, chunk), want, p, 2e-2, 2e-5);
      }
    }
  }
}
