#include "predict/feature_kernel.h"

#include <cmath>

#include "predict/registry.h"

namespace tessera::predict {
namespace {

Expected<Eigen::MatrixXd> Fallback(const std::string& name, const Eigen::MatrixXd& observed) {
  Expected<std::unique_ptr<Completer>> method =
      MakeCompleter(name == "features" ? std::string("hybrid") : name);
  if (!method) return std::unexpected(method.error());
  return (*method)->Complete(observed);
}

}  // namespace

Eigen::MatrixXd FeatureKernelCompleter::Fit(const Eigen::MatrixXd& observed,
                                            const Eigen::MatrixXd& mask,
                                            const Eigen::MatrixXd& sq_dist, double h) const {
  const Eigen::Index m = observed.rows(), n = observed.cols();
  Eigen::MatrixXd kernel = (-sq_dist.array() / (2 * h * h)).exp().matrix();
  kernel.diagonal().setZero();  // a row never predicts itself
  const Eigen::MatrixXd y = observed.unaryExpr([](double v) { return IsKnown(v) ? v : 0.0; });
  const Eigen::VectorXd per_row = mask.rowwise().sum();
  const Eigen::RowVectorXd per_col = mask.colwise().sum();
  const double total = per_col.sum();
  const double grand = total > 0 ? y.sum() / total : 0.0;
  const auto column_means = [&](const Eigen::MatrixXd& v) {
    Eigen::RowVectorXd mean(n);
    for (Eigen::Index c = 0; c < n; ++c)
      mean(c) = per_col(c) > 0 ? v.col(c).sum() / per_col(c) : grand;
    return mean;
  };
  const Eigen::VectorXd level_denominator = per_row.array() + options_.level_lambda;
  // Initial levels: the row's mean gap to the column means.
  Eigen::VectorXd level = ((y.rowwise() - column_means(y)).cwiseProduct(mask))
                              .rowwise()
                              .sum()
                              .cwiseQuotient(level_denominator);
  const Eigen::MatrixXd weight = (kernel * mask).array() + options_.prior_weight;
  Eigen::MatrixXd g(m, n);
  for (int round = 0; round < options_.rounds; ++round) {
    const Eigen::MatrixXd z = (y.colwise() - level).cwiseProduct(mask);
    g = ((kernel * z).rowwise() + options_.prior_weight * column_means(z)).cwiseQuotient(weight);
    level = ((y - g).cwiseProduct(mask)).rowwise().sum().cwiseQuotient(level_denominator);
  }
  return g.colwise() + level;
}

double FeatureKernelCompleter::ChooseBandwidth(const Eigen::MatrixXd& observed,
                                               const Eigen::MatrixXd& sq_dist) const {
  TESSERA_CHECK(!options_.bandwidths.empty());
  const HoldOut split = SplitObserved(observed, options_.validation, options_.seed);
  if (split.held.empty()) return options_.bandwidths.back();
  const Eigen::MatrixXd mask = KnownMask(split.train);
  double best = options_.bandwidths.back(), best_error = INFINITY;
  for (const double h : options_.bandwidths) {
    const Eigen::MatrixXd fit = Fit(split.train, mask, sq_dist, h);
    double error = 0;
    for (const auto& [r, c] : split.held) error += std::abs(fit(r, c) - observed(r, c));
    if (error <= best_error) {  // ascending bandwidths: a tie keeps the wider
      best_error = error;
      best = h;
    }
  }
  return best;
}

Expected<Eigen::MatrixXd> FeatureKernelCompleter::Complete(const Eigen::MatrixXd& observed) const {
  return Fallback(options_.fallback, observed);
}

Expected<Eigen::MatrixXd> FeatureKernelCompleter::CompleteWith(
    const Eigen::MatrixXd& observed, const EncodedFeatures& features) const {
  TESSERA_CHECK(features.x.rows() == observed.rows() || features.empty());
  if (!KnownMask(observed).any()) return Fail("the matrix has no observed cell");
  if (features.empty()) return Complete(observed);
  std::vector<Eigen::Index> plain;  // rows that state no feature
  for (Eigen::Index r = 0; r < observed.rows(); ++r) {
    if (!features.HasAny(r)) plain.push_back(r);
  }
  if (plain.size() == static_cast<size_t>(observed.rows())) return Complete(observed);
  const Eigen::MatrixXd sq_dist = SquaredDistances(features, options_.missing_penalty);
  const double h = ChooseBandwidth(observed, sq_dist);
  Eigen::MatrixXd out = Fit(observed, KnownMask(observed), sq_dist, h);
  if (!plain.empty()) {
    Expected<Eigen::MatrixXd> other = Complete(observed);
    if (!other) return std::unexpected(other.error());
    for (Eigen::Index r : plain) out.row(r) = other->row(r);
  }
  for (Eigen::Index c = 0; c < observed.cols(); ++c) {
    for (Eigen::Index r = 0; r < observed.rows(); ++r) {
      if (IsKnown(observed(r, c))) out(r, c) = observed(r, c);
    }
  }
  return out;
}

}  // namespace tessera::predict
