#pragma once
// Offline evaluation of a completion method on a profile matrix (DESIGN §4 "leave-one-out, error
// by sparsity"): hide known cells, complete in log-throughput space as the Predictor does,
// compare the predictions with the hidden truth. Hidden cells never reach the method.
//
// Protocols:
//   - "random": hide round(missing × known cells) chosen uniformly (seeded); a row left with no
//     known cell gets one of its hidden cells back, so every row keeps at least one.
//   - "leave-one-row-out": for each application with more than `keep` known cells, hide all but
//     `keep` of them (chosen at random) while every other row stays complete: the cold start of a
//     new application seen on `keep` configurations (seed 000 Ch. 7.5 protocol).
// Metrics over all hidden cells: count, MAPE and median APE (percent, |pred - true| / true) and
// RMSE of natural-log throughput; the same metrics again per number of cells the hidden cell's
// row kept ("error by sparsity", DESIGN §4): a row with one known cell is the cold start, where
// a linear or low-rank method can only return the bias model's guess.

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/matrix.h"

namespace tessera::predict {

struct EvalOptions {
  std::string method = "svd";
  std::string protocol = "random";  // or "leave-one-row-out"
  double missing = 0.5;             // random protocol
  int keep = 2;                     // leave-one-row-out
  uint64_t seed = 1;
};

// The metrics over pairs of positive (truth, prediction); n = 0 when empty.
struct ErrorSummary {
  int n = 0;
  double mape = 0, median_ape = 0, rmse_log = 0;  // percent, percent, log units
};

// The hidden cells of rows that kept `known` observed cells.
struct SparsityBucket {
  int known = 0;
  ErrorSummary errors;
};

struct EvalResult {
  std::string method, protocol;
  double missing = 0;
  int n = 0;
  double mape = 0, median_ape = 0, rmse_log = 0;  // percent, percent, log units
  std::vector<SparsityBucket> by_known;           // ascending `known`, only non-empty buckets
};
ErrorSummary SummariseErrors(const std::vector<double>& truth,
                             const std::vector<double>& predicted);

// Values must be positive (throughputs). Fails on a bad option or an empty matrix.
[[nodiscard]] Expected<EvalResult> Evaluate(const ProfileMatrix& matrix,
                                            const EvalOptions& options);

}  // namespace tessera::predict
