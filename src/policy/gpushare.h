#pragma once
// gpushare — Alibaba's gpushare-scheduler-extender (AliyunContainerService/gpushare-scheduler-
// extender), the baseline of seed 003 (§4, §6): pods ask for GPU memory (aliyun.com/gpu-mem) and
// share a GPU as long as their *requests* fit its memory; actual use is never looked at.
//
// A memory share (policy/usage_view.h) goes to the GPU with the least free requested memory
// that still fits the request — the extender's binpack (`allocateGPUID`: the fitting device
// with the least available memory, the lowest index on ties). The extender leaves the node to
// kube-scheduler; here the same rule runs across nodes (a node scores by its chosen GPU), which
// is the extender's choice on one node, as in 003's experiments. The slice reserves the request
// (also its MPS pinned-memory limit) and caps threads at the request's share, reserving no
// compute. Every other request (whole GPUs, several GPUs, a MIG profile) is placed first-fit by
// the usual rules. Stateless; reads only the cluster state.

#include "policy/policy.h"

namespace tessera::policy {

class Gpushare final : public Policy {
 public:
  std::string_view name() const override { return "gpushare"; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;

  // The binpack choice on `node`: the shareable GPU with the least free memory ≥ the request.
  static std::optional<GpuIndex> BinpackGpu(const Workload& w, NodeIndex node,
                                            const ClusterState& c);
};

}  // namespace tessera::policy
