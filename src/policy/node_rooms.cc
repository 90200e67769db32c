#include "policy/node_rooms.h"

#include <algorithm>

namespace tessera::policy {

const NodeRooms& NodeRoomsCache::Of(model::NodeIndex node, const model::ClusterState& c,
                                    PredictionView& view, const std::vector<int>& percents) {
  const model::Node& n = c.node(node);
  view.BeginNode();
  if (entries_.size() < static_cast<size_t>(c.node_count())) entries_.resize(c.node_count());
  Entry& e = entries_[static_cast<size_t>(node)];
  const std::optional<PredictionView::UtilStamp> stamp = view.UtilStampOf(n.first_gpu, n.gpu_count);
  if (!stamp || e.node_version != n.version || e.util != *stamp) {
    Fill(e.rooms, n, c, view, percents);
    // Read after the fill: CachedUtil may have moved the epoch while it read.
    const std::optional<PredictionView::UtilStamp> after =
        view.UtilStampOf(n.first_gpu, n.gpu_count);
    e.node_version = after ? n.version : 0;
    e.util = after.value_or(PredictionView::UtilStamp{});
  }
  return e.rooms;
}

void NodeRoomsCache::Fill(NodeRooms& rooms, const model::Node& n, const model::ClusterState& c,
                          PredictionView& view, const std::vector<int>& percents) {
  rooms.occupied.clear();
  rooms.empties.clear();
  rooms.idle.clear();
  for (model::GpuIndex g = n.first_gpu; g < n.first_gpu + n.gpu_count; ++g) {
    const model::Gpu& gpu = c.gpu(g);
    if (!gpu.available) continue;
    const bool mig = gpu.mig.has_value();
    if (gpu.idle() && std::none_of(rooms.idle.begin(), rooms.idle.end(), [&](const auto& i) {
          return i.model == gpu.model && i.mig == mig;
        })) {
      rooms.idle.push_back({g, gpu.model, mig});
    }
    for (int slot = 0; slot < gpu.partition_count; ++slot) {
      const model::PartitionIndex p = model::ClusterState::PartitionOf(g, slot);
      const model::Partition& part = c.partition(p);
      int64_t most = -1;
      for (int pct : percents) {
        if (ShareFits(part, pct, 0)) most = std::max(most, part.memory_mib * pct / 100);
      }
      if (most < 0) continue;
      const double util = view.CachedUtil(p, c);
      if (!part.empty()) {
        rooms.occupied.push_back({util, most, p, gpu.model, part.profile});
        continue;
      }
      auto same = std::find_if(rooms.empties.begin(), rooms.empties.end(), [&](const auto& e) {
        return e.model == gpu.model && e.profile == part.profile;
      });
      if (same == rooms.empties.end()) {
        rooms.empties.push_back({p, util, most, gpu.model, part.profile});
      } else {
        same->util = std::min(same->util, util);
        same->memory_mib = std::max(same->memory_mib, most);
      }
    }
  }
  std::stable_sort(rooms.occupied.begin(), rooms.occupied.end(),
                   [](const auto& a, const auto& b) { return a.util < b.util; });
}

}  // namespace tessera::policy
