#include "predict/uncertainty.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.h"
#include "base/stats.h"
#include "predict/baseline.h"
#include "predict/matrix.h"

namespace tessera::predict {
namespace {

int Bucket(int known) { return std::clamp(known, 1, 4) - 1; }
constexpr int kThinBucket = 8;  // fewer held cells than this: the bucket borrows

struct Residual {
  double error;         // log prediction - log truth
  int known;            // cells the row kept in the training matrix
  double disagreement;  // |method - bias model|
};

// s_k for a given β: the RMS of error / (1 + β d) per bucket, pooled where a bucket is thin.
std::array<double, 4> FitScales(const std::vector<Residual>& rs, double beta) {
  std::array<double, 4> sum{}, count{};
  double pooled = 0;
  for (const Residual& r : rs) {
    const double e = r.error / (1 + beta * r.disagreement);
    sum[Bucket(r.known)] += e * e;
    count[Bucket(r.known)] += 1;
    pooled += e * e;
  }
  pooled = std::sqrt(pooled / static_cast<double>(rs.size()));
  std::array<double, 4> scale{};
  for (size_t k = 0; k < 4; ++k)
    scale[k] = count[k] >= kThinBucket ? std::sqrt(sum[k] / count[k]) : pooled;
  for (double& s : scale) s = std::max(s, 1e-3);
  return scale;
}

// Completes a hold-out's training matrix and records the error of each held cell.
Expected<void> ScoreHoldOut(const Completer& method, const Eigen::MatrixXd& observed,
                            const EncodedFeatures& features, const HoldOut& split,
                            std::vector<Residual>& residuals) {
  Expected<Eigen::MatrixXd> completed = method.CompleteWith(split.train, features);
  if (!completed) return std::unexpected(completed.error());
  const Biases bias = FitBiases(split.train);
  const Eigen::VectorXd kept = KnownMask(split.train).rowwise().sum();
  for (const auto& [r, c] : split.held) {
    residuals.push_back({(*completed)(r, c) - observed(r, c), static_cast<int>(kept(r)),
                         std::abs((*completed)(r, c) - bias.At(r, c))});
  }
  return {};
}

// Fills bucket k where the random hold-outs left it thin: thins rows that have more than k
// cells to exactly k, at most a quarter of them (up to 16) a pass, up to four passes, until the
// bucket holds enough.
Expected<void> FillThinBucket(const Completer& method, const Eigen::MatrixXd& observed,
                              const EncodedFeatures& features, const CalibrationOptions& options,
                              int k, std::vector<Residual>& residuals) {
  const auto have = [&] {
    int n = 0;
    for (const Residual& r : residuals) n += Bucket(r.known) == Bucket(k);
    return n;
  };
  Rng rng(options.seed + 100 + static_cast<uint64_t>(k));
  std::vector<Eigen::Index> rows;
  for (Eigen::Index r = 0; r < observed.rows(); ++r) {
    int known = 0;
    for (Eigen::Index c = 0; c < observed.cols(); ++c) known += IsKnown(observed(r, c));
    if (known > k) rows.push_back(r);
  }
  const size_t per_pass = std::clamp<size_t>(rows.size() / 4, 1, 16);
  for (int pass = 0; pass < 4 && !rows.empty() && have() < kThinBucket; ++pass) {
    rng.Shuffle(rows);
    HoldOut thinned{observed, {}};
    for (size_t i = 0; i < per_pass; ++i) {
      std::vector<Eigen::Index> cols;
      for (Eigen::Index c = 0; c < observed.cols(); ++c) {
        if (IsKnown(observed(rows[i], c))) cols.push_back(c);
      }
      rng.Shuffle(cols);
      for (size_t j = static_cast<size_t>(k); j < cols.size(); ++j) {
        thinned.train(rows[i], cols[j]) = kMissing;
        thinned.held.emplace_back(rows[i], cols[j]);
      }
    }
    if (Expected<void> ok = ScoreHoldOut(method, observed, features, thinned, residuals); !ok) {
      return std::unexpected(ok.error());  // kept: k
    }
  }
  return {};
}

// Fits `model` to the residuals: the β (and its per-bucket scales) of least Gaussian negative
// log-likelihood, then z90, the 90th percentile of |error| / σ.
void FitToResiduals(const std::vector<Residual>& residuals, UncertaintyModel& model) {
  model.held_cells = static_cast<int>(residuals.size());
  double best_nll = INFINITY;
  for (const double beta : {0.0, 0.5, 1.0, 2.0}) {
    const std::array<double, 4> scale = FitScales(residuals, beta);
    double nll = 0;
    for (const Residual& r : residuals) {
      const double sigma = scale[Bucket(r.known)] * (1 + beta * r.disagreement);
      nll += std::log(sigma) + 0.5 * (r.error / sigma) * (r.error / sigma);
    }
    if (nll < best_nll) {
      best_nll = nll;
      model.scale = scale;
      model.disagreement = beta;
    }
  }
  std::vector<double> normalised;
  for (const Residual& r : residuals)
    normalised.push_back(std::abs(r.error) / model.Completed(r.known, r.disagreement));
  model.z90 = Quantile(std::move(normalised), 0.9);
}

}  // namespace

double UncertaintyModel::Completed(int known, double d) const {
  return scale[Bucket(known)] * (1 + disagreement * d);
}

double UncertaintyModel::Measured(double mean, double variance, int count) const {
  if (count < 2 || !(mean > 0)) return measured_floor;
  const double sd_log = std::sqrt(variance) / mean;
  return std::max(measured_floor, sd_log * std::sqrt(1 + 1.0 / count));
}

double UncertaintyModel::Z(double coverage) const {
  // Φ⁻¹((1 + p) / 2) by bisection on erf; the ratio to the 90 % value rescales z90.
  const double target = std::clamp(coverage, 1e-6, 1 - 1e-9);
  double lo = 0, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (std::erf(mid / std::sqrt(2.0)) < target ? lo : hi) = mid;
  }
  return z90 * (0.5 * (lo + hi)) / 1.6448536269514722;
}

Expected<UncertaintyModel> Calibrate(const Completer& method, const Eigen::MatrixXd& observed,
                                     const EncodedFeatures& features,
                                     const CalibrationOptions& options) {
  std::vector<Residual> residuals;
  for (int s = 0; s < options.splits; ++s) {
    const HoldOut split =
        SplitObserved(observed, options.fraction, options.seed + static_cast<uint64_t>(s));
    if (split.held.empty()) continue;
    if (Expected<void> ok = ScoreHoldOut(method, observed, features, split, residuals); !ok) {
      return std::unexpected(ok.error());
    }
  }
  // A bucket the random hold-outs left thin (dense rows rarely lose all but one or two cells):
  // thin rows that have more to exactly k cells, as a new application would be. One pass thins
  // at most a quarter of those rows (up to 16): thinning them all would take away what a method
  // learns a row's shape from, and make the sample worse than the matrix it calibrates. Up to
  // four passes, until the bucket holds enough.
  for (int k = 1; k <= 3; ++k) {
    if (Expected<void> ok = FillThinBucket(method, observed, features, options, k, residuals);
        !ok) {
      return std::unexpected(ok.error());
    }
  }
  UncertaintyModel model;
  if (residuals.size() < 8) return model;
  FitToResiduals(residuals, model);
  return model;
}

Eigen::MatrixXd CellSigmas(const UncertaintyModel& model, const Eigen::MatrixXd& observed,
                           const Eigen::MatrixXd& completed) {
  const Eigen::MatrixXd mask = KnownMask(observed);
  const Eigen::VectorXd kept = mask.rowwise().sum();
  const bool any = mask.any();
  const Biases bias = any ? FitBiases(observed) : Biases{};
  Eigen::MatrixXd sigma(observed.rows(), observed.cols());
  for (Eigen::Index c = 0; c < observed.cols(); ++c) {
    for (Eigen::Index r = 0; r < observed.rows(); ++r) {
      if (mask(r, c) > 0) {
        sigma(r, c) = model.measured_floor;
        continue;
      }
      const double d = any ? std::abs(completed(r, c) - bias.At(r, c)) : 0.0;
      sigma(r, c) = model.Completed(static_cast<int>(kept(r)), d);
    }
  }
  return sigma;
}

}  // namespace tessera::predict
