#include "predict/roofline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "predict/completer.h"

namespace tessera::predict {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Cell {
  double share, y;
};

// The level that best fits `cells` for knee `kappa`, and its squared error.
std::pair<double, double> LevelAt(const std::vector<Cell>& cells, double kappa) {
  double level = 0;
  for (const Cell& c : cells) level += c.y - std::min(kappa, c.share);
  level /= static_cast<double>(cells.size());
  double sse = 0;
  for (const Cell& c : cells) {
    const double e = level + std::min(kappa, c.share) - c.y;
    sse += e * e;
  }
  return {level, sse};
}

// [1, x]: the design matrix with an intercept.
Eigen::MatrixXd WithIntercept(const Eigen::MatrixXd& x) {
  Eigen::MatrixXd design(x.rows(), x.cols() + 1);
  design.col(0).setOnes();
  design.rightCols(x.cols()) = x;
  return design;
}

// Ridge regressions on one design for every lambda of a grid (intercept unpenalised). The
// factorisations and leave-one-out leverages do not depend on the target, so they are computed
// once; each Fit picks the lambda whose leave-one-out error on that target is least.
class RidgePath {
 public:
  RidgePath(const Eigen::MatrixXd& design, const std::vector<double>& ridge) : design_(design) {
    const Eigen::Index p = design_.cols();
    const Eigen::MatrixXd gram = design_.transpose() * design_;
    for (const double lambda : ridge) {
      Eigen::MatrixXd a = gram;
      a.diagonal().tail(p - 1).array() += lambda;
      a(0, 0) += 1e-9;  // a constant target column stays solvable
      ldlt_.emplace_back(a);
      const Eigen::MatrixXd inv_xt = ldlt_.back().solve(design_.transpose());  // p × n
      leverage_.push_back((design_.array() * inv_xt.transpose().array()).rowwise().sum());
    }
  }
  Eigen::VectorXd Fit(const Eigen::VectorXd& target) const {
    const Eigen::VectorXd xt = design_.transpose() * target;
    Eigen::VectorXd best;
    double best_error = INFINITY;
    for (size_t l = 0; l < ldlt_.size(); ++l) {
      Eigen::VectorXd beta = ldlt_[l].solve(xt);
      const Eigen::ArrayXd loo =
          (target - design_ * beta).array() / (1.0 - leverage_[l].array()).max(1e-6);
      const double error = loo.square().sum();
      if (error < best_error) {
        best_error = error;
        best = std::move(beta);
      }
    }
    return best;
  }

 private:
  Eigen::MatrixXd design_;
  std::vector<Eigen::LDLT<Eigen::MatrixXd>> ldlt_;
  std::vector<Eigen::VectorXd> leverage_;
};

// The columns of one GPU with a finite share, and the knees tried for it: a grid over the
// shares' range widened by a factor 2 each way.
struct KneeGrid {
  std::vector<Eigen::Index> cols;
  double low = INFINITY, high = -INFINITY;
  std::vector<double> knees;
};

// GPU g's grid; no columns (and no knees) when no column of it has a finite share.
KneeGrid GridOf(const EncodedFeatures& features, int g, int grid) {
  KneeGrid out;
  for (Eigen::Index c = 0; c < static_cast<Eigen::Index>(features.columns.size()); ++c) {
    const ComputeShare& s = features.columns[static_cast<size_t>(c)];
    if (s.gpu != g || !std::isfinite(s.log_share)) continue;
    out.cols.push_back(c);
    out.low = std::min(out.low, s.log_share);
    out.high = std::max(out.high, s.log_share);
  }
  if (out.cols.empty()) return out;
  out.low -= std::log(2.0);
  out.high += std::log(2.0);
  out.knees.resize(static_cast<size_t>(std::max(grid, 2)));
  for (size_t k = 0; k < out.knees.size(); ++k)
    out.knees[k] = out.low + (out.high - out.low) * static_cast<double>(k) /
                                 static_cast<double>(out.knees.size() - 1);
  return out;
}

// Each row's cells on this GPU and, with two shares or more, its interval of knees that fit
// within `slack` (NaN bounds: none). Returns the rows with an interval.
std::vector<Eigen::Index> KneeIntervals(const Eigen::MatrixXd& observed,
                                        const EncodedFeatures& features, const KneeGrid& grid,
                                        double slack, std::vector<std::vector<Cell>>& cells,
                                        std::vector<std::pair<double, double>>& interval) {
  const Eigen::Index m = observed.rows();
  const std::vector<double>& knees = grid.knees;
  for (std::vector<Cell>& row : cells) row.clear();
  interval.assign(static_cast<size_t>(m), {kNaN, kNaN});
  std::vector<Eigen::Index> bounded;
  for (Eigen::Index r = 0; r < m; ++r) {
    std::vector<Cell>& row = cells[static_cast<size_t>(r)];
    for (Eigen::Index c : grid.cols) {
      if (IsKnown(observed(r, c)))
        row.push_back({features.columns[static_cast<size_t>(c)].log_share, observed(r, c)});
    }
    const auto [lo_share, hi_share] = std::minmax_element(
        row.begin(), row.end(), [](const Cell& a, const Cell& b) { return a.share < b.share; });
    if (row.size() < 2 || lo_share->share == hi_share->share) continue;
    std::vector<double> sse(knees.size());
    for (size_t k = 0; k < knees.size(); ++k) sse[k] = LevelAt(row, knees[k]).second;
    const double limit =
        *std::min_element(sse.begin(), sse.end()) + static_cast<double>(row.size()) * slack * slack;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t k = 0; k < knees.size(); ++k) {
      if (sse[k] > limit) continue;
      lo = std::min(lo, knees[k]);
      hi = std::max(hi, knees[k]);
    }
    // A knee at the grid's end fits as well anywhere beyond it: the interval is open there.
    if (lo == knees.front()) lo = -INFINITY;
    if (hi == knees.back()) hi = INFINITY;
    interval[static_cast<size_t>(r)] = {lo, hi};
    bounded.push_back(r);
  }
  return bounded;
}

// The knee every row's features (`x`, one row per row) predict, fitted to the bounded rows'
// intervals; their mean midpoint when too few rows or no features.
Eigen::VectorXd PredictKnees(const Eigen::MatrixXd& x, const std::vector<Eigen::Index>& bounded,
                             const std::vector<std::pair<double, double>>& interval,
                             const KneeGrid& grid, const RooflineOptions& options) {
  Eigen::VectorXd knee(x.rows());
  Eigen::VectorXd target(static_cast<Eigen::Index>(bounded.size()));
  for (size_t i = 0; i < bounded.size(); ++i) {
    const auto [lo, hi] = interval[static_cast<size_t>(bounded[i])];
    target(static_cast<Eigen::Index>(i)) =
        (std::clamp(lo, grid.low, grid.high) + std::clamp(hi, grid.low, grid.high)) / 2;
  }
  if (static_cast<int>(bounded.size()) < options.min_rows || x.cols() == 0) {
    knee.setConstant(target.mean());
    return knee;
  }
  Eigen::MatrixXd xb(static_cast<Eigen::Index>(bounded.size()), x.cols());
  for (size_t i = 0; i < bounded.size(); ++i)
    xb.row(static_cast<Eigen::Index>(i)) = x.row(bounded[i]);
  // Censored regression: a row's target is the point of its interval nearest the current
  // fit (a flat row only says its knee is at most the smallest share), refitted until it
  // settles. Starts from the midpoints; lambda is chosen anew each round.
  const Eigen::MatrixXd design = WithIntercept(xb);
  const RidgePath ridge(design, options.ridge);
  Eigen::VectorXd beta;
  for (int round = 0; round < options.censored_rounds; ++round) {
    beta = ridge.Fit(target);
    const Eigen::VectorXd fitted = design * beta;
    double moved = 0;
    for (size_t i = 0; i < bounded.size(); ++i) {
      const auto [lo, hi] = interval[static_cast<size_t>(bounded[i])];
      const double t = std::clamp(fitted(static_cast<Eigen::Index>(i)), lo, hi);
      moved = std::max(moved, std::abs(t - target(static_cast<Eigen::Index>(i))));
      target(static_cast<Eigen::Index>(i)) = t;
    }
    if (moved < 1e-6) break;
  }
  knee = (x * beta.tail(x.cols())).array() + beta(0);
  return knee;
}

// Fills each row's cells of this GPU from its level at its knee (clamped to the grid and to
// its interval).
void FillRows(const EncodedFeatures& features, const KneeGrid& grid,
              const std::vector<std::vector<Cell>>& cells,
              const std::vector<std::pair<double, double>>& interval, const Eigen::VectorXd& knee,
              Eigen::MatrixXd& out) {
  for (Eigen::Index r = 0; r < out.rows(); ++r) {
    const std::vector<Cell>& row = cells[static_cast<size_t>(r)];
    if (row.empty()) continue;
    double kappa = std::clamp(knee(r), grid.low, grid.high);
    if (const auto [lo, hi] = interval[static_cast<size_t>(r)]; !std::isnan(lo))
      kappa = std::clamp(kappa, lo, hi);
    const double level = LevelAt(row, kappa).first;
    for (Eigen::Index c : grid.cols)
      out(r, c) = level + std::min(kappa, features.columns[static_cast<size_t>(c)].log_share);
  }
}

}  // namespace

Eigen::MatrixXd RooflineComplete(const Eigen::MatrixXd& observed, const EncodedFeatures& features,
                                 const RooflineOptions& options) {
  const Eigen::Index m = observed.rows(), n = observed.cols();
  Eigen::MatrixXd out = Eigen::MatrixXd::Constant(m, n, kNaN);
  if (static_cast<Eigen::Index>(features.columns.size()) != n) return out;
  // Features with NaN (not stated) at 0: the standardised mean, or "not this category".
  Eigen::MatrixXd x = features.x.rows() == m ? features.x : Eigen::MatrixXd(m, 0);
  x = x.unaryExpr([](double v) { return std::isnan(v) ? 0.0 : v; });
  int gpus = 0;
  for (const ComputeShare& s : features.columns) gpus = std::max(gpus, s.gpu + 1);
  std::vector<std::vector<Cell>> cells(static_cast<size_t>(m));
  std::vector<std::pair<double, double>> interval;
  for (int g = 0; g < gpus; ++g) {
    const KneeGrid grid = GridOf(features, g, options.grid);
    if (grid.cols.empty()) continue;
    const std::vector<Eigen::Index> bounded =
        KneeIntervals(observed, features, grid, options.slack, cells, interval);
    if (bounded.empty()) continue;  // nothing shows this GPU's knees
    const Eigen::VectorXd knee = PredictKnees(x, bounded, interval, grid, options);
    FillRows(features, grid, cells, interval, knee, out);
  }
  return out;
}

}  // namespace tessera::predict
