#pragma once
// One comparison for every numerical test: x against a reference, reported under a name with the max absolute
// error, the error normalised by the reference's magnitude, and the relative RMS error. Fails through Catch2 when
// the normalised max error exceeds `tol` or when x holds a NaN/Inf the reference does not.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/model/layout.h"

namespace trident::test {

struct CloseReport {
  double max_abs = 0, max_ref = 0, normalised = 0, rms_rel = 0;
  bool finite = true;
};

template <class X, class R>
CloseReport compare(const X* x, const R* ref, std::size_t n) {
  CloseReport r;
  double sq_err = 0, sq_ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double xv = static_cast<double>(x[i]), rv = static_cast<double>(ref[i]);
    if (!std::isfinite(xv) && std::isfinite(rv)) r.finite = false;
    r.max_abs = std::max(r.max_abs, std::abs(xv - rv));
    r.max_ref = std::max(r.max_ref, std::abs(rv));
    sq_err += (xv - rv) * (xv - rv);
    sq_ref += rv * rv;
  }
  r.normalised = r.max_abs / std::max(r.max_ref, 1e-30);
  r.rms_rel = std::sqrt(sq_err / std::max(sq_ref, 1e-300));
  return r;
}

template <class X, class R>
void check_close(const std::string& name, const X* x, const R* ref, std::size_t n, double tol) {
  CloseReport r = compare(x, ref, n);
  INFO(name << ": n=" << n << " max|x-ref|=" << r.max_abs << " max|ref|=" << r.max_ref
            << " normalised=" << r.normalised << " rms_rel=" << r.rms_rel << " tol=" << tol);
  CHECK(r.finite);
  CHECK(r.normalised <= tol);
}

template <class X, class R>
void check_close(const std::string& name, const std::vector<X>& x, const std::vector<R>& ref, double tol) {
  REQUIRE(x.size() == ref.size());
  check_close(name, x.data(), ref.data(), x.size(), tol);
}

// x against ref over a model's flat parameters (or gradients), tensor by tensor, each normalised by its own
// reference's magnitude: a small tensor's error (a bias, a norm's gain) is not hidden under the largest value of all.
template <class X, class R>
void check_close_per_tensor(const std::string& name, const ModelLayout& layout, const std::vector<X>& x,
                            const std::vector<R>& ref, double tol) {
  REQUIRE(x.size() == ref.size());
  REQUIRE(static_cast<int64_t>(x.size()) == layout.num_params);
  for (const ParamEntry& p : layout.params)
    check_close(name + ", " + p.name, x.data() + p.offset, ref.data() + p.offset, static_cast<std::size_t>(p.numel),
                tol);
}

}  // namespace trident::test
