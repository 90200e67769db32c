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
// `rows` (a regular expression, ECMAScript, whole key) limits the hiding, and so the scoring, to
// the matching applications (e.g. a model the project has never seen); the other rows stay
// complete.
// Metrics over all hidden cells: count, MAPE, median and 90th-percentile APE (percent,
// |pred - true| / true), RMSE of natural-log throughput, and the share of hidden cells inside
// their calibrated 90 % interval (uncertainty.h: calibrated on the input's observed cells only); the same metrics again per number of cells the hidden cell's
// row kept ("error by sparsity", DESIGN §4): a row with one known cell is the cold start, where
// a linear or low-rank method can only return the bias model's guess.

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/features.h"
#include "predict/matrix.h"

namespace tessera::predict {

struct EvalOptions {
  std::string method = "svd";
  std::string protocol = "random";  // or "leave-one-row-out"
  double missing = 0.5;             // random protocol
  int keep = 2;                     // leave-one-row-out
  uint64_t seed = 1;
  std::string rows;                 // regex of the rows to hide cells in; empty: all
  bool intervals = true;            // calibrate and score 90 % intervals (2 more completions)
};

// The metrics over pairs of positive (truth, prediction); n = 0 when empty.
struct ErrorSummary {
  int n = 0;
  double mape = 0, median_ape = 0, p90_ape = 0, rmse_log = 0;  // percent ×3, log units
};

// One hidden cell: what was measured, what the method said, and its 90 % interval.
struct HiddenCell {
  std::string app, config;
  double truth = 0, predicted = 0, low = 0, high = 0;
  int known = 0;  // cells its row kept
};

// The hidden cells of rows that kept `known` observed cells.
struct SparsityBucket {
  int known = 0;
  ErrorSummary errors;
};

struct EvalResult {
  std::string method, protocol;
  double missing = 0;
  uint64_t seed = 0;
  ErrorSummary errors;
  double coverage90 = 0;  // share of hidden cells inside their 90 % interval (NaN: not asked)
  std::vector<SparsityBucket> by_known;   // ascending `known`, only non-empty buckets
  std::vector<HiddenCell> cells;          // in the order they were scored
};
ErrorSummary SummariseErrors(const std::vector<double>& truth,
                             const std::vector<double>& predicted);

// The random protocol's draw, shared with interference_eval.h: a seeded shuffle of `cells`, the
// first round(missing × n) of them hidden; walking those from the last, a row that would keep
// nothing keeps that cell instead. `kept[row]` enters as the cells a row keeps outside `cells`
// (0 for most) and leaves as every cell it keeps. Returns the hidden cells.
struct CellIndex {
  int row = 0, col = 0;
};
std::vector<CellIndex> HideAtRandom(std::vector<CellIndex> cells, double missing, uint64_t seed,
                                    std::vector<int>& kept);

// Values must be positive (throughputs). Fails on a bad option (a bad regex, a regex that
// matches no row) or an empty matrix. `features` (optional) reach methods that read them.
[[nodiscard]] Expected<EvalResult> Evaluate(const ProfileMatrix& matrix,
                                            const EvalOptions& options,
                                            const FeatureTable* features = nullptr);

}  // namespace tessera::predict
