#include "policy/flow/mip.h"

#include <coin/Cbc_C_Interface.h>

#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace tessera::flow {
namespace {

// CBC (through Clp) treats bounds beyond 1e30 as infinite.
constexpr double kCoinInf = 1e30;

bool Finite(double v) { return std::isfinite(v); }

// The contract of mip.h; an empty string when the program meets it.
std::string Validate(const IntegerProgram& p) {
  const size_t n = p.cost.size();
  if (!p.upper_bound.empty() && p.upper_bound.size() != n) {
    return "upper_bound has " + std::to_string(p.upper_bound.size()) + " entries for " +
           std::to_string(n) + " variables";
  }
  if (!p.integer.empty() && p.integer.size() != n) {
    return "integer has " + std::to_string(p.integer.size()) + " entries for " + std::to_string(n) +
           " variables";
  }
  for (size_t j = 0; j < n; ++j) {
    if (!Finite(p.cost[j])) return "variable " + std::to_string(j) + ": cost is not finite";
    if (!p.upper_bound.empty() && !(p.upper_bound[j] >= 0)) {
      return "variable " + std::to_string(j) + ": upper bound below 0";
    }
  }
  for (size_t r = 0; r < p.rows.size(); ++r) {
    const LinearRow& row = p.rows[r];
    if (std::isnan(row.lower) || std::isnan(row.upper) || row.lower > row.upper) {
      return "row " + std::to_string(r) + ": bounds are empty or not numbers";
    }
    for (const Term& t : row.terms) {
      if (t.var < 0 || static_cast<size_t>(t.var) >= n) {
        return "row " + std::to_string(r) + ": variable " + std::to_string(t.var) + " out of range";
      }
      if (!Finite(t.coef)) return "row " + std::to_string(r) + ": coefficient is not finite";
    }
  }
  return {};
}

}  // namespace

MipResult SolveMinimum(const IntegerProgram& p) {
  MipResult result;
  if (std::string error = Validate(p); !error.empty()) {
    result.error = std::move(error);
    return result;
  }
  const int n = static_cast<int>(p.cost.size());
  const int m = static_cast<int>(p.rows.size());
  // CBC loads the matrix by columns (compressed sparse column); duplicates are summed first.
  std::vector<std::map<int, double>> columns(static_cast<size_t>(n));
  for (int r = 0; r < m; ++r) {
    for (const Term& t : p.rows[static_cast<size_t>(r)].terms) {
      columns[static_cast<size_t>(t.var)][r] += t.coef;
    }
  }
  std::vector<CoinBigIndex> start{0};
  std::vector<int> index;
  std::vector<double> value;
  for (const auto& column : columns) {
    for (const auto& [row, coef] : column) {
      index.push_back(row);
      value.push_back(coef);
    }
    start.push_back(static_cast<CoinBigIndex>(index.size()));
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> col_lb(static_cast<size_t>(n), 0), col_ub(static_cast<size_t>(n), kCoinInf);
  for (size_t j = 0; j < col_ub.size(); ++j) {
    if (!p.upper_bound.empty() && Finite(p.upper_bound[j])) col_ub[j] = p.upper_bound[j];
  }
  std::vector<double> row_lb, row_ub;
  for (const LinearRow& row : p.rows) {
    row_lb.push_back(row.lower == -kInf ? -kCoinInf : row.lower);
    row_ub.push_back(row.upper == kInf ? kCoinInf : row.upper);
  }
  Cbc_Model* model = Cbc_newModel();
  Cbc_loadProblem(model, n, m, start.data(), index.data(), value.data(), col_lb.data(),
                  col_ub.data(), p.cost.data(), row_lb.data(), row_ub.data());
  for (int j = 0; j < n; ++j) {
    if (p.integer.empty() || p.integer[static_cast<size_t>(j)]) Cbc_setInteger(model, j);
  }
  Cbc_setLogLevel(model, 0);
  Cbc_setParameter(model, "threads", "1");  // deterministic
  if (!p.cuts) Cbc_setParameter(model, "cuts", "off");
  if (p.relative_gap > 0) Cbc_setAllowableFractionGap(model, p.relative_gap);
  if (p.time_limit_s > 0) Cbc_setMaximumSeconds(model, p.time_limit_s);
  Cbc_solve(model);
  const double* x = Cbc_getColSolution(model);
  if (Cbc_isProvenInfeasible(model)) {
    result.status = Status::kInfeasible;
  } else if (Cbc_isContinuousUnbounded(model)) {
    result.status = Status::kUnbounded;
  } else if (Cbc_isProvenOptimal(model) || (Cbc_numberSavedSolutions(model) > 0 && x != nullptr)) {
    result.status = Status::kOptimal;
    result.proven = Cbc_isProvenOptimal(model) != 0;
    result.objective = Cbc_getObjValue(model);
    result.bound = result.proven ? result.objective : Cbc_getBestPossibleObjValue(model);
    result.values.assign(x, x + n);
  } else {
    result.status = Status::kInfeasible;
    result.error = "no integer solution found within the time limit";
  }
  Cbc_deleteModel(model);
  return result;
}

}  // namespace tessera::flow
