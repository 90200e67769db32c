#pragma once
// fgd: Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation", USENIX ATC'23,
// §4.2, Algorithm 1; reference simulator plugin/fgd_score.go). A node's score is how much
// placing the workload lowers its expected fragmentation against the typical pods:
//   score = ⌊ sigmoid((F_before − F_after) / 1000) · 100 ⌋,
// truncated to an integer as the Kubernetes framework does; a GPU share is tried on every fitting
// GPU of the node and goes to the one with the highest score (the first on ties); other requests
// take the first idle GPUs. The core breaks ties between nodes (the paper's simulator: at
// random). Options: {"typical_pods": [shape, ...]} (policy/frag.h); without it the typical pods
// are the driver's (PolicyContext::typical_pods), or, when it has none, learned online from the
// arrivals.

#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "policy/frag_policy.h"
#include "policy/registry.h"

namespace tessera::policy {

// The one option of the fragmentation policies (fgd, frag-pack), as the registry advertises it.
std::vector<OptionInfo> TypicalPodsOptionList();
// Their typical pods: the "typical_pods" option when given, else the context's, else empty
// (learn online). The context's go through the same renormalising constructor as a parsed
// option's, so a driver handing them over gives the weights the option would, to the last bit.
[[nodiscard]] Expected<ShapeDistribution> TypicalPods(std::string_view policy,
                                                      const PolicyContext& context,
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
