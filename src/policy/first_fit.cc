#include "policy/first_fit.h"

#include "policy/fit.h"

namespace tessera::policy {

std::optional<Candidate> FirstFit::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  std::optional<Placement> p = FirstFitPlacement(w, node, c);
  if (!p) return std::nullopt;
  return Candidate{100, std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
