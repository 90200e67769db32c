#include "policy/fit.h"

#include <cmath>

namespace tessera::policy {
namespace {

using model::Gpu;
using model::Partition;
using model::PartitionIndex;

bool Exclusive(const Workload& w) { return w.gpu.milli == 1000 && w.gpu.mig_profile.empty(); }

bool GpuUsable(const Workload& w, const Gpu& gpu) {
  return gpu.available && w.gpu.AllowsModel(gpu.model);
}

// Visits fitting partitions of node n in order until `take` returns false.
template <typename Take>
void ForEachFit(const Workload& w, NodeIndex n, const ClusterState& c, Take take) {
  const model::Node& node = c.node(n);
  for (GpuIndex g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    const Gpu& gpu = c.gpu(g);
    if (!GpuUsable(w, gpu)) continue;
    if (Exclusive(w)) {
      if (gpu.mig || !gpu.idle()) continue;
      const PartitionIndex p = ClusterState::PartitionOf(g, 0);
      if (w.gpu.memory_mib > 0 && c.partition(p).memory_mib < w.gpu.memory_mib) continue;
      if (!take(p)) return;
      continue;
    }
    if (!gpu.mig && w.gpu.mig_profile.empty()) {
      // MIG off: the one whole-GPU partition has exactly the GPU's free share and memory (the
      // indices ClusterState keeps), so the partition itself need not be read.
      if (w.gpu.milli <= gpu.free_milli && w.gpu.memory_mib <= gpu.free_memory_mib) {
        if (!take(ClusterState::PartitionOf(g, 0))) return;
      }
      continue;
    }
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      const PartitionIndex p = ClusterState::PartitionOf(g, slot);
      if (PartitionFits(w, gpu, c.partition(p))) {
        if (!take(p)) return;
        break;  // one slice per GPU
      }
    }
  }
}

}  // namespace

int32_t PartitionMilliFor(int gpu_milli, const Partition& part) {
  if (part.whole()) return gpu_milli;
  return static_cast<int32_t>(std::ceil(gpu_milli / part.compute_share - 1e-9));
}

bool PartitionFits(const Workload& w, const Gpu& gpu, const Partition& part) {
  if (!GpuUsable(w, gpu)) return false;
  if (!w.gpu.mig_profile.empty()) {
    return !part.whole() && part.empty() && part.memory_mib >= w.gpu.memory_mib &&
           model::GetGpuModel(gpu.model).mig_profiles[part.profile].name == w.gpu.mig_profile;
  }
  if (Exclusive(w)) return part.whole() && part.empty() && part.memory_mib >= w.gpu.memory_mib;
  return PartitionMilliFor(w.gpu.milli, part) <= part.free_milli() &&
         w.gpu.memory_mib <= part.free_memory_mib();
}

model::Slice SliceFor(const Workload& w, PartitionIndex p, const Partition& part) {
  if (!w.gpu.mig_profile.empty() || Exclusive(w)) return {p, 1000, part.memory_mib};
  return {p, PartitionMilliFor(w.gpu.milli, part), w.gpu.memory_mib};
}

Feasibility NodeFits(const Workload& w, NodeIndex n, const ClusterState& c) {
  const model::Node& node = c.node(n);
  if (!node.ready) return Feasibility::No("node not ready");
  if (w.cpu_milli > node.free_cpu_milli()) return Feasibility::No("not enough CPU");
  if (w.memory_mib > node.free_memory_mib()) return Feasibility::No("not enough memory");
  if (w.gpu.count == 0) return Feasibility::Yes();
  if (node.gpu_count < w.gpu.count) return Feasibility::No("too few GPUs");
  if (Exclusive(w) && node.idle_gpus < w.gpu.count) return Feasibility::No("too few idle GPUs");
  bool model_ok = w.gpu.models.empty();
  for (const Gpu& gpu : c.gpus_of(n)) {
    if (model_ok) break;
    model_ok = w.gpu.AllowsModel(gpu.model);
  }
  if (!model_ok) return Feasibility::No("GPU model not allowed");
  int found = 0;
  ForEachFit(w, n, c, [&](PartitionIndex) { return ++found < w.gpu.count; });
  if (found < w.gpu.count) {
    return Feasibility::No(Exclusive(w)                 ? "too few idle GPUs"
                           : !w.gpu.mig_profile.empty() ? "no free MIG instance of that profile"
                                                        : "no GPU with enough free share");
  }
  return Feasibility::Yes();
}

bool FirstFitInto(const Workload& w, NodeIndex n, const ClusterState& c, Placement& out) {
  out.workload = w.id;
  out.node = n;
  out.slices.clear();
  if (w.gpu.count == 0) return true;
  ForEachFit(w, n, c, [&](PartitionIndex p) {
    out.slices.push_back(SliceFor(w, p, c.partition(p)));
    return static_cast<int>(out.slices.size()) < w.gpu.count;
  });
  return static_cast<int>(out.slices.size()) == w.gpu.count;
}

std::optional<Placement> FirstFitPlacement(const Workload& w, NodeIndex n, const ClusterState& c) {
  Placement pl;
  if (!FirstFitInto(w, n, c, pl)) return std::nullopt;
  return pl;
}

std::optional<Placement> PlacementOnGpu(const Workload& w, NodeIndex n, GpuIndex g,
                                        const ClusterState& c) {
  const Gpu& gpu = c.gpu(g);
  if (gpu.node != n || !w.gpu.sharing()) return std::nullopt;
  for (int slot = 0; slot < gpu.partition_count; ++slot) {
    const PartitionIndex p = ClusterState::PartitionOf(g, slot);
    if (PartitionFits(w, gpu, c.partition(p))) {
      return Placement{w.id, n, {SliceFor(w, p, c.partition(p))}};
    }
  }
  return std::nullopt;
}

std::optional<Placement> BestFitPlacement(const Workload& w, NodeIndex n, const ClusterState& c) {
  if (!w.gpu.sharing() || !w.gpu.mig_profile.empty()) return FirstFitPlacement(w, n, c);
  PartitionIndex best = -1;
  int32_t best_free = 0;
  ForEachFit(w, n, c, [&](PartitionIndex p) {
    const int32_t free = c.gpu(c.partition(p).gpu).free_milli;
    if (best < 0 || free < best_free) {
      best = p;
      best_free = free;
    }
    return true;
  });
  if (best < 0) return std::nullopt;
  return Placement{w.id, n, {SliceFor(w, best, c.partition(best))}};
}

}  // namespace tessera::policy
