#pragma once
// Finite-difference gradient checks. Kernels are checked in two links: the fp32 kernel's backward against the
// naive double-precision reference's backward (tight, assert_close.h), and the reference's backward against
// central differences of the reference's forward (here, in double, so the check itself is tight).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "support/assert_close.h"

namespace trident::test {

// Central-difference gradient of loss(x) with respect to every element of x (x is restored afterwards).
inline std::vector<double> numeric_gradient(const std::function<double()>& loss, std::vector<double>& x,
                                            double eps = 1e-6) {
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    double saved = x[i];
    x[i] = saved + eps;
    double plus = loss();
    x[i] = saved - eps;
    double minus = loss();
    x[i] = saved;
    grad[i] = (plus - minus) / (2 * eps);
  }
  return grad;
}

// Checks an analytic gradient against central differences; `tol` is on the normalised max error.
inline void check_gradient(const std::string& name, const std::function<double()>& loss, std::vector<double>& x,
                           const std::vector<double>& analytic, double tol = 1e-6) {
  std::vector<double> numeric = numeric_gradient(loss, x);
  check_close(name + " (analytic vs finite differences)", analytic, numeric, tol);
}

// sum_i out[i] * weight[i]: a scalar loss whose gradient with respect to out is `weight`.
template <class T>
double weighted_sum(const std::vector<T>& out, const std::vector<double>& weight) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * weight[i];
  return s;
}

}  // namespace trident::test
