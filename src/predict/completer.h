#pragma once
// Completer: one matrix-completion method of the collaborative filter (seed 000 Ch. 7, DESIGN
// §4). Each method lives in its own file pair and is registered by name in registry.cc.
//
// Input: a dense matrix with NaN where a cell is unknown, already in the space the method should
// work in (the Predictor passes log-throughput for profile matrices, raw loss fractions for
// interference matrices). Output: the same shape, observed cells unchanged, every NaN replaced
// by a finite prediction. A row or column with no observation at all still gets a value (the
// method's fallback: column, row or global mean).
//
// Methods are immutable after construction; Complete is const and safe to call concurrently.

#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "predict/features.h"

namespace tessera::predict {

class Completer {
 public:
  virtual ~Completer() = default;
  virtual std::string_view name() const = 0;
  // Fails only when the matrix has no observed cell at all (nothing to learn from).
  [[nodiscard]] virtual Expected<Eigen::MatrixXd> Complete(
      const Eigen::MatrixXd& observed) const = 0;
  // With side information (features.h), one row of `features.x` per matrix row. Methods that
  // read features override it; the others complete from the matrix alone.
  [[nodiscard]] virtual Expected<Eigen::MatrixXd> CompleteWith(
      const Eigen::MatrixXd& observed, const EncodedFeatures& features) const {
    (void)features;
    return Complete(observed);
  }
  // True when CompleteWith reads the features.
  virtual bool UsesFeatures() const { return false; }
};

// Helpers shared by the methods.
inline bool IsKnown(double v) { return !std::isnan(v); }
// 1 where observed, 0 where missing.
Eigen::MatrixXd KnownMask(const Eigen::MatrixXd& observed);

// Internal validation split (rank and trust-radius choices): a seeded `fraction` of the observed
// cells moved out of `train`, never a row's last one. Only observed cells take part, so a
// method tuning itself on it never sees the cells its caller hid.
struct HoldOut {
  Eigen::MatrixXd train;
  std::vector<std::pair<Eigen::Index, Eigen::Index>> held;  // (row, column)
};
HoldOut SplitObserved(const Eigen::MatrixXd& observed, double fraction, uint64_t seed);

}  // namespace tessera::predict
