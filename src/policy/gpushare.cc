#include "policy/gpushare.h"

#include "policy/fit.h"
#include "policy/usage_view.h"

namespace tessera::policy {

std::optional<GpuIndex> Gpushare::BinpackGpu(const Workload& w, NodeIndex node,
                                             const ClusterState& c) {
  const model::Node& n = c.node(node);
  std::optional<GpuIndex> best;
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    if (!MemoryShareable(w, g, c)) continue;
    const int64_t free = c.gpu(g).free_memory_mib;
    if (free < w.gpu.memory_mib) continue;
    if (!best || free < c.gpu(*best).free_memory_mib) best = g;
  }
  return best;
}

Feasibility Gpushare::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  const Feasibility f = MemoryShareNodeFits(w, node, c);
  if (!f.ok() || !SharesByMemory(w)) return f;
  if (!BinpackGpu(w, node, c)) return Feasibility::No("no GPU with enough unrequested memory");
  return Feasibility::Yes();
}

std::optional<Candidate> Gpushare::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  if (!SharesByMemory(w)) {
    std::optional<Placement> p = FirstFitPlacement(w, node, c);
    if (!p) return std::nullopt;
    return Candidate{100, std::move(*p), std::nullopt};
  }
  const std::optional<GpuIndex> g = BinpackGpu(w, node, c);
  if (!g) return std::nullopt;
  // Less free memory left, higher score: the cluster-wide binpack.
  const double free_after = static_cast<double>(c.gpu(*g).free_memory_mib - w.gpu.memory_mib);
  return Candidate{100 - MemoryScore(free_after), MemorySharePlacement(w, *g, w.gpu.memory_mib, c),
                   std::nullopt};
}

}  // namespace tessera::policy
