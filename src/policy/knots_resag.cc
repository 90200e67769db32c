#include "policy/knots_resag.h"

#include "policy/usage_view.h"

namespace tessera::policy {

double NodeOrderScore(NodeIndex node, const ClusterState& c) {
  return 100.0 * (1.0 - static_cast<double>(node) / static_cast<double>(c.node_count()));
}

void KnotsResag::Order(std::vector<const Workload*>& pending) const {
  OrderByRequestedMemory(pending);
}

namespace {

// The first GPU whose unrequested memory holds the request (equal scores: the lowest index).
std::optional<Candidate> FirstFitOffer(const Workload& w, NodeIndex node, const ClusterState& c) {
  const double score = NodeOrderScore(node, c);
  return MemoryShareOffer(w, node, c, w.gpu.memory_mib, [&](GpuIndex g) -> std::optional<double> {
    if (c.gpu(g).free_memory_mib < w.gpu.memory_mib) return std::nullopt;
    return score;
  });
}

}  // namespace

std::optional<GpuIndex> KnotsResag::FirstFitGpu(const Workload& w, NodeIndex node,
                                                const ClusterState& c) {
  if (!SharesByMemory(w)) return std::nullopt;
  const std::optional<Candidate> offer = FirstFitOffer(w, node, c);
  if (!offer) return std::nullopt;
  return c.partition(offer->placement.slices.at(0).partition).gpu;
}

Feasibility KnotsResag::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  const Feasibility f = MemoryShareNodeFits(w, node, c);
  if (!f.ok() || !SharesByMemory(w)) return f;
  if (!FirstFitGpu(w, node, c)) return Feasibility::No("no GPU with enough unrequested memory");
  return Feasibility::Yes();
}

std::optional<Candidate> KnotsResag::Score(const Workload& w, NodeIndex node,
                                           const ClusterState& c) {
  std::optional<Candidate> offer = FirstFitOffer(w, node, c);
  if (offer) offer->score = NodeOrderScore(node, c);  // also for requests placed first-fit
  return offer;
}

}  // namespace tessera::policy
