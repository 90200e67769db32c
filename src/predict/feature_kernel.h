#pragma once
// FeatureKernelCompleter ("features"): matrix completion with side information (issue #15).
// An application's log-throughput on configuration c is its own level plus a smooth function of
// what it declares:
//     x(a, c) = o_a + g_c(phi_a)
// g_c is a Nadaraya-Watson kernel regression, over the applications measured on c, of their
// level-corrected values, with the Gaussian kernel K(a, b) = exp(-d²(a, b) / 2h²) on the encoded
// features (features.h; a row never weighs itself); o_a is the mean over a's measured cells of
// x(a, k) - g_k(phi_a). The two are fitted by a few rounds of backfitting. One measured cell
// sets a new application's level, and its neighbours in feature space (the next batch size, the
// sibling model at the same batch) give the shape of its row: whether a bigger slice helps
// depends on the work per batch, which the features state and one number cannot. An
// application with no measured cell gets g_c alone: a prediction from its features only.
//
// The bandwidth h is chosen per completion by internal validation: a seeded `validation`
// fraction of the observed cells is hidden (every row keeps one) and the h of `bandwidths` with
// the least mean absolute error on them wins (ties: the wider). A row that states no feature,
// or a call without features, is completed by `fallback` (default hybrid, completer registry).
//
// Cost: one m × m kernel and two (m × m)(m × n) products per backfitting round and bandwidth.

#include <cstdint>
#include <string>
#include <vector>

#include "predict/completer.h"

namespace tessera::predict {

struct FeatureKernelOptions {
  std::vector<double> bandwidths = {0.15, 0.25, 0.4, 0.6, 1.0, 1.6, 2.5};
  double validation = 0.2;
  int rounds = 4;                // backfitting rounds
  double prior_weight = 1e-3;    // pseudo-weight of the column mean in g_c
  double level_lambda = 1e-3;    // shrinks o_a towards 0 (as the bias model's lambda)
  double missing_penalty = 1.0;  // squared distance of a feature one row lacks
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
  // The bandwidth internal validation picks (for tests and docs).
  double ChooseBandwidth(const Eigen::MatrixXd& observed, const Eigen::MatrixXd& sq_dist) const;

 private:
  Eigen::MatrixXd Fit(const Eigen::MatrixXd& observed, const Eigen::MatrixXd& mask,
                      const Eigen::MatrixXd& sq_dist, double h) const;
  FeatureKernelOptions options_;
};

}  // namespace tessera::predict
