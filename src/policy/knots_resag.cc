#include "policy/knots_resag.h"

#include "policy/fit.h"
#include "policy/usage_view.h"

namespace tessera::policy {

double NodeOrderScore(NodeIndex node, const ClusterState& c) {
  return 100.0 * (1.0 - static_cast<double>(node) / static_cast<double>(c.node_count()));
}

void KnotsResag::Order(std::vector<const Workload*>& pending) const {
  OrderByRequestedMemory(pending);
}

std::optional<GpuIndex> KnotsResag::FirstFitGpu(const Workload& w, NodeIndex node,
                                                const ClusterState& c) {
  const model::Node& n = c.node(node);
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    if (MemoryShareable(w, g, c) && c.gpu(g).free_memory_mib >= w.gpu.memory_mib) return g;
  }
  return std::nullopt;
}

Feasibility KnotsResag::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  const Feasibility f = MemoryShareNodeFits(w, node, c);
  if (!f.ok() || !SharesByMemory(w)) return f;
  if (!FirstFitGpu(w, node, c)) return Feasibility::No("no GPU with enough unrequested memory");
  return Feasibility::Yes();
}

std::optional<Candidate> KnotsResag::Score(const Workload& w, NodeIndex node,
                                           const ClusterState& c) {
  std::optional<Placement> p;
  if (!SharesByMemory(w)) {
    p = FirstFitPlacement(w, node, c);
  } else if (const std::optional<GpuIndex> g = FirstFitGpu(w, node, c)) {
    p = MemorySharePlacement(w, *g, w.gpu.memory_mib, c);
  }
  if (!p) return std::nullopt;
  return Candidate{NodeOrderScore(node, c), std::move(*p), std::nullopt};
}

}  // namespace tessera::policy
