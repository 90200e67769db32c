#include "predict/baseline.h"

#include <algorithm>

namespace tessera::predict {

Eigen::MatrixXd KnownMask(const Eigen::MatrixXd& observed) {
  return observed.unaryExpr([](double v) { return IsKnown(v) ? 1.0 : 0.0; });
}

Biases FitBiases(const Eigen::MatrixXd& observed, double lambda, int rounds) {
  const Eigen::Index m = observed.rows(), n = observed.cols();
  Biases b;
  b.row = Eigen::VectorXd::Zero(m);
  b.col = Eigen::VectorXd::Zero(n);
  double sum = 0;
  long count = 0;
  for (Eigen::Index c = 0; c < n; ++c) {
    for (Eigen::Index r = 0; r < m; ++r) {
      if (IsKnown(observed(r, c))) {
        sum += observed(r, c);
        ++count;
      }
    }
  }
  TESSERA_CHECK(count > 0);
  b.mu = sum / static_cast<double>(count);
  Eigen::VectorXd acc_row(m), acc_col(n), n_row(m), n_col(n);
  for (int round = 0; round < rounds; ++round) {
    // Column biases given row biases, then row biases given column biases.
    acc_col.setZero();
    n_col.setZero();
    for (Eigen::Index c = 0; c < n; ++c) {
      for (Eigen::Index r = 0; r < m; ++r) {
        const double v = observed(r, c);
        if (!IsKnown(v)) continue;
        acc_col(c) += v - b.mu - b.row(r);
        n_col(c) += 1;
      }
    }
    const Eigen::VectorXd old_col = b.col, old_row = b.row;
    b.col = acc_col.array() / (n_col.array() + lambda);
    acc_row.setZero();
    n_row.setZero();
    for (Eigen::Index c = 0; c < n; ++c) {
      for (Eigen::Index r = 0; r < m; ++r) {
        const double v = observed(r, c);
        if (!IsKnown(v)) continue;
        acc_row(r) += v - b.mu - b.col(c);
        n_row(r) += 1;
      }
    }
    b.row = acc_row.array() / (n_row.array() + lambda);
    const double moved =
        std::max((b.col - old_col).cwiseAbs().maxCoeff(), (b.row - old_row).cwiseAbs().maxCoeff());
    if (moved < 1e-10) break;
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
