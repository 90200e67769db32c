#include "predict/baseline.h"

#include <algorithm>

namespace tessera::predict {

Biases FitBiases(const Eigen::MatrixXd& observed, double lambda, int rounds) {
  const Eigen::Index m = observed.rows(), n = observed.cols();
  const Eigen::MatrixXd mask = KnownMask(observed);
  const Eigen::MatrixXd x = (mask.array() > 0).select(observed, 0.0);
  const Eigen::VectorXd n_row = mask.rowwise().sum(), n_col = mask.colwise().sum().transpose();
  const double count = n_row.sum();
  TESSERA_CHECK(count > 0);
  Biases b;
  b.mu = x.sum() / count;
  b.row = Eigen::VectorXd::Zero(m);
  b.col = Eigen::VectorXd::Zero(n);
  // Sums of (x - mu) over each row's and each column's observed cells.
  const Eigen::VectorXd row_sum = x.rowwise().sum() - b.mu * n_row;
  const Eigen::VectorXd col_sum = x.colwise().sum().transpose() - b.mu * n_col;
  for (int round = 0; round < rounds; ++round) {
    // Column biases given row biases, then row biases given column biases (matrix-vector
    // products with the mask: sum over observed cells only).
    const Eigen::VectorXd old_col = b.col, old_row = b.row;
    b.col = (col_sum - mask.transpose() * b.row).array() / (n_col.array() + lambda);
    b.row = (row_sum - mask * b.col).array() / (n_row.array() + lambda);
    const double moved =
        std::max((b.col - old_col).cwiseAbs().maxCoeff(), (b.row - old_row).cwiseAbs().maxCoeff());
    if (moved < 1e-9) break;
  }
  return b;
}

Expected<Eigen::MatrixXd> BaselineCompleter::Complete(const Eigen::MatrixXd& observed) const {
  if (!observed.unaryExpr([](double v) { return IsKnown(v); }).any()) {
    return Fail("baseline: the matrix has no observed cell");
  }
  const Biases b = FitBiases(observed);
  Eigen::MatrixXd out = observed;
  for (Eigen::Index c = 0; c < out.cols(); ++c) {
    for (Eigen::Index r = 0; r < out.rows(); ++r) {
      if (!IsKnown(out(r, c))) out(r, c) = b.At(r, c);
    }
  }
  return out;
}

}  // namespace tessera::predict
