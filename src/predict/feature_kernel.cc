#include "predict/feature_kernel.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

FeatureKernelCompleter::Neighbours FeatureKernelCompleter::Nearest(
    const Eigen::MatrixXd& sq_dist) const {
  const Eigen::Index m = sq_dist.rows();
  const Eigen::Index k = std::min<Eigen::Index>(options_.neighbours, std::max<Eigen::Index>(m - 1, 0));
  Neighbours nb{Eigen::MatrixXi(m, k), Eigen::MatrixXd(m, k)};
  std::vector<Eigen::Index> order;
  for (Eigen::Index a = 0; a < m; ++a) {
    order.clear();
    for (Eigen::Index b = 0; b < m; ++b) {
      if (b != a) order.push_back(b);  // a row never predicts itself
    }
    const auto closer = [&](Eigen::Index x, Eigen::Index y) {
      return sq_dist(a, x) < sq_dist(a, y) || (sq_dist(a, x) == sq_dist(a, y) && x < y);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), closer);
    for (Eigen::Index j = 0; j < k; ++j) {
      nb.index(a, j) = static_cast<int>(order[static_cast<size_t>(j)]);
      nb.sq_dist(a, j) = sq_dist(a, order[static_cast<size_t>(j)]);
    }
  }
  return nb;
}

namespace {

// out(a, :) = Σ_j w(a, j) · v(index(a, j), :): the kernel product over each row's neighbours,
// in blocks of 64 columns so that the rows it gathers stay in the cache. With many neighbours it
// runs in single precision (a weighted mean of log values needs no more, and it halves the
// work); with few, converting would cost more than it saves. `vf` and `sum` are scratch.
template <typename T, typename M>
void Accumulate(const Eigen::MatrixXi& index, const Eigen::MatrixXd& w, const M& v, M& sum) {
  constexpr Eigen::Index kBlock = 64;
  sum.setZero(v.rows(), v.cols());
  const Eigen::Index n = v.cols();
  for (Eigen::Index c0 = 0; c0 < n; c0 += kBlock) {
    const Eigen::Index width = std::min(kBlock, n - c0);
    for (Eigen::Index a = 0; a < index.rows(); ++a) {
      T* row = sum.data() + a * n + c0;
      for (Eigen::Index j = 0; j < index.cols(); ++j) {
        const T weight = static_cast<T>(w(a, j));
        const T* from = v.data() + static_cast<Eigen::Index>(index(a, j)) * n + c0;
        for (Eigen::Index c = 0; c < width; ++c) row[c] += weight * from[c];
      }
    }
  }
}

void Smooth(const Eigen::MatrixXi& index, const Eigen::MatrixXd& w,
            const FeatureKernelCompleter::RowMatrix& v, FeatureKernelCompleter::RowMatrix& out,
            FeatureKernelCompleter::RowMatrixF& vf, FeatureKernelCompleter::RowMatrixF& sum) {
  if (index.cols() < 16) {
    Accumulate<double>(index, w, v, out);
    return;
  }
  vf = v.cast<float>();
  Accumulate<float>(index, w, vf, sum);
  out = sum.cast<double>();
}

}  // namespace

void FeatureKernelCompleter::Fit(const Eigen::MatrixXd& observed, const Neighbours& nb, double h,
                                 int rounds, Workspace& ws) const {
  const Eigen::Index m = observed.rows(), n = observed.cols();
  const Eigen::MatrixXd kernel = (-nb.sq_dist.array() / (2 * h * h)).exp().matrix();
  ws.mask.resize(m, n);
  ws.y.resize(m, n);
  for (Eigen::Index r = 0; r < m; ++r) {
    for (Eigen::Index c = 0; c < n; ++c) {
      const bool known = IsKnown(observed(r, c));
      ws.mask(r, c) = known ? 1.0 : 0.0;
      ws.y(r, c) = known ? observed(r, c) : 0.0;
    }
  }
  const RowMatrix& mask = ws.mask;
  const RowMatrix& y = ws.y;
  const Eigen::VectorXd per_row = mask.rowwise().sum();
  const Eigen::RowVectorXd per_col = mask.colwise().sum();
  const double total = per_col.sum();
  const double grand = total > 0 ? y.sum() / total : 0.0;
  const auto column_means = [&](const RowMatrix& v) {
    Eigen::RowVectorXd mean = v.colwise().sum();
    for (Eigen::Index c = 0; c < n; ++c) mean(c) = per_col(c) > 0 ? mean(c) / per_col(c) : grand;
    return mean;
  };
  const Eigen::VectorXd level_denominator = per_row.array() + options_.level_lambda;
  // Initial levels: the row's mean gap to the column means.
  ws.z = (y.rowwise() - column_means(y)).cwiseProduct(mask);
  Eigen::VectorXd level = ws.z.rowwise().sum().cwiseQuotient(level_denominator);
  Smooth(nb.index, kernel, mask, ws.weight, ws.vf, ws.sum);
  ws.weight.array() += options_.prior_weight;
  for (int round = 0; round < rounds; ++round) {
    ws.z = (y.colwise() - level).cwiseProduct(mask);
    Smooth(nb.index, kernel, ws.z, ws.g, ws.vf, ws.sum);
    ws.g = (ws.g.rowwise() + options_.prior_weight * column_means(ws.z)).cwiseQuotient(ws.weight);
    ws.z = (y - ws.g).cwiseProduct(mask);
    level = ws.z.rowwise().sum().cwiseQuotient(level_denominator);
  }
  ws.g.colwise() += level;
}

FeatureKernelCompleter::Metric FeatureKernelCompleter::LearnMetric(
    const Eigen::MatrixXd& observed, const EncodedFeatures& features) const {
  Workspace ws;
  return LearnMetric(observed, features, ws);
}

FeatureKernelCompleter::Metric FeatureKernelCompleter::LearnMetric(
    const Eigen::MatrixXd& observed, const EncodedFeatures& features, Workspace& ws) const {
  TESSERA_CHECK(!options_.bandwidths.empty());
  const std::vector<double> equal(features.names.size(), 1.0);
  ws.split = SplitObserved(observed, options_.validation, options_.seed);
  ws.split_fraction = options_.validation;
  ws.held_fit.resize(0, 0);
  const HoldOut& split = ws.split;
  if (split.held.empty()) {
    return {equal, options_.bandwidths.back(), INFINITY,
            Nearest(SquaredDistances(features, options_.missing_penalty, equal))};
  }
  // A large matrix is validated on every other bandwidth, with one backfitting round, and keeps
  // equal feature weights.
  const bool large = observed.size() > kLargeCells;
  const int rounds = large ? 1 : options_.rounds;
  // The bandwidth with the least validation error for the given weights, trying every
  // `stride`-th of the grid.
  const auto validate = [&](const std::vector<double>& weights, size_t stride) {
    Metric m{weights, options_.bandwidths.back(), INFINITY,
             Nearest(SquaredDistances(features, options_.missing_penalty, weights))};
    for (size_t i = 0; i < options_.bandwidths.size(); i += stride) {
      const double h = options_.bandwidths[i];
      Fit(split.train, m.neighbours, h, rounds, ws);
      double error = 0;
      for (const auto& [r, c] : split.held) error += std::abs(ws.g(r, c) - observed(r, c));
      if (error <= m.error) {  // ascending bandwidths: a tie keeps the wider
        m.error = error;
        m.bandwidth = h;
        ws.held_fit = ws.g;  // the last call's best is the returned metric's: LearnBlend reuses it
      }
    }
    return m;
  };
  if (large || observed.rows() < options_.weights_min_rows) {
    return validate(equal, large ? 2 : 1);
  }
  // The weights are searched on every third bandwidth, the bandwidth then on the whole grid.
  Metric best = validate(equal, 3);
  for (int pass = 0; pass < options_.weight_passes; ++pass) {
    for (size_t g = 0; g < best.weights.size(); ++g) {
      for (const double w : options_.feature_weights) {
        if (w == best.weights[g]) continue;
        std::vector<double> weights = best.weights;
        weights[g] = w;
        if (std::all_of(weights.begin(), weights.end(), [](double x) { return x == 0; })) continue;
        Metric m = validate(weights, 3);
        if (m.error < best.error - 1e-12) best = std::move(m);  // strictly better only
      }
    }
  }
  best = validate(best.weights, 1);
  return best;
}

namespace {

// A row's bucket for the blend: its measured cells, 1, 2 or 3 and more (index 0..2); -1: none.
int Bucket(const Eigen::MatrixXd& observed, Eigen::Index r) {
  Eigen::Index known = 0;
  for (Eigen::Index c = 0; c < observed.cols(); ++c) known += IsKnown(observed(r, c));
  return known == 0 ? -1 : static_cast<int>(std::min<Eigen::Index>(known, 3) - 1);
}

// (1 - w) · kernel + w · roofline where the roofline has a value.
double Mix(double kernel, double roofline, double w) {
  return std::isnan(roofline) ? kernel : (1 - w) * kernel + w * roofline;
}

}  // namespace

FeatureKernelCompleter::Blend FeatureKernelCompleter::LearnBlend(
    const Eigen::MatrixXd& observed, const EncodedFeatures& features, const Metric& metric,
    Workspace& ws) const {
  Blend blend{};
  if (features.columns.size() != static_cast<size_t>(observed.cols()) ||
      std::none_of(features.columns.begin(), features.columns.end(),
                   [](const ComputeShare& s) { return s.gpu >= 0; })) {
    return blend;
  }
  // The roofline learns knees from the rows with two cells or more; a split that took all their
  // second cells would validate a roofline with nothing to learn from. So at most half of the
  // cells beyond each row's first are held out.
  double known = 0, beyond_first = 0;
  for (Eigen::Index r = 0; r < observed.rows(); ++r) {
    double in_row = 0;
    for (Eigen::Index c = 0; c < observed.cols(); ++c) in_row += IsKnown(observed(r, c));
    known += in_row;
    beyond_first += std::max(in_row - 1, 0.0);
  }
  const double fraction = std::min(options_.validation, 0.5 * beyond_first / std::max(known, 1.0));
  // The same split as LearnMetric's: its fit at the chosen bandwidth is already there.
  const bool reuse = fraction == ws.split_fraction && ws.held_fit.size() == observed.size();
  HoldOut own;
  if (!reuse) own = SplitObserved(observed, fraction, options_.seed);
  const HoldOut& split = reuse ? ws.split : own;
  if (split.held.empty()) return blend;
  if (!reuse) {
    // As in LearnMetric: a large matrix is validated with one backfitting round.
    Fit(split.train, metric.neighbours, metric.bandwidth,
        observed.size() > kLargeCells ? 1 : options_.rounds, ws);
    ws.held_fit = ws.g;
  }
  const RowMatrix& fit = ws.held_fit;
  const Eigen::MatrixXd roofline = RooflineComplete(split.train, features, options_.roofline);
  std::vector<int> bucket(static_cast<size_t>(observed.rows()));
  for (Eigen::Index r = 0; r < observed.rows(); ++r) bucket[static_cast<size_t>(r)] = Bucket(split.train, r);
  const size_t w_count = options_.roofline_blend.size();
  std::array<std::vector<double>, 3> error;
  error.fill(std::vector<double>(w_count, 0.0));
  std::array<bool, 3> seen{};
  for (const auto& [r, c] : split.held) {
    const int b = bucket[static_cast<size_t>(r)];
    if (b < 0 || std::isnan(roofline(r, c))) continue;
    seen[static_cast<size_t>(b)] = true;
    for (size_t i = 0; i < w_count; ++i) {
      error[static_cast<size_t>(b)][i] +=
          std::abs(Mix(fit(r, c), roofline(r, c), options_.roofline_blend[i]) - observed(r, c));
    }
  }
  for (size_t b = 0; b < 3; ++b) {
    if (!seen[b]) continue;
    size_t best = 0;
    for (size_t i = 1; i < w_count; ++i) {
      if (error[b][i] < error[b][best] - 1e-12) best = i;
    }
    blend[b] = options_.roofline_blend[best];
  }
  // A bucket without validation cells takes its nearest seen neighbour's weight (fewer first).
  for (size_t b = 0; b < 3; ++b) {
    if (seen[b]) continue;
    for (size_t d = 1; d < 3; ++d) {
      if (b >= d && seen[b - d]) { blend[b] = blend[b - d]; break; }
      if (b + d < 3 && seen[b + d]) { blend[b] = blend[b + d]; break; }
    }
  }
  return blend;
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
  Workspace ws;
  const Metric metric = LearnMetric(observed, features, ws);
  const Blend blend = LearnBlend(observed, features, metric, ws);
  Fit(observed, metric.neighbours, metric.bandwidth, options_.rounds, ws);
  Eigen::MatrixXd out = ws.g;
  if (std::any_of(blend.begin(), blend.end(), [](double w) { return w > 0; })) {
    const Eigen::MatrixXd roofline = RooflineComplete(observed, features, options_.roofline);
    for (Eigen::Index r = 0; r < observed.rows(); ++r) {
      const int b = Bucket(observed, r);
      if (b < 0) continue;
      for (Eigen::Index c = 0; c < observed.cols(); ++c)
        out(r, c) = Mix(out(r, c), roofline(r, c), blend[static_cast<size_t>(b)]);
    }
  }
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
