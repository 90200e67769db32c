#include "policy/gpushare.h"

#include "policy/usage_view.h"

namespace tessera::policy {

namespace {

// The binpack offer: the fitting GPU with the least unrequested memory left after the request
// scores highest, across nodes too.
std::optional<Candidate> BinpackOffer(const Workload& w, NodeIndex node, const ClusterState& c) {
  return MemoryShareOffer(w, node, c, w.gpu.memory_mib, [&](GpuIndex g) -> std::optional<double> {
    const int64_t left = c.gpu(g).free_memory_mib - w.gpu.memory_mib;
    if (left < 0) return std::nullopt;
    return 100 - MemoryScore(static_cast<double>(left));
  });
}

}  // namespace

std::optional<GpuIndex> Gpushare::BinpackGpu(const Workload& w, NodeIndex node,
                                             const ClusterState& c) {
  if (!SharesByMemory(w)) return std::nullopt;
  const std::optional<Candidate> offer = BinpackOffer(w, node, c);
  if (!offer) return std::nullopt;
  return c.partition(offer->placement.slices.at(0).partition).gpu;
}

Feasibility Gpushare::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  const Feasibility f = MemoryShareNodeFits(w, node, c);
  if (!f.ok() || !SharesByMemory(w)) return f;
  if (!BinpackGpu(w, node, c)) return Feasibility::No("no GPU with enough unrequested memory");
  return Feasibility::Yes();
}

std::optional<Candidate> Gpushare::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  return BinpackOffer(w, node, c);
}

}  // namespace tessera::policy
