#include "predict/hybrid.h"

#include <cmath>

#include "base/rng.h"
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
  std::vector<std::pair<Eigen::Index, Eigen::Index>> known;
  std::vector<int> kept(static_cast<size_t>(observed.rows()), 0);
  for (Eigen::Index c = 0; c < observed.cols(); ++c) {
    for (Eigen::Index r = 0; r < observed.rows(); ++r) {
      if (IsKnown(observed(r, c))) {
        known.emplace_back(r, c);
        ++kept[static_cast<size_t>(r)];
      }
    }
  }
  Rng rng(options_.seed);
  rng.Shuffle(known);
  const size_t target = static_cast<size_t>(std::llround(options_.validation * known.size()));
  Eigen::MatrixXd train = observed;
  std::vector<std::pair<Eigen::Index, Eigen::Index>> held;
  for (const auto& [r, c] : known) {
    if (held.size() == target) break;
    if (kept[static_cast<size_t>(r)] <= 1) continue;  // every row keeps one cell
    --kept[static_cast<size_t>(r)];
    train(r, c) = kMissing;
    held.emplace_back(r, c);
  }
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
