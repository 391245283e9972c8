#include "parallel/flexsp/milp_model.h"

#include <Cbc_C_Interface.h>

#include <memory>

#include <fmt/format.h>

namespace trident::flexsp {

MilpResult solve_with_cbc(const MilpModel& m, double time_limit_s) {
  struct Deleter {
    void operator()(Cbc_Model* p) const { Cbc_deleteModel(p); }
  };
  std::unique_ptr<Cbc_Model, Deleter> model(Cbc_newModel());
  Cbc_setLogLevel(model.get(), 0);
  Cbc_setMaximumSeconds(model.get(), time_limit_s);
  // Unique names: CBC 2.10's C interface matches MIP-start values to columns by name, even in Cbc_setMIPStartI.
  for (size_t j = 0; j < m.columns.size(); ++j) {
    const MilpModel::Column& c = m.columns[j];
    Cbc_addCol(model.get(), fmt::format("x{}", j).c_str(), c.lower, c.upper, c.objective, c.integer ? 1 : 0, 0,
               nullptr, nullptr);
  }
  for (const MilpModel::Row& r : m.rows)
    Cbc_addRow(model.get(), "", static_cast<int>(r.columns.size()), r.columns.data(), r.coefficients.data(), r.sense,
               r.rhs);
  if (!m.start.empty()) {
    std::vector<int> columns;
    std::vector<double> values;
    for (auto [c, v] : m.start) columns.push_back(c), values.push_back(v);
    Cbc_setMIPStartI(model.get(), static_cast<int>(columns.size()), columns.data(), values.data());
  }
  Cbc_solve(model.get());
  MilpResult result;
  const double* x = Cbc_getColSolution(model.get());
  if (!x || Cbc_numberSavedSolutions(model.get()) < 1) return result;
  result.x.assign(x, x + m.columns.size());
  result.objective = Cbc_getObjValue(model.get());
  result.proven_optimal = Cbc_isProvenOptimal(model.get()) != 0;
  return result;
}

}  // namespace trident::flexsp
