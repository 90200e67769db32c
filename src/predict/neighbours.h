#pragma once
// NeighboursCompleter ("knn"): user-based neighbourhood collaborative filtering. For a missing
// cell (u, i) it finds the K applications v that were measured on configuration i and whose
// known cells are closest to u's on the configurations both were measured on, and transfers
// their value, shifted by the mean gap between u and v there:
//     x̂_ui = sum_v w_v (x_vi + mean_s(x_us - x_vs)) / sum_v w_v,   w_v = 1 / (eps + d(u, v))^2,
//     d(u, v) = RMS over co-observed s of (x_us - x_vs).
// On log-throughput this says "an application that runs like v where both were measured runs
// like v elsewhere"; unlike the bias model it follows a neighbour's curve (a batch-1 model that
// does not speed up on a bigger MIG slice, a batch-256 one that does), which is what a new
// application with one measurement needs (Paragon-style cold start, seed 000 Ch. 7).
//
// Not in the thesis; added because neither bias nor linear low-rank structure can tell, from one
// cell, whether an application saturates a slice (docs/prediction.md). Cells with no usable
// neighbour fall back to the bias model. Cost O(m^2 n) (masked GEMMs for all row distances).

#include "predict/completer.h"

namespace tessera::predict {

struct NeighboursOptions {
  int k = 2;
  double epsilon = 1e-3;  // keeps an exact match's weight finite
};

class NeighboursCompleter final : public Completer {
 public:
  explicit NeighboursCompleter(NeighboursOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "knn"; }
  Expected<Eigen::MatrixXd> Complete(const Eigen::MatrixXd& observed) const override;

 private:
  NeighboursOptions options_;
};

}  // namespace tessera::predict
