#include "policy/max.h"

#include "policy/fit.h"
#include "policy/whole_gpu.h"

namespace tessera::policy {
namespace {

// Idle GPUs that are, or can be made, whole: MIG-off idle GPUs first (no reshape needed).
std::vector<GpuIndex> WholeOrReshapable(const Workload& w, NodeIndex node, const ClusterState& c) {
  std::vector<GpuIndex> ready, reshapable;
  const model::Node& n = c.node(node);
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!gpu.available || !gpu.idle() || !w.gpu.AllowsModel(gpu.model)) continue;
    if (w.gpu.memory_mib > model::GetGpuModel(gpu.model).memory_mib) continue;
    if (!c.MayReshapeTo(g, false)) continue;  // MIG on, and its mode is fixed
    (gpu.mig ? reshapable : ready).push_back(g);
  }
  ready.insert(ready.end(), reshapable.begin(), reshapable.end());
  return ready;
}

}  // namespace

Feasibility Max::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  const Workload whole = AsWholeGpuRequest(w);
  const model::Node& n = c.node(node);
  if (!n.ready) return Feasibility::No("node not ready");
  if (w.cpu_milli > n.free_cpu_milli()) return Feasibility::No("not enough CPU");
  if (w.memory_mib > n.free_memory_mib()) return Feasibility::No("not enough memory");
  if (static_cast<int>(WholeOrReshapable(whole, node, c).size()) < w.gpu.count) {
    return Feasibility::No("too few idle GPUs");
  }
  return Feasibility::Yes();
}

std::optional<Candidate> Max::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  const Workload whole = AsWholeGpuRequest(w);
  const std::vector<GpuIndex> gpus = WholeOrReshapable(whole, node, c);
  if (static_cast<int>(gpus.size()) < w.gpu.count) return std::nullopt;
  Candidate cand{100, {w.id, node, {}}, std::nullopt};
  for (int i = 0; i < w.gpu.count; ++i) {
    const GpuIndex g = gpus[i];
    if (c.gpu(g).mig) {
      // One reshape per decision: a multi-GPU workload waits for the proactive reshapes.
      if (cand.reshape || w.gpu.count > 1) return std::nullopt;
      cand.reshape = ReshapeTo{g, std::nullopt};
    }
    cand.placement.slices.push_back(
        {ClusterState::PartitionOf(g, 0), 1000, model::GetGpuModel(c.gpu(g).model).memory_mib});
  }
  return cand;
}

std::optional<std::optional<MigLayout>> Max::Reshape(GpuIndex g, const ClusterState& c) {
  if (!c.gpu(g).mig || !c.MayReshapeTo(g, false)) return std::nullopt;
  return std::optional<MigLayout>{};
}

}  // namespace tessera::policy
