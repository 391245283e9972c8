#include "parallel/cost/fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <vector>

#include "kernels/common/error.h"

extern "C" void dgels_(const char* trans, const int* m, const int* n, const int* nrhs, double* a, const int* lda,
                       double* b, const int* ldb, double* work, const int* lwork, int* info);

namespace trident::cost {

namespace {

// Least squares over the columns marked in `use` (column-major design rows: s^2/d, s/d, 1); unused ones get 0. Each
// row is divided by its measured time, so every timing's relative error weighs alike: timing noise is proportional
// to the time, and unweighted, the longest sequences' quadratic term would leave the linear term (what short
// sequences cost) to their noise.
std::array<double, 3> solve(std::span<const Timing> timings, std::array<bool, 3> use) {
  std::vector<int> columns;
  for (int c = 0; c < 3; ++c)
    if (use[c]) columns.push_back(c);
  const int m = static_cast<int>(timings.size()), n = static_cast<int>(columns.size()), one = 1;
  std::vector<double> a(static_cast<size_t>(m) * n), b(m), weight(m);
  for (int i = 0; i < m; ++i) weight[i] = timings[i].seconds > 0 ? 1 / timings[i].seconds : 1;
  std::array<double, 3> scale{};
  for (int j = 0; j < n; ++j) {
    double norm = 0;
    for (int i = 0; i < m; ++i) {
      const double x = static_cast<double>(timings[i].tokens) / static_cast<double>(timings[i].devices);
      const double v =
          weight[i] * (columns[j] == 0 ? x * static_cast<double>(timings[i].tokens) : columns[j] == 1 ? x : 1.0);
      a[static_cast<size_t>(j) * m + i] = v;
      norm += v * v;
    }
    scale[j] = norm > 0 ? 1 / std::sqrt(norm) : 1;
    for (int i = 0; i < m; ++i) a[static_cast<size_t>(j) * m + i] *= scale[j];
  }
  for (int i = 0; i < m; ++i) b[i] = timings[i].seconds * weight[i];
  int lwork = -1, info = 0;
  double query = 0;
  dgels_("N", &m, &n, &one, a.data(), &m, b.data(), &m, &query, &lwork, &info);
  lwork = static_cast<int>(query);
  std::vector<double> work(lwork);
  dgels_("N", &m, &n, &one, a.data(), &m, b.data(), &m, work.data(), &lwork, &info);
  TRIDENT_CHECK(info == 0, "dgels info {}", info);
  std::array<double, 3> x{};
  for (int j = 0; j < n; ++j) x[columns[j]] = b[j] * scale[j];
  return x;
}

}  // namespace

std::vector<int64_t> halving_lengths(int64_t longest, int64_t shortest, int most) {
  std::vector<int64_t> lengths;
  for (int64_t s = longest; s >= std::max<int64_t>(shortest, 1) && std::ssize(lengths) < most; s /= 2)
    lengths.push_back(s);
  std::reverse(lengths.begin(), lengths.end());
  return lengths;
}

ComputeSection fit_compute(std::span<const Timing> timings) {
  std::set<double> distinct;
  for (const Timing& t : timings) {
    if (t.tokens < 1 || t.devices < 1 || !(t.seconds >= 0))
      throw_config_error("profile fit: a timing of {} tokens on {} devices in {} s is not valid", t.tokens, t.devices,
                         t.seconds);
    distinct.insert(static_cast<double>(t.tokens) / static_cast<double>(t.devices));
  }
  if (distinct.size() < 3)
    throw_config_error("profile fit: needs timings at 3 or more distinct tokens per device, got {}", distinct.size());
  std::array<bool, 3> use = {true, true, true};
  std::array<double, 3> x = solve(timings, use);
  // Drop a negative coefficient and refit the others (at most twice: one term always stays).
  for (int round = 0; round < 2; ++round) {
    bool changed = false;
    for (int c = 0; c < 3; ++c)
      if (use[c] && x[c] < 0) use[c] = false, changed = true;
    if (!changed) break;
    x = solve(timings, use);
  }
  for (double& v : x) v = std::max(v, 0.0);
  return {x[0], x[1], x[2], ""};
}

}  // namespace trident::cost
