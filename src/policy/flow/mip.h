#pragma once
// A small mixed-integer linear program solved by COIN-OR CBC's branch and cut (Debian's
// coinor-libcbc-dev, through its C interface; one thread, so deterministic). CBC proved 30 of
// 40 random planning instances optimal in 1 s where GLPK proved 25 (docs/planning.md). One
// module owns the solver so that every
// exact formulation in Tessera — capacity planning (plan/), a packing bound — goes through one
// contract. Same rules as flow.h: C++17 std headers only, pure, deterministic, no exception but
// std::bad_alloc leaves it, invalid input is kInvalidInput naming the variable or row.
//
// minimise Σ cost[j] · x[j]
// subject to   lower[r] ≤ Σ coef · x[var] ≤ upper[r]   for every row r,
//              0 ≤ x[j] ≤ upper_bound[j],  x[j] integer where integer[j].
// An infinite bound is ±std::numeric_limits<double>::infinity().

#include <limits>
#include <string>
#include <vector>

#include "policy/flow/flow.h"

namespace tessera::flow {

struct Term {
  int var = 0;
  double coef = 0;
};

struct LinearRow {
  std::vector<Term> terms;
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
};

struct IntegerProgram {
  std::vector<double> cost;         // one per variable
  std::vector<double> upper_bound;  // empty, or one per variable (infinity: none)
  std::vector<bool> integer;        // empty (all integer), or one per variable
  std::vector<LinearRow> rows;
  // Stop when the best point is within this fraction of the bound (0: prove the optimum).
  double relative_gap = 0;
  double time_limit_s = 0;  // 0: none. Past it, the best point found so far (proven false).
  // CBC's cut generators. A program whose formulation branching alone proves fast may turn
  // them off: their setup is most of a small solve's allocations (plan/solve.h measures it).
  bool cuts = true;
};

struct MipResult {
  Status status = Status::kInvalidInput;  // kOptimal, kInfeasible, kUnbounded, kInvalidInput
  std::string error;                      // why, for kInvalidInput (and a time-out)
  double objective = 0;                   // kOptimal only
  bool proven = false;                    // kOptimal: within relative_gap of the optimum, proven
  double bound = 0;  // kOptimal: no point is cheaper (the objective when proven; else CBC's bound)
  std::vector<double> values;  // per variable; kOptimal only
};

[[nodiscard]] MipResult SolveMinimum(const IntegerProgram& program);

}  // namespace tessera::flow
