#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention_linear.h"
#include "kernels/reference/attention_linear_naive.h"
#include "kernels/shared/decay.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

namespace {

// A packed batch with random inputs. Empty state_in / dstate_out stand for nullptr (zeros).
struct Batch {
  int H = 0, D = 0;
  std::vector<int32_t> cu_seqlens;
  std::vector<float> qkv, slopes, state_in;

  int n_seq() const { return int(cu_seqlens.size()) - 1; }
  int64_t N() const { return cu_seqlens.back(); }
  int64_t C() const { return int64_t(H) * D; }
  std::size_t state_size() const { return std::size_t(n_seq()) * H * D * D; }
};

template <class T>
const T* or_null(const std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

std::vector<int32_t> offsets(const std::vector<int>& lengths) {
  std::vector<int32_t> cu{0};
  for (int n : lengths) cu.push_back(cu.back() + n);
  return cu;
}

// Slopes from the ALiBi rule unless given.
Batch make_batch(const std::vector<int>& lengths, int H, int D, bool with_state, uint64_t seed,
                 std::vector<float> slopes = {}) {
  Batch b;
  b.H = H;
  b.D = D;
  b.cu_seqlens = offsets(lengths);
  b.slopes = slopes.empty() ? linear_attention_slopes(H) : slopes;
  b.qkv = random_normal<float>(b.N() * 3 * b.C(), seed, 0.5);
  if (with_state) b.state_in = random_normal<float>(b.state_size(), seed + 1);
  return b;
}

template <class T>
struct Forward {
  std::vector<T> out, state_out;
};

template <class T>
struct Grads {
  std::vector<T> dqkv, dstate_in;
};

// Upstream gradients: dout and a nonzero dstate_out.
struct Upstream {
  std::vector<float> dout, dstate_out;
};

Upstream make_upstream(const Batch& b, uint64_t seed) {
  return {random_normal<float>(b.N() * b.C(), seed), random_normal<float>(b.state_size(), seed + 1)};
}

Forward<float> kernel_forward(const Batch& b, int chunk) {
  Forward<float> f{std::vector<float>(b.N() * b.C()), std::vector<float>(b.state_size())};
  cpu::attention_linear_forward(f.out.data(), f.state_out.data(), b.qkv.data(), b.slopes.data(), or_null(b.state_in),
                                b.cu_seqlens.data(), b.n_seq(), b.N(), b.H, b.D, chunk);
  return f;
}

// Accumulates into g (which the caller may pre-fill).
void kernel_backward(Grads<float>& g, const Batch& b, const Upstream& u, int chunk) {
  cpu::attention_linear_backward(g.dqkv.data(), g.dstate_in.data(), u.dout.data(), or_null(u.dstate_out),
                                 b.qkv.data(), b.slopes.data(), or_null(b.state_in), b.cu_seqlens.data(), b.n_seq(),
                                 b.N(), b.H, b.D, chunk);
}

Grads<float> zero_grads(const Batch& b) {
  return {std::vector<float>(b.N() * 3 * b.C()), std::vector<float>(b.state_size())};
}

Forward<double> reference_forward(const Batch& b) {
  auto qkv = cast<double>(b.qkv), slopes = cast<double>(b.slopes), state_in = cast<double>(b.state_in);
  Forward<double> f{std::vector<double>(b.N() * b.C()), std::vector<double>(b.state_size())};
  reference::attention_linear_forward(f.out.data(), f.state_out.data(), qkv.data(), slopes.data(), or_null(state_in),
                                      b.cu_seqlens.data(), b.n_seq(), b.N(), b.H, b.D);
  return f;
}

Grads<double> reference_backward(const Batch& b, const Upstream& u) {
  auto qkv = cast<double>(b.qkv), slopes = cast<double>(b.slopes), state_in = cast<double>(b.state_in);
  auto dout = cast<double>(u.dout), dstate_out = cast<double>(u.dstate_out);
  Grads<double> g{std::vector<double>(b.N() * 3 * b.C()), std::vector<double>(b.state_size())};
  reference::attention_linear_backward(g.dqkv.data(), g.dstate_in.data(), dout.data(), or_null(dstate_out),
                                       qkv.data(), slopes.data(), or_null(state_in), b.cu_seqlens.data(), b.n_seq(),
                                       b.N(), b.H, b.D);
  return g;
}

std::vector<double> minus(const std::vector<float>& x, const std::vector<float>& prefill) {
  std::vector<double> d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) d[i] = double(x[i]) - double(prefill[i]);
  return d;
}

// Odd packings: one-token sequences, lengths that are not multiples of the chunk, many short documents.
struct Shape {
  std::vector<int> lengths;
  int H, D;
};

std::vector<Shape> odd_shapes() {
  std::mt19937 rng(7);
  std::vector<int> many;
  for (int i = 0; i < 40; ++i) many.push_back(1 + int(rng() % 9));
  return {{{1, 37, 1, 100, 5}, 1, 8}, {{130, 1, 64, 65, 7}, 3, 16}, {{200, 1, 63}, 8, 64}, {many, 3, 8}};
}

// 1 is the recurrent form, "full" (>= every sequence) the purely quadratic one.
std::vector<int> chunk_sizes(const Batch& b) { return {1, 7, 64, int(b.N())}; }

std::string describe(const Batch& b, int chunk, bool with_state) {
  return "H=" + std::to_string(b.H) + " D=" + std::to_string(b.D) + " n_seq=" + std::to_string(b.n_seq()) +
         " N=" + std::to_string(b.N()) + " chunk=" + std::to_string(chunk) + (with_state ? " state_in" : "");
}

// Rows [begin, end) of a row-major (rows, width) matrix, for each range in turn.
template <class T>
std::vector<T> gather_rows(const std::vector<T>& x, int64_t width, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<T> y;
  for (auto [begin, end] : ranges) y.insert(y.end(), x.begin() + begin * width, x.begin() + end * width);
  return y;
}

}  // namespace

TEST_CASE("attention_linear: chunked forward matches the recurrent reference", "[kernels][attention]") {
  for (const Shape& shape : odd_shapes()) {
    for (bool with_state : {false, true}) {
      Batch b = make_batch(shape.lengths, shape.H, shape.D, with_state, 11);
      Forward<double> ref = reference_forward(b);
      for (int chunk : chunk_sizes(b)) {
        Forward<float> f = kernel_forward(b, chunk);
        const std::string name = describe(b, chunk, with_state);
        check_close("out " + name, f.out, ref.out, 1e-5);
        check_close("state_out " + name, f.state_out, ref.state_out, 1e-5);
      }
    }
  }
}

TEST_CASE("attention_linear: chunked backward matches the reference backward and accumulates", "[kernels][attention]") {
  for (const Shape& shape : odd_shapes()) {
    for (bool with_state : {false, true}) {
      Batch b = make_batch(shape.lengths, shape.H, shape.D, with_state, 21);
      Upstream u = make_upstream(b, 23);
      Grads<double> ref = reference_backward(b, u);
      const Grads<float> prefill{random_normal<float>(b.N() * 3 * b.C(), 25), random_normal<float>(b.state_size(), 26)};
      for (int chunk : chunk_sizes(b)) {
        Grads<float> g = prefill;
        kernel_backward(g, b, u, chunk);
        const std::string name = describe(b, chunk, with_state);
        check_close("dqkv " + name, minus(g.dqkv, prefill.dqkv), ref.dqkv, 1e-5);
        check_close("dstate_in " + name, minus(g.dstate_in, prefill.dstate_in), ref.dstate_in, 1e-5);
      }
    }
  }

  // nullptr dstate_out (zeros) and nullptr dstate_in (not wanted)
  Batch b = make_batch({1, 37, 1, 100, 5}, 3, 8, true, 27);
  Upstream u{random_normal<float>(b.N() * b.C(), 28), {}};
  Grads<double> ref = reference_backward(b, u);
  std::vector<float> dqkv(b.N() * 3 * b.C());
  cpu::attention_linear_backward(dqkv.data(), nullptr, u.dout.data(), nullptr, b.qkv.data(), b.slopes.data(),
                                 b.state_in.data(), b.cu_seqlens.data(), b.n_seq(), b.N(), b.H, b.D, 16);
  check_close("dqkv without dstate_out", dqkv, ref.dqkv, 1e-5);
}

TEST_CASE("attention_linear: reference backward matches finite differences", "[kernels][attention]") {
  // Tiny, with fast decays so the exponents are exercised; loss = <w_out, out> + <w_state, state_out>.
  Batch b = make_batch({3, 1, 4}, 2, 3, true, 31, {0.7f, 0.1f});
  Upstream u = make_upstream(b, 33);
  auto qkv = cast<double>(b.qkv), slopes = cast<double>(b.slopes), state_in = cast<double>(b.state_in);
  auto w_out = cast<double>(u.dout), w_state = cast<double>(u.dstate_out);
  auto loss = [&] {
    std::vector<double> out(b.N() * b.C()), state_out(b.state_size());
    reference::attention_linear_forward(out.data(), state_out.data(), qkv.data(), slopes.data(), state_in.data(),
                                        b.cu_seqlens.data(), b.n_seq(), b.N(), b.H, b.D);
    return weighted_sum(out, w_out) + weighted_sum(state_out, w_state);
  };
  Grads<double> g = reference_backward(b, u);
  check_gradient("reference dqkv", loss, qkv, g.dqkv, 1e-6);
  check_gradient("reference dstate_in", loss, state_in, g.dstate_in, 1e-6);
}

TEST_CASE("attention_linear: in two pieces through the state equals one run, values and gradients",
          "[kernels][attention]") {
  // Two sequences, each cut inside a chunk: piece A holds their heads, piece B their tails. A's state_out is B's
  // state_in; B's dstate_in is A's dstate_out (the LASP hand-off).
  const int H = 3, D = 16, chunk = 16;
  Batch whole = make_batch({150, 90}, H, D, true, 41);
  Upstream u = make_upstream(whole, 43);
  const int64_t C = whole.C();
  const std::vector<std::pair<int64_t, int64_t>> rows_a{{0, 61}, {150, 190}}, rows_b{{61, 150}, {190, 240}};

  Batch piece_a = whole, piece_b = whole;
  piece_a.cu_seqlens = offsets({61, 40});
  piece_a.qkv = gather_rows(whole.qkv, 3 * C, rows_a);
  piece_b.cu_seqlens = offsets({89, 50});
  piece_b.qkv = gather_rows(whole.qkv, 3 * C, rows_b);

  Forward<float> f_whole = kernel_forward(whole, chunk);
  Forward<float> f_a = kernel_forward(piece_a, chunk);
  piece_b.state_in = f_a.state_out;
  Forward<float> f_b = kernel_forward(piece_b, chunk);
  check_close("out piece A", f_a.out, gather_rows(f_whole.out, C, rows_a), 1e-5);
  check_close("out piece B", f_b.out, gather_rows(f_whole.out, C, rows_b), 1e-5);
  check_close("state_out", f_b.state_out, f_whole.state_out, 1e-5);

  Grads<float> g_whole = zero_grads(whole), g_a = zero_grads(piece_a), g_b = zero_grads(piece_b);
  kernel_backward(g_whole, whole, u, chunk);
  kernel_backward(g_b, piece_b, {gather_rows(u.dout, C, rows_b), u.dstate_out}, chunk);
  kernel_backward(g_a, piece_a, {gather_rows(u.dout, C, rows_a), g_b.dstate_in}, chunk);
  check_close("dqkv piece A", g_a.dqkv, gather_rows(g_whole.dqkv, 3 * C, rows_a), 1e-5);
  check_close("dqkv piece B", g_b.dqkv, gather_rows(g_whole.dqkv, 3 * C, rows_b), 1e-5);
  check_close("dstate_in", g_a.dstate_in, g_whole.dstate_in, 1e-5);
}

TEST_CASE("attention_linear: is causal and does not leak across documents", "[kernels][attention]") {
  const int chunk = 16;
  Batch b = make_batch({50, 70, 30}, 3, 8, true, 51);
  const int64_t C = b.C(), u_row = 50 + 37, doc1_end = 120;  // u_row is inside a chunk of document 1
  const std::size_t DD = std::size_t(b.D) * b.D, per_seq = b.H * DD;

  Batch perturbed = b;
  auto noise = random_normal<float>(3 * C, 53);
  for (int64_t e = 0; e < 3 * C; ++e) perturbed.qkv[u_row * 3 * C + e] += noise[e];
  Forward<float> f = kernel_forward(b, chunk), fp = kernel_forward(perturbed, chunk);
  for (int64_t e = 0; e < u_row * C; ++e) REQUIRE(fp.out[e] == f.out[e]);
  for (int64_t e = doc1_end * C; e < b.N() * C; ++e) REQUIRE(fp.out[e] == f.out[e]);
  for (std::size_t e = 0; e < per_seq; ++e) {
    REQUIRE(fp.state_out[e] == f.state_out[e]);
    REQUIRE(fp.state_out[2 * per_seq + e] == f.state_out[2 * per_seq + e]);
  }
  CHECK(fp.out[u_row * C] != f.out[u_row * C]);  // the perturbation does reach its own token

  // Backward: dout of token u reaches only tokens <= u of its own document.
  Upstream u = make_upstream(b, 55), up = u;
  for (int64_t e = 0; e < C; ++e) up.dout[u_row * C + e] += noise[e];
  Grads<float> g = zero_grads(b), gp = zero_grads(b);
  kernel_backward(g, b, u, chunk);
  kernel_backward(gp, b, up, chunk);
  for (int64_t e = (u_row + 1) * 3 * C; e < b.N() * 3 * C; ++e) REQUIRE(gp.dqkv[e] == g.dqkv[e]);
  for (int64_t e = 0; e < 50 * 3 * C; ++e) REQUIRE(gp.dqkv[e] == g.dqkv[e]);
  for (std::size_t e = 0; e < per_seq; ++e) {
    REQUIRE(gp.dstate_in[e] == g.dstate_in[e]);
    REQUIRE(gp.dstate_in[2 * per_seq + e] == g.dstate_in[2 * per_seq + e]);
  }
}

TEST_CASE("attention_linear: with a fast-decaying head and long chunks stays finite", "[kernels][attention]") {
  // H = 16: head 0 has s = 0.7071, and exp(+s * 256) would overflow fp32 (the paper's lambda^-1 form).
  REQUIRE(std::isinf(std::exp(0.7071f * 256.0f)));
  Batch b = make_batch({600}, 16, 8, true, 61);
  REQUIRE(b.slopes[0] == Approx(0.7071).epsilon(1e-4));
  Upstream u = make_upstream(b, 63);
  Forward<float> f = kernel_forward(b, 256);
  Forward<double> ref = reference_forward(b);
  check_close("out", f.out, ref.out, 1e-5);  // also fails on NaN/Inf
  check_close("state_out", f.state_out, ref.state_out, 1e-5);
  Grads<float> g = zero_grads(b);
  kernel_backward(g, b, u, 256);
  Grads<double> gref = reference_backward(b, u);
  check_close("dqkv", g.dqkv, gref.dqkv, 1e-5);
  check_close("dstate_in", g.dstate_in, gref.dstate_in, 1e-5);
}

TEST_CASE("attention_linear: slopes follow the ALiBi rule and decay factors stay in [0, 1]", "[kernels][attention]") {
  auto s8 = linear_attention_slopes(8);
  for (int h = 0; h < 8; ++h) CHECK(s8[h] == float(std::exp2(-(h + 1))));  // 0.5, 0.25, ..., 0.00390625
  CHECK(s8[7] == 0.00390625f);

  auto s12 = linear_attention_slopes(12);
  for (int h = 0; h < 8; ++h) CHECK(s12[h] == s8[h]);
  const double tail12[] = {0.7071, 0.3536, 0.1768, 0.0884};
  for (int j = 0; j < 4; ++j) CHECK(s12[8 + j] == Approx(tail12[j]).epsilon(1e-3));

  auto s16 = linear_attention_slopes(16);
  const double head16[] = {0.7071, 0.5, 0.3536, 0.25};
  for (int h = 0; h < 4; ++h) CHECK(s16[h] == Approx(head16[h]).epsilon(1e-3));
  for (int h = 0; h < 16; ++h) CHECK(s16[h] == float(std::exp2(-(h + 1) / 2.0)));
  CHECK(s16[15] == 0.00390625f);

  auto s6 = linear_attention_slopes(6);  // p = 4: 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3
  const float expect6[] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f};
  for (int h = 0; h < 6; ++h) CHECK(s6[h] == expect6[h]);
  CHECK(linear_attention_slopes(1)[0] == 0.00390625f);

  // TNL layer factor 1 - l/(L-1) + 1e-5; a single layer counts as a first layer.
  CHECK(linear_attention_slopes(8, 0, 1)[0] == float(0.5 * (1 + 1e-5)));
  CHECK(linear_attention_slopes(8, 0, 3)[0] == float(0.5 * (1 + 1e-5)));
  CHECK(linear_attention_slopes(8, 1, 3)[0] == float(0.5 * (0.5 + 1e-5)));
  CHECK(linear_attention_slopes(8, 2, 3)[0] == float(0.5 * 1e-5));

  // Factors of docs/methods.md §1, and no overflow where exp(+s*c) would: s = 0.7071, c = 256.
  const float s = 0.7071f;
  const int c = 256;
  CHECK(q_decay(s, 0) == 1.0f);
  CHECK(k_decay(s, c - 1, c) == Approx(std::exp(-0.7071)));
  CHECK(block_decay(0.5, 3) == Approx(std::exp(-1.5)));
  CHECK(diag_decay(0.5, 4, 1) == Approx(std::exp(-1.5)));
  CHECK(diag_decay(0.5, 1, 4) == 0.0);
  for (int j = 0; j < c; ++j) {
    CHECK(std::isfinite(k_decay(s, j, c)));
    CHECK(k_decay(s, j, c) <= 1.0f);
  }
  CHECK(block_decay(s, c) == 0.0f);  // underflows: the far past is forgotten
}
