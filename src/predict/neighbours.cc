#include "predict/neighbours.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "predict/baseline.h"

namespace tessera::predict {

Expected<Eigen::MatrixXd> NeighboursCompleter::Complete(const Eigen::MatrixXd& observed) const {
  const Eigen::MatrixXd mask = KnownMask(observed);
  if (mask.sum() == 0) return Fail("knn: the matrix has no observed cell");
  const Eigen::Index m = observed.rows(), n = observed.cols();
  const Biases biases = FitBiases(observed);
  const Eigen::MatrixXd x = (mask.array() > 0).select(observed, 0.0);
  const Eigen::MatrixXd x2 = x.array().square();
  // Over the columns s both rows observed: count, sum of (x_us - x_vs) and of its square.
  const Eigen::MatrixXd count = mask * mask.transpose();
  const Eigen::MatrixXd cross = x * mask.transpose();  // (u, v): sum_s x_us [v observed s]
  const Eigen::MatrixXd gap = cross - cross.transpose();
  const Eigen::MatrixXd sq =
      x2 * mask.transpose() + mask * x2.transpose() - 2.0 * x * x.transpose();

  Eigen::MatrixXd out = observed;
  std::vector<Eigen::Index> order(static_cast<size_t>(m));
  std::vector<double> dist(static_cast<size_t>(m));
  for (Eigen::Index u = 0; u < m; ++u) {
    bool any_missing = false;
    for (Eigen::Index i = 0; i < n && !any_missing; ++i) any_missing = mask(u, i) == 0;
    if (!any_missing) continue;
    for (Eigen::Index v = 0; v < m; ++v) {
      dist[static_cast<size_t>(v)] = (v == u || count(u, v) == 0)
                                         ? INFINITY
                                         : std::sqrt(std::max(sq(u, v), 0.0) / count(u, v));
    }
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
      return dist[static_cast<size_t>(a)] < dist[static_cast<size_t>(b)];
    });
    for (Eigen::Index i = 0; i < n; ++i) {
      if (mask(u, i) > 0) continue;
      double num = 0, den = 0;
      int found = 0;
      for (const Eigen::Index v : order) {
        const double d = dist[static_cast<size_t>(v)];
        if (found == options_.k || !std::isfinite(d)) break;
        if (mask(v, i) == 0) continue;
        const double w = 1.0 / ((options_.epsilon + d) * (options_.epsilon + d));
        num += w * (observed(v, i) + gap(u, v) / count(u, v));
        den += w;
        ++found;
      }
      out(u, i) = found > 0 ? num / den : biases.At(u, i);
    }
  }
  return out;
}

}  // namespace tessera::predict
