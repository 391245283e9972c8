#pragma once
// A mixed-integer linear program as plain data, so the FlexSP model is built once and handed to a solver: CBC
// here (solve_with_cbc), GLPK in `trident bench milp` to compare the two on the same models.
#include <vector>

namespace trident::flexsp {

struct MilpModel {
  struct Column {
    double lower = 0, upper = 0, objective = 0;
    bool integer = false;
  };
  struct Row {
    std::vector<int> columns;
    std::vector<double> coefficients;
    char sense = 'L';  // 'L' <=, 'G' >=, 'E' =
    double rhs = 0;
  };
  std::vector<Column> columns;  // minimise sum objective * x
  std::vector<Row> rows;
  std::vector<std::pair<int, double>> start;  // a feasible solution's non-zeros (MIP start); may be empty
};

struct MilpResult {
  std::vector<double> x;        // empty when no feasible solution was found
  double objective = 0;
  bool proven_optimal = false;
};

// COIN-OR CBC through its C API: one thread, no log, at most `time_limit_s`; the best solution found by then.
MilpResult solve_with_cbc(const MilpModel& model, double time_limit_s);

}  // namespace trident::flexsp
