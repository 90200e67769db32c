#include "predict/hybrid.h"

#include <cmath>

#include "predict/imputer.h"
#include "predict/matrix.h"
#include "predict/neighbours.h"

namespace tessera::predict {
namespace {

Eigen::MatrixXd Blend(const Eigen::MatrixXd& regression, const Eigen::MatrixXd& neighbours,
                      double delta) {
  return regression + (neighbours - regression).cwiseMax(-delta).cwiseMin(delta);
}

}  // namespace

Expected<double> HybridCompleter::ChooseDelta(const Eigen::MatrixXd& observed) const {
  TESSERA_CHECK(!options_.deltas.empty());
  const HoldOut split = SplitObserved(observed, options_.validation, options_.seed);
  const Eigen::MatrixXd& train = split.train;
  const auto& held = split.held;
  if (held.empty()) return options_.deltas.front();
  Expected<Eigen::MatrixXd> regression = ImputerCompleter().Complete(train);
  if (!regression) return std::unexpected(regression.error());
  Expected<Eigen::MatrixXd> neighbours = NeighboursCompleter().Complete(train);
  if (!neighbours) return std::unexpected(neighbours.error());
  double best = options_.deltas.front(), best_error = INFINITY;
  for (const double delta : options_.deltas) {
    double error = 0;
    for (const auto& [r, c] : held) {
      const double diff = std::clamp((*neighbours)(r, c) - (*regression)(r, c), -delta, delta);
      error += std::abs((*regression)(r, c) + diff - observed(r, c));
    }
    if (error < best_error) {  // strict: ties keep the smaller radius
      best_error = error;
      best = delta;
    }
  }
  return best;
}

Expected<Eigen::MatrixXd> HybridCompleter::Complete(const Eigen::MatrixXd& observed) const {
  Expected<double> delta = ChooseDelta(observed);
  if (!delta) return std::unexpected(delta.error());
  Expected<Eigen::MatrixXd> regression = ImputerCompleter().Complete(observed);
  if (!regression) return std::unexpected(regression.error());
  Expected<Eigen::MatrixXd> neighbours = NeighboursCompleter().Complete(observed);
  if (!neighbours) return std::unexpected(neighbours.error());
  return Blend(*regression, *neighbours, *delta);
}

}  // namespace tessera::predict
