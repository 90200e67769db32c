#include "predict/svd.h"

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "predict/baseline.h"
#include "predict/matrix.h"

namespace tessera::predict {
namespace {

// Below this smaller dimension a full BDCSVD is cheap and exact.
constexpr Eigen::Index kExactSvdLimit = 64;
constexpr int kOversample = 8;
constexpr int kPowerIterations = 2;

int EnergyRank(const Eigen::VectorXd& singular_values, double total_energy, double energy,
               int cap) {
  if (total_energy <= 0) return 1;
  double acc = 0;
  for (Eigen::Index k = 0; k < singular_values.size(); ++k) {
    acc += singular_values(k) * singular_values(k);
    if (acc >= energy * total_energy) return std::min(static_cast<int>(k) + 1, cap);
  }
  return std::min(static_cast<int>(singular_values.size()), cap);
}

}  // namespace

TruncatedSvd ComputeTruncatedSvd(const Eigen::MatrixXd& a, int k) {
  const Eigen::Index small = std::min(a.rows(), a.cols());
  k = static_cast<int>(std::clamp<Eigen::Index>(k, 1, small));
  TruncatedSvd out;
  if (small <= kExactSvdLimit || k + kOversample >= small) {
    Eigen::BDCSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
    out.u = svd.matrixU().leftCols(k);
    out.s = svd.singularValues().head(k);
    out.v = svd.matrixV().leftCols(k);
    return out;
  }
  // Randomised range finder with a fixed-seed Gaussian-free test matrix: a deterministic
  // pseudo-random sign pattern keeps completions reproducible without threading an Rng here.
  const Eigen::Index l = k + kOversample;
  Eigen::MatrixXd omega(a.cols(), l);
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (Eigen::Index j = 0; j < l; ++j) {
    for (Eigen::Index i = 0; i < a.cols(); ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      omega(i, j) = (state & 1) ? 1.0 : -1.0;
    }
  }
  Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(a * omega).householderQ() *
                      Eigen::MatrixXd::Identity(a.rows(), l);
  for (int it = 0; it < kPowerIterations; ++it) {
    Eigen::MatrixXd z = Eigen::HouseholderQR<Eigen::MatrixXd>(a.transpose() * q).householderQ() *
                        Eigen::MatrixXd::Identity(a.cols(), l);
    q = Eigen::HouseholderQR<Eigen::MatrixXd>(a * z).householderQ() *
        Eigen::MatrixXd::Identity(a.rows(), l);
  }
  const Eigen::MatrixXd b = q.transpose() * a;  // l x n
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(b, Eigen::ComputeThinU | Eigen::ComputeThinV);
  out.u = q * svd.matrixU().leftCols(k);
  out.s = svd.singularValues().head(k);
  out.v = svd.matrixV().leftCols(k);
  return out;
}

int SvdCompleter::RankCap(const Eigen::MatrixXd& observed) const {
  const int half = static_cast<int>(std::min(observed.rows(), observed.cols()) / 2);
  return std::max(1, std::min(options_.max_rank, half));
}

int SvdCompleter::ChooseRank(const Eigen::MatrixXd& observed) const {
  if (options_.rank > 0) return options_.rank;
  const int cap = RankCap(observed);
  if (cap == 1) return 1;
  if (observed.size() > options_.validation_cells) {
    const Eigen::MatrixXd mask = KnownMask(observed);
    const Biases biases = FitBiases(observed);
    Eigen::MatrixXd residual = Eigen::MatrixXd::Zero(observed.rows(), observed.cols());
    for (Eigen::Index c = 0; c < observed.cols(); ++c) {
      for (Eigen::Index r = 0; r < observed.rows(); ++r) {
        if (mask(r, c) > 0) residual(r, c) = observed(r, c) - biases.At(r, c);
      }
    }
    const TruncatedSvd svd = ComputeTruncatedSvd(residual, cap + 1);
    return EnergyRank(svd.s, residual.squaredNorm(), options_.energy, cap);
  }
  // Internal validation on observed cells only.
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
    if (kept[static_cast<size_t>(r)] <= 1) continue;
    --kept[static_cast<size_t>(r)];
    train(r, c) = kMissing;
    held.emplace_back(r, c);
  }
  if (held.empty()) return 1;
  int best = 1;
  double best_error = INFINITY;
  for (int k = 1; k <= cap; ++k) {
    const Eigen::MatrixXd completed = CompleteWithRank(train, k);
    double error = 0;
    for (const auto& [r, c] : held) error += std::abs(completed(r, c) - observed(r, c));
    if (error < best_error) {
      best_error = error;
      best = k;
    }
  }
  return best;
}

Expected<Eigen::MatrixXd> SvdCompleter::Complete(const Eigen::MatrixXd& observed) const {
  if (!observed.unaryExpr([](double v) { return IsKnown(v); }).any()) {
    return Fail("svd: the matrix has no observed cell");
  }
  return CompleteWithRank(observed, ChooseRank(observed));
}

Eigen::MatrixXd SvdCompleter::CompleteWithRank(const Eigen::MatrixXd& observed, int k) const {
  const Eigen::MatrixXd mask = KnownMask(observed);
  const Eigen::Index m = observed.rows(), n = observed.cols();
  const Biases biases = FitBiases(observed);
  Eigen::MatrixXd base(m, n);
  for (Eigen::Index c = 0; c < n; ++c) {
    for (Eigen::Index r = 0; r < m; ++r) base(r, c) = biases.At(r, c);
  }
  // Mean-filled residuals: observed - bias model, 0 (the fitted mean) where missing.
  Eigen::MatrixXd known_residual = (mask.array() > 0).select(observed - base, 0.0);
  if (std::min(m, n) < 2) return (mask.array() > 0).select(observed, base);

  // Hard-impute: refit the rank-k approximation with the missing cells set to its own values.
  Eigen::MatrixXd filled = known_residual;
  TruncatedSvd svd;
  Eigen::MatrixXd low_rank;
  for (int round = 0; round < std::max(1, options_.rounds); ++round) {
    svd = ComputeTruncatedSvd(filled, k);
    low_rank = svd.u * svd.s.asDiagonal() * svd.v.transpose();
    Eigen::MatrixXd next = (mask.array() > 0).select(known_residual, low_rank);
    const double change = (next - filled).norm() / std::max(filled.norm(), 1e-12);
    filled = std::move(next);
    if (change < options_.tolerance) break;
  }

  Eigen::MatrixXd predicted = base + low_rank;
  if (options_.similarity_correction) {
    // Item similarity in latent space (Ch. 7.5), items = columns.
    const Eigen::MatrixXd features = svd.v * svd.s.asDiagonal();  // n x k
    const Eigen::VectorXd sq = features.rowwise().squaredNorm();
    Eigen::MatrixXd dist2 = (sq.replicate(1, n) + sq.transpose().replicate(n, 1)) -
                            2.0 * features * features.transpose();
    const Eigen::MatrixXd sim =
        dist2.unaryExpr([](double d) { return 1.0 / (1.0 + std::sqrt(std::max(d, 0.0))); });
    const Eigen::MatrixXd error = (mask.array() > 0).select(known_residual - low_rank, 0.0);
    const Eigen::MatrixXd numerator = error * sim;  // m x n: sum_j e_uj s(j, i)
    const Eigen::MatrixXd weight = mask * sim;
    predicted.array() += (weight.array() > 0).select(numerator.array() / weight.array(), 0.0);
  }
  return (mask.array() > 0).select(observed, predicted);
}

}  // namespace tessera::predict
