#pragma once
// fgd: Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation", USENIX ATC'23,
// §4.2, Algorithm 1; reference simulator plugin/fgd_score.go). A node's score is how much
// placing the workload lowers its expected fragmentation against the typical pods:
//   score = ⌊ sigmoid((F_before − F_after) / 1000) · 100 ⌋,
// truncated to an integer as the Kubernetes framework does; a GPU share is tried on every fitting
// GPU of the node and goes to the one with the highest score (the first on ties); other requests
// take the first idle GPUs. The core breaks ties between nodes (the paper's simulator: at
// random). Options: {"typical_pods": [shape, ...]} (policy/frag.h); without it the typical pods
// are learned online from the arrivals.

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "policy/frag_policy.h"

namespace tessera::policy {

// Parses the "typical_pods" option shared by the fragmentation policies (absent: empty).
[[nodiscard]] Expected<ShapeDistribution> TypicalPodsOption(std::string_view policy,
                                                            const nlohmann::json& options);

class Fgd final : public FragmentationPolicy {
 public:
  explicit Fgd(ShapeDistribution typical) : FragmentationPolicy(std::move(typical)) {}
  std::string_view name() const override { return "fgd"; }
  // The integer score from the fragment before and after.
  static int ScoreOf(double before, double after);

 protected:
  double Rate(double before, double after, const NodeFree&, const NodeFree&) const override {
    return ScoreOf(before, after);
  }
};

}  // namespace tessera::policy
