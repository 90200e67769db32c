#pragma once
// Baseline completion: the row/column bias model x_ui ≈ mu + b_u + b_i (Koren's baseline
// predictor), fitted on the observed cells by a few rounds of regularised alternating least
// squares. It is the floor the collaborative-filtering methods must beat, and the starting point
// (the "mean fill") of both of them.

#include <Eigen/Dense>

#include "predict/completer.h"

namespace tessera::predict {

struct Biases {
  double mu = 0.0;
  Eigen::VectorXd row;  // b_u; 0 for a row without observations
  Eigen::VectorXd col;  // b_i; 0 for a column without observations

  double At(Eigen::Index r, Eigen::Index c) const { return mu + row(r) + col(c); }
};

// `lambda` shrinks a bias estimated from few cells towards 0 (a row's bias is
// sum(x - mu - b_i) / (lambda + n_u)). It is kept tiny: a new application's one measured cell
// must set its level (cold start), not be pulled towards the mean application. At most `rounds`
// alternations, fewer once no bias moves by more than 1e-9. Needs at least one observed cell.
Biases FitBiases(const Eigen::MatrixXd& observed, double lambda = 1e-3, int rounds = 100);

class BaselineCompleter final : public Completer {
 public:
  std::string_view name() const override { return "baseline"; }
  Expected<Eigen::MatrixXd> Complete(const Eigen::MatrixXd& observed) const override;
};

}  // namespace tessera::predict
