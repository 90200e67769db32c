#include "policy/flow/mip.h"

#include <glpk.h>

#include <cmath>
#include <utility>

namespace tessera::flow {
namespace {

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
  glp_term_out(GLP_OFF);  // the cut generators print even at GLP_MSG_OFF
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  const int n = static_cast<int>(p.cost.size());
  if (n > 0) glp_add_cols(lp, n);
  for (int j = 1; j <= n; ++j) {
    const size_t i = static_cast<size_t>(j - 1);
    glp_set_obj_coef(lp, j, p.cost[i]);
    const bool bounded = !p.upper_bound.empty() && Finite(p.upper_bound[i]);
    if (bounded) {
      glp_set_col_bnds(lp, j, p.upper_bound[i] > 0 ? GLP_DB : GLP_FX, 0, p.upper_bound[i]);
    } else {
      glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    }
    glp_set_col_kind(lp, j, p.integer.empty() || p.integer[i] ? GLP_IV : GLP_CV);
  }
  // GLPK's arrays are 1-based: element 0 is unused.
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  const int m = static_cast<int>(p.rows.size());
  if (m > 0) glp_add_rows(lp, m);
  for (int r = 1; r <= m; ++r) {
    const LinearRow& row = p.rows[static_cast<size_t>(r - 1)];
    const bool lo = Finite(row.lower), up = Finite(row.upper);
    const int type = lo && up ? (row.lower == row.upper ? GLP_FX : GLP_DB)
                     : lo     ? GLP_LO
                     : up     ? GLP_UP
                              : GLP_FR;
    glp_set_row_bnds(lp, r, type, lo ? row.lower : 0, up ? row.upper : 0);
    for (const Term& t : row.terms) {
      ia.push_back(r);
      ja.push_back(t.var + 1);
      ar.push_back(t.coef);
    }
  }
  // GLPK refuses a column twice in one row: add duplicates up first.
  glp_sort_matrix(lp);
  if (glp_check_dup(m, n, static_cast<int>(ia.size()) - 1, ia.data(), ja.data()) != 0) {
    glp_delete_prob(lp);
    result.error = "a variable appears twice in one row";
    return result;
  }
  glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_iocp params;
  glp_init_iocp(&params);
  params.msg_lev = GLP_MSG_OFF;
  params.presolve = GLP_ON;
  params.gmi_cuts = GLP_ON;
  params.mir_cuts = GLP_ON;
  params.cov_cuts = GLP_ON;
  params.clq_cuts = GLP_ON;
  params.mip_gap = p.relative_gap;
  if (p.time_limit_s > 0) params.tm_lim = static_cast<int>(p.time_limit_s * 1000);
  const int ret = glp_intopt(lp, &params);
  const int status = glp_mip_status(lp);
  if (ret == GLP_ENOPFS || ret == GLP_ENODFS || status == GLP_NOFEAS) {
    result.status = Status::kInfeasible;
  } else if (status == GLP_OPT ||
             ((ret == GLP_ETMLIM || ret == GLP_EMIPGAP) && status == GLP_FEAS)) {
    result.status = Status::kOptimal;
    // Within relative_gap of the bound, or optimal.
    result.proven = ret == 0 || ret == GLP_EMIPGAP;
    result.objective = glp_mip_obj_val(lp);
    for (int j = 1; j <= n; ++j) result.values.push_back(glp_mip_col_val(lp, j));
  } else if (status == GLP_UNBND) {
    result.status = Status::kUnbounded;
  } else {
    result.status = Status::kInfeasible;  // no integer point found within the time limit
    result.error = "no integer solution found (GLPK returned " + std::to_string(ret) + ")";
  }
  glp_delete_prob(lp);
  return result;
}

}  // namespace tessera::flow
