#pragma once
// How sure a prediction is (docs/prediction.md "Uncertainty"): a standard deviation σ of the log
// value per cell, and the multiplier z that makes exp(±z·σ) a calibrated 90 % interval.
//
//   - A measured cell: the spread of its runs, σ = sd·√(1 + 1/n) in log units (the next run of
//     the same thing), never below `measured_floor` (0.01: the A100-40GB batch-32/seq-64 cells
//     measured twice differ by 0.8 % RMS, docs/prediction.md).
//   - A completed cell: σ = s_k · (1 + β·|x̂ − b|), where k is how many cells the row has
//     measured (1, 2, 3, 4 or more), s_k the typical error of such a row, and |x̂ − b| how far the
//     method moved from the bias model b (disagreement between methods: where the two agree the
//     prediction is the safe one).
// Calibrate fits s_k, β and z on held-out *observed* cells: `splits` seeded hold-outs of 5 %
// of the observed cells (every row keeps one; small, so that the matrix a hold-out completes is
// nearly as dense as the real one: at 75 % missing, larger hold-outs made intervals too wide),
// each completed by the method itself; β from {0, 0.5, 1, 2} by the Gaussian likelihood, z =
// the 90th percentile of |error| / σ (the errors have heavier tails than a Gaussian's, so z is
// usually above 1.645). Random hold-outs rarely
// leave a dense row with one or two cells, so a bucket k ≤ 3 with fewer than 8 held cells gets
// more from thinning: in up to four passes, a quarter (at most 16) of the rows with more than k
// cells keep k of them, the rest are held out (the cold start of a new application). A bucket
// still thin borrows the pooled s.

#include <array>
#include <cstdint>

#include "predict/completer.h"

namespace tessera::predict {

struct UncertaintyModel {
  std::array<double, 4> scale = {0.3, 0.3, 0.3, 0.3};  // s_k, k = 1, 2, 3, >= 4 known cells
  double disagreement = 0.0;                           // β
  double z90 = 1.645;
  double measured_floor = 0.01;
  int held_cells = 0;  // residuals the calibration saw (0: the defaults above)

  // σ (log units) of a completed cell of a row with `known` measured cells.
  double Completed(int known, double disagreement) const;
  // σ of a measured cell from its runs (variance of the raw values, mean, count).
  double Measured(double mean, double variance, int count) const;
  // The multiplier for a central interval of `coverage` (0, 1): z90 scaled by the Gaussian ratio.
  double Z(double coverage) const;
};

struct CalibrationOptions {
  int splits = 8;
  double fraction = 0.05;
  uint64_t seed = 7;
};

// Fails only when a completion fails. A matrix too small to hold cells out keeps the defaults.
[[nodiscard]] Expected<UncertaintyModel> Calibrate(const Completer& method,
                                                   const Eigen::MatrixXd& observed,
                                                   const EncodedFeatures& features,
                                                   const CalibrationOptions& options = {});

// σ of every cell of `completed` (same shape as `observed`, log space): Completed() for a
// missing cell, with the bias model of `observed` as the second opinion; the floor for an
// observed one (callers that know its runs use Measured()).
Eigen::MatrixXd CellSigmas(const UncertaintyModel& model, const Eigen::MatrixXd& observed,
                           const Eigen::MatrixXd& completed);

}  // namespace tessera::predict
