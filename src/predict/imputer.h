#pragma once
// ImputerCompleter: iterative round-robin regression imputation, the thesis's "multivariate
// imputation" (seed 000 Ch. 7.3-7.5: scikit-learn's IterativeImputer, MICE-like, max_iter 10).
//
// Each column (configuration) with missing cells is in turn the target y; a ridge regression on
// the other columns' current values, fitted on the rows where y is observed, predicts y's
// missing cells. Columns are visited in ascending order of missing cells; a round visits every
// column; at most `rounds` rounds, fewer when the largest change of a fill drops below
// `tolerance` (relative to the value range, as scikit-learn does).
//
// Choices where the thesis is silent (docs/prediction.md):
//   - Initial fill: the bias model mu + b_u + b_i (baseline.h) instead of the column mean; in
//     log-throughput space a column mean ignores that applications differ by 10^4.
//   - Predictors: the `nearest` columns most correlated with the target (scikit-learn's
//     n_nearest_features) among those observed together with it on at least 3 rows. Columns
//     never observed together (an A100-40GB and an A100-80GB profile) carry only imputed values
//     and are not used; this also keeps a 500-column matrix cheap.
//   - Regressor: ridge with a small penalty on centred data (scikit-learn uses BayesianRidge).
//   - A single imputation (deterministic), not multiple imputation.

#include "predict/completer.h"

namespace tessera::predict {

struct ImputerOptions {
  int rounds = 10;
  double tolerance = 1e-3;
  int nearest = 10;
  double ridge = 1e-2;
  int min_overlap = 3;
};

class ImputerCompleter final : public Completer {
 public:
  explicit ImputerCompleter(ImputerOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "imputer"; }
  Expected<Eigen::MatrixXd> Complete(const Eigen::MatrixXd& observed) const override;

 private:
  ImputerOptions options_;
};

}  // namespace tessera::predict
