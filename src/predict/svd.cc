#include "predict/svd.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "predict/baseline.h"
#include "predict/matrix.h"

namespace tessera::predict {
namespace {

// Below this smaller dimension a full BDCSVD is cheap and exact.
constexpr Eigen::Index kExactSvdLimit = 64;
constexpr int kOversample = 8;
constexpr int kWarmOversample = 2;  // the warm start already spans the top subspace
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

TruncatedSvd ComputeTruncatedSvd(const Eigen::MatrixXd& a, int k, const Eigen::MatrixXd* start) {
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
  // A warm start (the previous round's right singular vectors) replaces the power iterations.
  const bool warm = start != nullptr && start->rows() == a.cols() && start->cols() >= k;
  const Eigen::Index l = k + (warm ? kWarmOversample : kOversample);
  Eigen::MatrixXd omega(a.cols(), l);
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  if (warm) omega.leftCols(k) = start->leftCols(k);
  for (Eigen::Index j = warm ? k : 0; j < l; ++j) {
    for (Eigen::Index i = 0; i < a.cols(); ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      omega(i, j) = (state & 1) ? 1.0 : -1.0;
    }
  }
  Eigen::MatrixXd q = Eigen::HouseholderQR<Eigen::MatrixXd>(a * omega).householderQ() *
                      Eigen::MatrixXd::Identity(a.rows(), l);
  for (int it = 0; it < (warm ? 0 : kPowerIterations); ++it) {
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

SvdCompleter::Prepared SvdCompleter::Prepare(const Eigen::MatrixXd& observed) const {
  Prepared p;
  p.mask = KnownMask(observed);
  const Biases biases = FitBiases(observed);
  p.base.resize(observed.rows(), observed.cols());
  for (Eigen::Index c = 0; c < observed.cols(); ++c) {
    for (Eigen::Index r = 0; r < observed.rows(); ++r) p.base(r, c) = biases.At(r, c);
  }
  // Mean-filled residuals: observed - bias model, 0 (the fitted mean) where missing.
  p.residual = (p.mask.array() > 0).select(observed - p.base, 0.0);
  return p;
}

int SvdCompleter::ChooseRank(const Eigen::MatrixXd& observed) const {
  return ChooseRank(observed, Prepare(observed), nullptr);
}

int SvdCompleter::ChooseRank(const Eigen::MatrixXd& observed, const Prepared& prepared,
                             TruncatedSvd* first) const {
  if (options_.rank > 0) return options_.rank;
  const int cap = RankCap(observed);
  if (cap == 1) return 1;
  if (observed.size() > options_.validation_cells) {
    TruncatedSvd svd = ComputeTruncatedSvd(prepared.residual, cap + 1);
    const int k = EnergyRank(svd.s, prepared.residual.squaredNorm(), options_.energy, cap);
    if (first != nullptr) *first = std::move(svd);
    return k;
  }
  // Internal validation on observed cells only.
  const HoldOut split = SplitObserved(observed, options_.validation, options_.seed);
  if (split.held.empty()) return 1;
  const Prepared train = Prepare(split.train);
  int best = 1;
  double best_error = INFINITY;
  for (int k = 1; k <= cap; ++k) {
    const Eigen::MatrixXd completed = CompleteWithRank(split.train, train, k, nullptr);
    double error = 0;
    for (const auto& [r, c] : split.held) error += std::abs(completed(r, c) - observed(r, c));
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
  const Prepared prepared = Prepare(observed);
  TruncatedSvd first;
  const int k = ChooseRank(observed, prepared, &first);
  // The energy rule's SVD (k + 1 vectors) seeds the first hard-impute round.
  return CompleteWithRank(observed, prepared, k, first.v.size() > 0 ? &first.v : nullptr);
}

Eigen::MatrixXd SvdCompleter::CompleteWithRank(const Eigen::MatrixXd& observed,
                                               const Prepared& prepared, int k,
                                               const Eigen::MatrixXd* start) const {
  const Eigen::MatrixXd& mask = prepared.mask;
  const Eigen::MatrixXd& base = prepared.base;
  const Eigen::MatrixXd& known_residual = prepared.residual;
  const Eigen::Index m = observed.rows(), n = observed.cols();
  if (std::min(m, n) < 2) return (mask.array() > 0).select(observed, base);

  // Hard-impute: refit the rank-k approximation with the missing cells set to its own values.
  Eigen::MatrixXd filled = known_residual;
  Eigen::MatrixXd low_rank(m, n);
  TruncatedSvd svd;
  const double* known = mask.data();
  for (int round = 0; round < std::max(1, options_.rounds); ++round) {
    svd = ComputeTruncatedSvd(filled, k, round == 0 ? start : &svd.v);
    low_rank.noalias() = (svd.u * svd.s.asDiagonal()) * svd.v.transpose();
    // One pass, in place: missing cells take the reconstruction; observed cells never change.
    double change = 0, norm = 0;
    double* f = filled.data();
    const double* l = low_rank.data();
    for (Eigen::Index i = 0; i < filled.size(); ++i) {
      if (known[i] == 0) {
        const double d = l[i] - f[i];
        change += d * d;
        f[i] = l[i];
      }
      norm += f[i] * f[i];
    }
    if (std::sqrt(change) < options_.tolerance * std::max(std::sqrt(norm), 1e-12)) break;
  }

  Eigen::MatrixXd predicted = base + low_rank;
  if (options_.similarity_correction) {
    // Item similarity in latent space (Ch. 7.5), items = columns: s(i, j) = 1 / (1 + |f_i - f_j|).
    const Eigen::MatrixXd features = svd.v * svd.s.asDiagonal();  // n x k
    const Eigen::VectorXd sq = features.rowwise().squaredNorm();
    const Eigen::MatrixXd gram = features * features.transpose();
    const Eigen::MatrixXd error = (mask.array() > 0).select(known_residual - low_rank, 0.0);
    const int neighbours = static_cast<int>(std::min<Eigen::Index>(options_.neighbours, n - 1));
    std::vector<std::pair<double, Eigen::Index>> candidates(static_cast<size_t>(n));
    std::vector<Eigen::Index> nbr(static_cast<size_t>(neighbours));
    std::vector<double> sim(static_cast<size_t>(neighbours));
    Eigen::VectorXd num(m), den(m);
    for (Eigen::Index i = 0; i < n; ++i) {
      // The item's most similar other items (all of them when n - 1 <= neighbours).
      for (Eigen::Index j = 0; j < n; ++j) {
        const double d2 = std::max(sq(i) + sq(j) - 2.0 * gram(i, j), 0.0);
        candidates[static_cast<size_t>(j)] = {j == i ? -1.0 : 1.0 / (1.0 + std::sqrt(d2)), j};
      }
      std::partial_sort(candidates.begin(), candidates.begin() + neighbours, candidates.end(),
                        [](const auto& a, const auto& b) {
                          return a.first > b.first || (a.first == b.first && a.second < b.second);
                        });
      for (int t = 0; t < neighbours; ++t) {
        sim[static_cast<size_t>(t)] = candidates[static_cast<size_t>(t)].first;
        nbr[static_cast<size_t>(t)] = candidates[static_cast<size_t>(t)].second;
      }
      // Column operations (contiguous) over all rows at once; observed rows are discarded below.
      num.setZero();
      den.setZero();
      for (int t = 0; t < neighbours; ++t) {
        const Eigen::Index j = nbr[static_cast<size_t>(t)];
        num += sim[static_cast<size_t>(t)] * error.col(j);
        den += sim[static_cast<size_t>(t)] * mask.col(j);
      }
      predicted.col(i).array() += (den.array() > 0).select(num.array() / den.array(), 0.0);
    }
  }
  return (mask.array() > 0).select(observed, predicted);
}

}  // namespace tessera::predict
