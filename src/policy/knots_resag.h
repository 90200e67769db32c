#pragma once
// knots-resag — Kube-Knots' resource-agnostic sharing (seed 004, §"Resource agnostic
// sharing"): GPUs are shared by first-fit-decreasing bin packing of the pods' *requested* GPU
// memory, blind to what they use — the scheme whose capacity violations motivate CBP and PP.
//
// Pending pods are ordered by requested GPU memory, largest first (FIFO among equals); a memory
// share (policy/usage_view.h) goes to the first GPU in cluster order (node, then GPU index)
// whose unrequested memory holds the request — first fit whatever the driver's tie-break, as
// earlier nodes score higher. The slice reserves the request (its MPS pinned-memory limit) and
// caps threads at the request's share. Other requests are placed first-fit by the usual rules.
// Stateless; reads only the cluster state.

#include "policy/policy.h"

namespace tessera::policy {

class KnotsResag final : public Policy {
 public:
  std::string_view name() const override { return "knots-resag"; }
  bool CustomOrder() const override { return true; }
  void Order(std::vector<const Workload*>& pending) const override;
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;

  // The first GPU of `node` whose unrequested memory holds w's request.
  static std::optional<GpuIndex> FirstFitGpu(const Workload& w, NodeIndex node,
                                             const ClusterState& c);
};

// 100 for the first node, falling with the node index: first fit through the core's argmax.
double NodeOrderScore(NodeIndex node, const ClusterState& c);

}  // namespace tessera::policy
