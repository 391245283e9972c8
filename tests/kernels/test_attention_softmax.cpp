#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/cpu/attention_softmax.h"
#include "kernels/reference/attention_softmax_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

// Packings with one-token sequences and lengths that are not multiples of the 64-token tile.
struct Packing {
  std::string name;
  std::vector<int32_t> cu_seqlens;
};

std::vector<Packing> packings() {
  std::vector<int32_t> many{0};  // 40 documents of lengths 1..9
  for (int i = 0; i < 40; ++i) many.push_back(many.back() + 1 + (7 * i) % 9);
  return {{"mixed {1,1,65,133}", {0, 1, 2, 67, 200}}, {"one sequence of 300", {0, 300}}, {"40 docs of 1..9", many}};
}

struct SoftmaxForward {
  std::vector<float> out, lse;
};

SoftmaxForward run_forward(const std::vector<float>& qkv, const std::vector<int32_t>& cu, int H, int D) {
  const int64_t N = cu.back();
  SoftmaxForward f{std::vector<float>(N * H * D), std::vector<float>(H * N)};
  cpu::attention_softmax_forward(f.out.data(), f.lse.data(), qkv.data(), cu.data(), int(cu.size()) - 1, N, H, D);
  return f;
}

// Columns [offset, offset + width) of every row of a (rows, stride) matrix: splits dqkv into dq, dk, dv.
template <class T>
std::vector<T> columns(const std::vector<T>& x, int64_t stride, int64_t offset, int64_t width) {
  std::vector<T> y;
  for (std::size_t r = 0; r < x.size() / stride; ++r)
    y.insert(y.end(), x.begin() + r * stride + offset, x.begin() + r * stride + offset + width);
  return y;
}

}  // namespace

TEST_CASE("attention_softmax forward and backward match the double reference", "[kernels][attention]") {
  for (const Packing& pk : packings()) {
    for (int H : {1, 3}) {
      for (int D : {8, 16, 64}) {
        const std::string name = pk.name + " H=" + std::to_string(H) + " D=" + std::to_string(D);
        const int64_t N = pk.cu_seqlens.back(), C = int64_t(H) * D;
        auto qkv = random_normal<float>(N * 3 * C, 1);
        auto dout = random_normal<float>(N * C, 2);
        auto qkvd = cast<double>(qkv);

        SoftmaxForward f = run_forward(qkv, pk.cu_seqlens, H, D);
        auto ref = reference::attention_softmax_forward(qkvd, pk.cu_seqlens, H, D);
        check_close(name + " out", f.out, ref.out, 1e-5);
        check_close(name + " lse", f.lse, ref.lse, 1e-5);

        std::vector<float> dqkv(qkv.size(), 0.25f);  // backward accumulates
        cpu::attention_softmax_backward(dqkv.data(), dout.data(), qkv.data(), f.out.data(), f.lse.data(),
                                        pk.cu_seqlens.data(), int(pk.cu_seqlens.size()) - 1, N, H, D);
        for (auto& g : dqkv) g -= 0.25f;
        auto dref = reference::attention_softmax_backward(cast<double>(dout), qkvd, pk.cu_seqlens, H, D);
        const char* part[] = {" dq", " dk", " dv"};
        for (int p = 0; p < 3; ++p)
          check_close(name + part[p], columns(dqkv, 3 * C, p * C, C), columns(dref, 3 * C, p * C, C), 1e-5);
      }
    }
  }
}

TEST_CASE("attention_softmax stays finite and accurate for large scores", "[kernels][attention]") {
  // Scores of std ~25 reach ~100, where exp without the running max overflows fp32 (> 88.7). The fp32 rounding of
  // a score grows with its magnitude and the softmax turns it into relative error, so this case (~2e-6) is the
  // closest to the 1e-5 tolerance.
  const std::vector<int32_t> cu{0, 5, 150};
  const int H = 2, D = 16;
  const int64_t N = cu.back();
  auto qkv = random_normal<float>(N * 3 * H * D, 3, 5.0);
  SoftmaxForward f = run_forward(qkv, cu, H, D);
  auto ref = reference::attention_softmax_forward(cast<double>(qkv), cu, H, D);
  check_close("large scores out", f.out, ref.out, 1e-5);
  check_close("large scores lse", f.lse, ref.lse, 1e-5);
}

TEST_CASE("attention_softmax reference backward matches finite differences", "[kernels][attention]") {
  const std::vector<int32_t> cu{0, 4, 10};
  const int H = 2, D = 4;
  const int64_t N = cu.back();
  auto qkv = random_normal<double>(N * 3 * H * D, 4);
  auto w = random_normal<double>(N * H * D, 5);  // loss = sum(w * out), so dout = w
  auto analytic = reference::attention_softmax_backward(w, qkv, cu, H, D);
  check_gradient("attention_softmax reference backward",
                 [&] { return weighted_sum(reference::attention_softmax_forward(qkv, cu, H, D).out, w); }, qkv,
                 analytic, 1e-6);
}

TEST_CASE("attention_softmax never attends across documents or to future tokens", "[kernels][attention]") {
  const std::vector<int32_t> cu{0, 70, 130, 210};  // documents straddle tile boundaries
  const int H = 3, D = 16;
  const int64_t N = cu.back(), C = int64_t(H) * D;
  auto qkv = random_normal<float>(N * 3 * C, 6);
  const SoftmaxForward base = run_forward(qkv, cu, H, D);

  // Rows [t_begin, t_end) of out, and their lse entries of every head, are bit-identical between a and b.
  auto same_rows = [&](const SoftmaxForward& a, const SoftmaxForward& b, int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      for (int64_t c = 0; c < C; ++c)
        if (a.out[t * C + c] != b.out[t * C + c]) return false;
      for (int h = 0; h < H; ++h)
        if (a.lse[h * N + t] != b.lse[h * N + t]) return false;
    }
    return true;
  };
  auto perturbed = [&](int64_t t_begin, int64_t t_end) {
    auto x = qkv;
    for (int64_t i = t_begin * 3 * C; i < t_end * 3 * C; ++i) x[i] += 0.5f;
    return run_forward(x, cu, H, D);
  };

  SECTION("perturbing document 1 leaves documents 0 and 2 bit-identical") {
    const SoftmaxForward f = perturbed(cu[1], cu[2]);
    CHECK(same_rows(f, base, cu[0], cu[1]));
    CHECK(same_rows(f, base, cu[2], cu[3]));
    CHECK_FALSE(same_rows(f, base, cu[1], cu[2]));
  }
  SECTION("perturbing token u leaves earlier positions of its document bit-identical") {
    for (int64_t u : {cu[1] + 0, cu[1] + 30, cu[2] + 63, cu[2] + 64, cu[3] - 1}) {
      CAPTURE(u);
      const SoftmaxForward f = perturbed(u, u + 1);
      const int64_t doc_begin = u < cu[2] ? cu[1] : cu[2];
      CHECK(same_rows(f, base, doc_begin, u));
      CHECK_FALSE(same_rows(f, base, u, u + 1));
    }
  }
}
