#include "policy/min.h"

#include "policy/registry.h"

namespace tessera::policy {

std::vector<OptionInfo> MinOptionList() {
  return {{"mps_slots", "1",
           "applications a GPU without MIG holds at once, each limited to 25% through MPS: 1 "
           "(the device plugin ties one to a device, Ch. 9.2.1) or 4"}};
}

Expected<std::unique_ptr<Policy>> MakeMin(const PolicyContext&, const nlohmann::json& options) {
  int slots = 1;
  if (auto ok = ReadOption("min", options, "mps_slots", slots); !ok) {
    return std::unexpected(ok.error());
  }
  if (slots != 1 && slots != 4) return Fail("policy min: option 'mps_slots' must be 1 or 4");
  return std::make_unique<Min>(slots);
}

MigLayout Min::SmallestLayout(const model::GpuModel& model) {
  // Computed once per model: the layout with the most instances (first in layout order).
  static const std::vector<MigLayout> cache = [] {
    std::vector<MigLayout> out;
    for (const model::GpuModel& m : model::AllGpuModels()) {
      MigLayout best;
      for (const MigLayout& l : model::ValidLayouts(m)) {
        if (l.instances.size() > best.instances.size()) best = l;
      }
      out.push_back(std::move(best));
    }
    return out;
  }();
  return cache[model.id];
}

std::optional<Candidate> Min::Offer(const Workload& w, NodeIndex node,
                                    const ClusterState& c) const {
  if (w.gpu.count != 1) return std::nullopt;  // one slot per workload: multi-GPU jobs do not fit
  const model::Node& n = c.node(node);
  if (!n.ready || w.cpu_milli > n.free_cpu_milli() || w.memory_mib > n.free_memory_mib()) {
    return std::nullopt;
  }
  std::optional<Candidate> reshape_offer;
  for (GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!gpu.available || !w.gpu.AllowsModel(gpu.model)) continue;
    const model::GpuModel& m = model::GetGpuModel(gpu.model);
    if (m.mig_capable() && c.MayReshapeTo(g, true)) {  // else shared whole, as a GPU without MIG
      const MigLayout smallest = SmallestLayout(m);
      if (gpu.mig == smallest) {
        for (int slot = 0; slot < gpu.partition_count; ++slot) {
          const model::PartitionIndex p = ClusterState::PartitionOf(g, slot);
          if (c.partition(p).empty()) {
            return Candidate{100, {w.id, node, {{p, 1000, c.partition(p).memory_mib}}}, {}};
          }
        }
      } else if (gpu.idle() && !reshape_offer) {
        const int64_t memory = m.mig_profiles[smallest.instances.front().profile].memory_mib;
        reshape_offer = Candidate{100,
                                  {w.id, node, {{ClusterState::PartitionOf(g, 0), 1000, memory}}},
                                  ReshapeTo{g, smallest}};
      }
      continue;
    }
    const model::Partition& whole = c.partition(ClusterState::PartitionOf(g, 0));
    const int64_t quarter = whole.memory_mib / 4;
    if (static_cast<int>(whole.clients.size()) < mps_slots_ &&
        whole.free_milli() >= kMpsSlotMilli && whole.free_memory_mib() >= quarter) {
      return Candidate{
          100, {w.id, node, {{ClusterState::PartitionOf(g, 0), kMpsSlotMilli, quarter}}}, {}};
    }
  }
  return reshape_offer;  // a ready slot anywhere on the node beats reshaping
}

Feasibility Min::Filter(const Workload& w, NodeIndex node, const ClusterState& c) const {
  return Offer(w, node, c) ? Feasibility::Yes() : Feasibility::No("no free slot");
}

std::optional<Candidate> Min::Score(const Workload& w, NodeIndex node, const ClusterState& c) {
  return Offer(w, node, c);
}

std::optional<std::optional<MigLayout>> Min::Reshape(GpuIndex g, const ClusterState& c) {
  const model::GpuModel& m = model::GetGpuModel(c.gpu(g).model);
  if (!m.mig_capable() || !c.MayReshapeTo(g, true)) return std::nullopt;
  return std::optional<MigLayout>{SmallestLayout(m)};
}

}  // namespace tessera::policy
