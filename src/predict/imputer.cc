#include "predict/imputer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "predict/baseline.h"

namespace tessera::predict {

Expected<Eigen::MatrixXd> ImputerCompleter::Complete(const Eigen::MatrixXd& observed) const {
  const Eigen::MatrixXd mask = KnownMask(observed);
  if (mask.sum() == 0) return Fail("imputer: the matrix has no observed cell");
  const Eigen::Index m = observed.rows(), n = observed.cols();
  const Biases biases = FitBiases(observed);
  Eigen::MatrixXd x(m, n);
  for (Eigen::Index c = 0; c < n; ++c) {
    for (Eigen::Index r = 0; r < m; ++r) {
      x(r, c) = mask(r, c) > 0 ? observed(r, c) : biases.At(r, c);
    }
  }
  if (n < 2) return x;

  // Predictor choice: correlation of the initial fill, restricted to column pairs observed
  // together on enough rows (both products are dense GEMMs).
  const Eigen::MatrixXd overlap = mask.transpose() * mask;
  const Eigen::MatrixXd centred = x.rowwise() - x.colwise().mean();
  const Eigen::VectorXd norms = centred.colwise().norm();
  const Eigen::MatrixXd cov = centred.transpose() * centred;
  std::vector<std::vector<Eigen::Index>> predictors(static_cast<size_t>(n));
  for (Eigen::Index t = 0; t < n; ++t) {
    std::vector<std::pair<double, Eigen::Index>> candidates;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (j == t || overlap(t, j) < options_.min_overlap) continue;
      const double denom = norms(t) * norms(j);
      candidates.emplace_back(denom > 0 ? std::abs(cov(t, j)) / denom : 0.0, j);
    }
    const size_t keep = std::min(candidates.size(), static_cast<size_t>(options_.nearest));
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<long>(keep),
                      candidates.end(), [](const auto& a, const auto& b) {
                        return a.first > b.first || (a.first == b.first && a.second < b.second);
                      });
    for (size_t i = 0; i < keep; ++i)
      predictors[static_cast<size_t>(t)].push_back(candidates[i].second);
  }

  std::vector<Eigen::Index> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const Eigen::VectorXd missing =
      Eigen::VectorXd::Constant(m, 1.0).transpose() * (Eigen::MatrixXd::Ones(m, n) - mask);
  std::stable_sort(order.begin(), order.end(),
                   [&](Eigen::Index a, Eigen::Index b) { return missing(a) < missing(b); });
  double lo = observed.unaryExpr([](double v) { return IsKnown(v) ? v : INFINITY; }).minCoeff();
  double hi = observed.unaryExpr([](double v) { return IsKnown(v) ? v : -INFINITY; }).maxCoeff();
  const double scale = std::max(hi - lo, 1e-12);

  for (int round = 0; round < options_.rounds; ++round) {
    double largest_change = 0;
    for (const Eigen::Index t : order) {
      const std::vector<Eigen::Index>& cols = predictors[static_cast<size_t>(t)];
      if (missing(t) == 0 || cols.empty()) continue;
      const Eigen::Index p = static_cast<Eigen::Index>(cols.size());
      std::vector<Eigen::Index> train, fill;
      for (Eigen::Index r = 0; r < m; ++r) (mask(r, t) > 0 ? train : fill).push_back(r);
      if (train.size() < 2) continue;
      Eigen::MatrixXd a(static_cast<Eigen::Index>(train.size()), p);
      Eigen::VectorXd y(static_cast<Eigen::Index>(train.size()));
      for (size_t i = 0; i < train.size(); ++i) {
        for (Eigen::Index j = 0; j < p; ++j)
          a(static_cast<Eigen::Index>(i), j) = x(train[i], cols[j]);
        y(static_cast<Eigen::Index>(i)) = x(train[i], t);
      }
      const Eigen::RowVectorXd a_mean = a.colwise().mean();
      const double y_mean = y.mean();
      const Eigen::MatrixXd ac = a.rowwise() - a_mean;
      Eigen::MatrixXd gram = ac.transpose() * ac;
      gram.diagonal().array() += options_.ridge * static_cast<double>(train.size());
      const Eigen::VectorXd w = gram.ldlt().solve(ac.transpose() * (y.array() - y_mean).matrix());
      for (const Eigen::Index r : fill) {
        double v = y_mean;
        for (Eigen::Index j = 0; j < p; ++j) v += w(j) * (x(r, cols[j]) - a_mean(j));
        largest_change = std::max(largest_change, std::abs(v - x(r, t)));
        x(r, t) = v;
      }
    }
    if (largest_change < options_.tolerance * scale) break;
  }
  return x;
}

}  // namespace tessera::predict
