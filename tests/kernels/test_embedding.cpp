#include <catch2/catch.hpp>

#include "kernels/cpu/embedding.h"
#include "kernels/reference/layers_naive.h"
#include "support/assert_close.h"
#include "support/random.h"

using namespace trident;
using namespace trident::test;

TEST_CASE("embedding forward gathers token and position rows; backward scatters deterministically",
          "[kernels][embedding]") {
  const int V = 11, P = 9, C = 70;  // C not a multiple of the 64-channel slice
  // repeated tokens and positions: the backward must add every occurrence
  std::vector<int32_t> tokens = {3, 3, 0, 10, 3, 7, 7, 1, 0, 10, 3, 2, 5};
  std::vector<int32_t> positions = {0, 1, 2, 3, 0, 1, 2, 0, 1, 2, 3, 8, 8};
  const int64_t N = static_cast<int64_t>(tokens.size());
  auto wte = random_normal<float>(V * C, 1), wpe = random_normal<float>(P * C, 2);
  auto dout = random_normal<float>(N * C, 3);
  bool with_positions = GENERATE(true, false);
  CAPTURE(with_positions);

  std::vector<float> y(N * C);
  cpu::embedding_forward(y.data(), tokens.data(), positions.data(), wte.data(), with_positions ? wpe.data() : nullptr,
                         N, C);
  auto wted = cast<double>(wte), wped = cast<double>(wpe);
  check_close("embedding forward", y,
              reference::embedding_forward(tokens, positions, wted, with_positions ? &wped : nullptr, C), 1e-7);

  std::vector<float> dwte(V * C, 0.0f), dwpe(P * C, 0.0f);
  cpu::embedding_backward(dwte.data(), with_positions ? dwpe.data() : nullptr, dout.data(), tokens.data(),
                          positions.data(), N, C);
  std::vector<double> ewte(V * C), ewpe(P * C);
  for (int64_t t = 0; t < N; ++t)
    for (int i = 0; i < C; ++i) {
      ewte[tokens[t] * C + i] += dout[t * C + i];
      ewpe[positions[t] * C + i] += dout[t * C + i];
    }
  check_close("embedding dwte", dwte, ewte, 1e-6);
  if (with_positions) check_close("embedding dwpe", dwpe, ewpe, 1e-6);
  else CHECK(std::all_of(dwpe.begin(), dwpe.end(), [](float v) { return v == 0.0f; }));
}
