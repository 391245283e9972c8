#include <omp.h>

#include <catch2/catch.hpp>

#include "kernels/cpu/layernorm.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/gradcheck.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("layernorm matches the double reference, forward and backward", "[kernels][layernorm]") {
  auto [N, C] = GENERATE(std::pair<int64_t, int>{1, 1}, std::pair<int64_t, int>{7, 33}, std::pair<int64_t, int>{130, 256});
  CAPTURE(N, C);
  // an offset mean larger than the spread exercises the two-pass statistics
  auto x = random_normal<float>(N * C, 10, 1.5, 3.0);
  auto w = random_normal<float>(C, 11, 0.5, 1.0), b = random_normal<float>(C, 12);
  auto dout = random_normal<float>(N * C, 13);

  std::vector<float> y(N * C), mean(N), rstd(N);
  cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  auto xd = cast<double>(x), wd = cast<double>(w), bd = cast<double>(b), dyd = cast<double>(dout);
  check_close("layernorm forward", y, reference::layernorm_forward(xd, wd, bd, N, C), 1e-5);

  std::vector<float> dx(N * C, 0.5f), dw(C, 0.5f), db(C, 0.5f);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(),
                          N, C);
  for (auto* g : {&dx, &dw, &db})
    for (auto& v : *g) v -= 0.5f;
  auto ref = reference::layernorm_backward(dyd, xd, wd, N, C);
  if (C > 1) check_close("layernorm dinp", dx, ref.dx, 1e-5);  // with C == 1 the output is constant: dinp == 0
  check_close("layernorm dweight", dw, ref.dw, 1e-5);
  check_close("layernorm dbias", db, ref.db, 1e-5);
}

TEST_CASE("layernorm reference backward matches finite differences", "[kernels][layernorm]") {
  const int64_t N = 3;
  const int C = 5;
  auto x = random_normal<double>(N * C, 20), w = random_normal<double>(C, 21), b = random_normal<double>(C, 22);
  auto dy = random_normal<double>(N * C, 23);
  auto loss = [&] { return weighted_sum(reference::layernorm_forward(x, w, b, N, C), dy); };
  auto g = reference::layernorm_backward(dy, x, w, N, C);
  check_gradient("layernorm dx", loss, x, g.dx);
  check_gradient("layernorm dw", loss, w, g.dw);
  check_gradient("layernorm db", loss, b, g.db);
}

TEST_CASE("layernorm parameter gradients do not depend on the thread count", "[kernels][layernorm]") {
  const int64_t N = 300;
  const int C = 48;
  auto x = random_normal<float>(N * C, 30), w = random_normal<float>(C, 31), b = random_normal<float>(C, 32);
  auto dout = random_normal<float>(N * C, 33);
  std::vector<float> y(N * C), mean(N), rstd(N);
  cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> dx(N * C), dw(C), db(C);
    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                            rstd.data(), N, C);
    dw.insert(dw.end(), db.begin(), db.end());
    return dw;
  };
  int saved = omp_get_max_threads();
  auto one = run(1), three = run(3);
  omp_set_num_threads(saved);
  CHECK(one == three);
}
