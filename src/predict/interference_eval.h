#pragma once
// Offline evaluation of a completion method on one interference matrix (seed 000 Ch. 6.4 / 7):
// hide observed (victim, aggressor) cells, complete the rest in linear space as the Predictor
// does (Predictor::RefitInterference: Completer::Complete on the raw loss fractions, then
// clamped to [0, 1]) and compare with the hidden truth. Hidden cells never reach the method.
//
// Protocol: evaluate.h's "random" one — a seeded shuffle of the observed cells, the first
// round(missing × observed) of them hidden; a row left with no observed cell gets one of its
// hidden cells back, so every victim keeps at least one.
// Loss fractions are often ~0, so relative errors mean nothing here: every error is absolute, in
// percentage points (pp, 100 × |predicted - true|). For reference the same metrics are reported
// for the "mean" predictor (every hidden cell = the mean of the kept cells), the trivial prior
// a completion method has to beat.

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/matrix.h"

namespace tessera::predict {

struct InterferenceEvalOptions {
  std::string method = "svd";  // a registry name (registry.h)
  double missing = 0.5;        // share of the observed cells to hide, in (0, 1)
  uint64_t seed = 1;
};

// Absolute errors over pairs of (truth, prediction), percentage points; n = 0 when empty.
struct AbsErrorSummary {
  int n = 0;
  double mae = 0, median_ae = 0, p90_ae = 0, rmse = 0;
};

struct InterferenceEvalResult {
  std::string method;
  double missing = 0;
  uint64_t seed = 0;
  int observed = 0;             // observed cells of the matrix (hidden + kept)
  double kept_mean = 0;         // the mean predictor's value (a fraction)
  AbsErrorSummary errors;       // the method, on the hidden cells
  AbsErrorSummary mean_errors;  // the mean predictor, on the same cells
};

// Quantiles are linear between order statistics, as SummariseErrors (evaluate.h).
AbsErrorSummary SummariseAbsErrors(const std::vector<double>& truth,
                                   const std::vector<double>& predicted);

// Fails on a bad option (missing outside (0, 1), an unknown method), a matrix with no observed
// cell or a cell outside [0, 1], or when no cell can be hidden (every row holds one cell, or
// round(missing × observed) is 0).
[[nodiscard]] Expected<InterferenceEvalResult> EvaluateInterference(
    const SparseMatrix& kind_matrix, const InterferenceEvalOptions& options);

// Every number field's median over the results (seed 0; method and missing of the first).
// Empty input: a default result.
InterferenceEvalResult MedianOverSeeds(const std::vector<InterferenceEvalResult>& results);

}  // namespace tessera::predict
