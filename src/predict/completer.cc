#include "predict/completer.h"

#include <cmath>

#include "base/rng.h"
#include "predict/matrix.h"

namespace tessera::predict {

Eigen::MatrixXd KnownMask(const Eigen::MatrixXd& observed) {
  return observed.unaryExpr([](double v) { return IsKnown(v) ? 1.0 : 0.0; });
}

HoldOut SplitObserved(const Eigen::MatrixXd& observed, double fraction, uint64_t seed) {
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
  Rng rng(seed);
  rng.Shuffle(known);
  const size_t target =
      static_cast<size_t>(std::llround(fraction * static_cast<double>(known.size())));
  HoldOut out{observed, {}};
  for (const auto& [r, c] : known) {
    if (out.held.size() == target) break;
    if (kept[static_cast<size_t>(r)] <= 1) continue;  // every row keeps one cell
    --kept[static_cast<size_t>(r)];
    out.train(r, c) = kMissing;
    out.held.emplace_back(r, c);
  }
  return out;
}

}  // namespace tessera::predict
