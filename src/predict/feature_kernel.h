#pragma once
// FeatureKernelCompleter ("features"): matrix completion with side information
// (docs/prediction.md "Side information").
// An application's log-throughput on configuration c is its own level plus a smooth function of
// what it declares:
//     x(a, c) = o_a + g_c(phi_a)
// g_c is a Nadaraya-Watson kernel regression, over the applications measured on c, of their
// level-corrected values, with the Gaussian kernel K(a, b) = exp(-d²(a, b) / 2h²) on the encoded
// features (features.h) over a's `neighbours` nearest other applications (a row never weighs
// itself); o_a is the mean over a's measured cells of
// x(a, k) - g_k(phi_a). The two are fitted by a few rounds of backfitting. One measured cell
// sets a new application's level, and its neighbours in feature space (the next batch size, the
// sibling model at the same batch) give the shape of its row: whether a bigger slice helps
// depends on the work per batch, which the features state and one number cannot. An
// application with no measured cell gets g_c alone: a prediction from its features only.
//
// The metric is learnt per completion by internal validation: a seeded `validation` fraction of
// the observed cells is hidden (every row keeps one); for given feature weights (each feature's
// part of d² times its weight) the h of `bandwidths` with the least absolute log error on them
// wins (ties: the wider); starting from equal weights, `weight_passes` rounds of coordinate
// descent try each of `feature_weights` for one feature at a time and keep a strictly better
// error (which features matter, e.g. tokens per batch more than the task, is the data's to say).
// With fewer than `weights_min_rows` applications the weights stay equal (too few rows to tell
// the features apart). Above 100,000 cells the weights stay equal too and only every other
// bandwidth is tried, each with one backfitting round (the benchmark's budget). A row that states
// no feature, or a call without features, is completed by `fallback` (default hybrid, completer
// registry).
//
// Where the columns carry compute shares (config_key.h), the roofline prior (roofline.h) is
// blended in: on the same validation cells, for rows with 1, 2 and 3 or more measured cells
// apart, the weight of `roofline_blend` whose absolute log error is least (ties: the smaller)
// mixes the two fits in log space. It is the roofline that carries a row known by one cell at
// 75 % missing; with more cells per row the kernel usually wins.
//
// Cost: the m × m distances once, then per bandwidth and backfitting round one m · neighbours · n
// kernel product.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "predict/completer.h"
#include "predict/roofline.h"

namespace tessera::predict {

struct FeatureKernelOptions {
  std::vector<double> bandwidths = {0.15, 0.25, 0.4, 0.6, 1.0, 1.6, 2.5};
  double validation = 0.2;
  int rounds = 4;                // backfitting rounds
  double prior_weight = 1e-3;    // pseudo-weight of the column mean in g_c
  double level_lambda = 1e-3;    // shrinks o_a towards 0 (as the bias model's lambda)
  double missing_penalty = 1.0;  // squared distance of a feature one row lacks
  int neighbours = 64;           // the kernel's support: each row's nearest other rows
  std::vector<double> feature_weights = {0.0, 1.0, 3.0};  // tried for each feature
  int weight_passes = 1;      // coordinate-descent passes over the features
  int weights_min_rows = 20;  // fewer applications: equal weights (too few to tell apart)
  std::vector<double> roofline_blend = {0.0, 0.25, 0.5, 0.75, 1.0};  // tried per row bucket
  RooflineOptions roofline;
  std::string fallback = "hybrid";
  uint64_t seed = 20240601;
};

class FeatureKernelCompleter final : public Completer {
 public:
  explicit FeatureKernelCompleter(FeatureKernelOptions options = {})
      : options_(std::move(options)) {}
  std::string_view name() const override { return "features"; }
  bool UsesFeatures() const override { return true; }
  // Without features: the fallback method.
  Expected<Eigen::MatrixXd> Complete(const Eigen::MatrixXd& observed) const override;
  Expected<Eigen::MatrixXd> CompleteWith(const Eigen::MatrixXd& observed,
                                         const EncodedFeatures& features) const override;
  // Each row's `neighbours` nearest other rows (ties: the lower index) and their squared
  // distances: the kernel's support.
  struct Neighbours {
    Eigen::MatrixXi index;
    Eigen::MatrixXd sq_dist;
  };
  Neighbours Nearest(const Eigen::MatrixXd& sq_dist) const;
  // What internal validation picks: a weight per feature (index into features.names) and the
  // bandwidth, with their validation error (sum of absolute log errors).
  struct Metric {
    std::vector<double> weights;
    double bandwidth = 0;
    double error = 0;
    Neighbours neighbours;  // under `weights`: what the final fit uses
  };
  Metric LearnMetric(const Eigen::MatrixXd& observed, const EncodedFeatures& features) const;
  // The roofline's weight for rows with 1, 2 and ≥ 3 measured cells (all 0 when no column has
  // a compute share).
  using Blend = std::array<double, 3>;

  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

 private:
  // Matrices with more cells are validated on every other bandwidth, with one round.
  static constexpr Eigen::Index kLargeCells = 100'000;
  // Buffers one completion reuses across its fits (large matrices: no fresh pages per round).
  struct Workspace {
    RowMatrix y, mask, weight, z, g;
    RowMatrixF vf, sum;
    HoldOut split;  // LearnMetric's validation split (its fraction below)
    double split_fraction = -1;
    RowMatrix held_fit;  // the fit on split.train under the metric LearnMetric returned
  };
  Metric LearnMetric(const Eigen::MatrixXd& observed, const EncodedFeatures& features,
                     Workspace& ws) const;
  // By validation under `metric`, after LearnMetric on the same workspace.
  Blend LearnBlend(const Eigen::MatrixXd& observed, const EncodedFeatures& features,
                   const Metric& metric, Workspace& ws) const;
  // The prediction for every cell of `observed`, left in ws.g.
  void Fit(const Eigen::MatrixXd& observed, const Neighbours& nb, double h, int rounds,
           Workspace& ws) const;
  FeatureKernelOptions options_;
};

}  // namespace tessera::predict
