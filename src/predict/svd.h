#pragma once
// SvdCompleter: the thesis's collaborative filter (seed 000 Ch. 7.2 and 7.5): a low-rank SVD of
// the mean-filled matrix gives each item (column) a latent feature vector; a missing cell (u, i)
// is predicted from row u's known cells weighted by item similarity
//     s(i, j) = 1 / (1 + ||f_i - f_j||)   (euclidean distance of latent features, Ch. 7.5).
//
// Tessera's choices where the thesis is silent (docs/prediction.md):
//   - Normalisation: the caller passes log-throughput; inside, the bias model mu + b_u + b_i
//     (baseline.h) is removed first, so the filter works on residuals where "mean fill" = 0.
//     The similarity-weighted average of raw throughputs would predict a 7g instance as fast as
//     the 1g one the row was measured on; of residuals it carries "this app runs x% above the
//     average app" from similar items.
//   - The mean-filled residual matrix is refined by a few hard-impute rounds (rank-k SVD,
//     missing cells replaced by the reconstruction) so that the latent features are not
//     dominated by the zeros of the fill; the rank-k reconstruction is kept as part of the
//     prediction and the similarity-weighted term corrects it from the row's own known cells:
//       x̂_ui = mu + b_u + b_i + L_ui + sum_j s(i,j) (r_uj - L_uj) / sum_j s(i,j),
//     j over row u's known cells among the `neighbours` (20) items most similar to i (all of
//     them on the 8-column MIGProfiler matrix; it keeps 500 columns cheap).
//   - Rank rule (k <= min(max_rank, min(m, n) / 2)): on matrices of at most `validation_cells`
//     cells, internal validation: a seeded 20% of the observed cells is hidden (every row keeps
//     one), and the k in 1..cap with the least mean absolute error on them wins. Larger matrices
//     take the smallest k whose singular values hold `energy` (90%) of the mean-filled
//     residual's squared Frobenius norm (validation would cost cap extra completions).
// Small matrices use Eigen's BDCSVD; large ones a randomised range finder (Halko et al.) with
// Eigen's QR and JacobiSVD on the small projected matrix, each hard-impute round warm-started
// from the previous round's right singular vectors.

#include <cstdint>

#include "predict/completer.h"

namespace tessera::predict {

struct SvdOptions {
  int rank = 0;  // 0: chosen by the rank rule above
  double energy = 0.9;
  int max_rank = 10;
  long validation_cells = 100'000;
  double validation = 0.2;
  uint64_t seed = 20240601;
  int rounds = 20;          // hard-impute rounds
  double tolerance = 1e-5;  // stop when the relative change of the fill is below this
  bool similarity_correction = true;
  int neighbours = 20;  // similar items summed over (all of them when there are fewer)
};

// Truncated SVD of a dense matrix: a = u * diag(s) * v^T with k columns (k <= min(m, n)).
struct TruncatedSvd {
  Eigen::MatrixXd u;
  Eigen::VectorXd s;
  Eigen::MatrixXd v;
};
// `start` (n x >= k), when given, seeds the randomised range finder instead of power iterations
// (hard-impute passes the previous round's v).
TruncatedSvd ComputeTruncatedSvd(const Eigen::MatrixXd& a, int k,
                                 const Eigen::MatrixXd* start = nullptr);

class SvdCompleter final : public Completer {
 public:
  explicit SvdCompleter(SvdOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "svd"; }
  Expected<Eigen::MatrixXd> Complete(const Eigen::MatrixXd& observed) const override;
  // The rank the rank rule picks for `observed` (needs an observed cell).
  int ChooseRank(const Eigen::MatrixXd& observed) const;

 private:
  struct Prepared {
    Eigen::MatrixXd mask, base, residual;  // base = bias model; residual = 0 where missing
  };
  Prepared Prepare(const Eigen::MatrixXd& observed) const;
  // `first`, when the energy rule ran, receives its SVD (a warm start for hard-impute).
  int ChooseRank(const Eigen::MatrixXd& observed, const Prepared& prepared,
                 TruncatedSvd* first) const;
  Eigen::MatrixXd CompleteWithRank(const Eigen::MatrixXd& observed, const Prepared& prepared,
                                   int rank, const Eigen::MatrixXd* start) const;
  int RankCap(const Eigen::MatrixXd& observed) const;

  SvdOptions options_;
};

}  // namespace tessera::predict
