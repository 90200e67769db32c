#include "policy/whole_gpu.h"

#include "policy/fit.h"

namespace tessera::policy {

Workload AsWholeGpuRequest(const Workload& w) {
  Workload whole = w;
  if (whole.gpu.count > 0) {
    whole.gpu.milli = 1000;
    whole.gpu.mig_profile.clear();
  }
  return whole;
}

Feasibility WholeGpu::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return NodeFits(AsWholeGpuRequest(w), node, c);
}

std::optional<Candidate> WholeGpu::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  std::optional<Placement> p = FirstFitPlacement(AsWholeGpuRequest(w), node, c);
  if (!p) return std::nullopt;
  return Candidate{100, std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
