#pragma once
// HybridCompleter ("hybrid"): the multivariate imputer (imputer.h) corrected by the
// neighbourhood filter (neighbours.h) within a trust region chosen on the training data:
//     x̂ = r + clamp(n - r, -delta, +delta)
// where r is the imputer's and n the neighbours' prediction (both in the caller's space, log
// throughput for profiles). The imputer's linear regressions rarely miss badly but blur the
// saturation knee of a throughput curve; the neighbour follows the knee but, when it picks the
// wrong neighbour, misses by a factor of several. delta is chosen per completion by internal
// validation: a seeded `validation` fraction of the *observed* cells is hidden (every row keeps
// one), both methods complete that reduced matrix, and the delta from `deltas` with the least
// mean absolute error on those cells wins. Hidden test cells never take part, as they are not
// in the input. Costs three completions of each method.

#include <cstdint>
#include <vector>

#include "predict/completer.h"

namespace tessera::predict {

struct HybridOptions {
  double validation = 0.2;
  std::vector<double> deltas = {0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 1e9};
  uint64_t seed = 20240601;
};

class HybridCompleter final : public Completer {
 public:
  explicit HybridCompleter(HybridOptions options = {}) : options_(std::move(options)) {}
  std::string_view name() const override { return "hybrid"; }
  Expected<Eigen::MatrixXd> Complete(const Eigen::MatrixXd& observed) const override;
  // The trust radius the last validation would choose for `observed` (for tests and docs).
  [[nodiscard]] Expected<double> ChooseDelta(const Eigen::MatrixXd& observed) const;

 private:
  HybridOptions options_;
};

}  // namespace tessera::predict
