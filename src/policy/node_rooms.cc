#include "policy/node_rooms.h"

#include <algorithm>
#include <functional>

namespace tessera::policy {

const std::vector<int>& NodeRoomsCache::Descending(const std::vector<int>& percents) {
  if (percents_ != percents) {
    percents_ = percents;
    descending_ = percents;
    std::sort(descending_.begin(), descending_.end(), std::greater<>());
  }
  return descending_;
}

NodeRoomsCache::Entry& NodeRoomsCache::EntryOf(model::NodeIndex node,
                                               const model::ClusterState& c) {
  if (entries_.size() < static_cast<size_t>(c.node_count())) entries_.resize(c.node_count());
  return entries_[static_cast<size_t>(node)];
}

const NodeRooms& NodeRoomsCache::Of(model::NodeIndex node, const model::ClusterState& c,
                                    PredictionView& view, const std::vector<int>& percents) {
  Entry& e = EntryOf(node, c);
  view.BeginNode();
  const model::Node& n = c.node(node);
  const std::optional<PredictionView::UtilStamp> stamp = view.UtilStampOf(n.first_gpu, n.gpu_count);
  if (!stamp || e.node_version != n.version || e.util != stamp) {
    Fill(e.rooms, n, c, view, Descending(percents), true);
    // Read after the fill: CachedUtil may have moved the epoch while it read. Without a stamp
    // nothing is kept (not even the shape: node versions start at 1).
    const std::optional<PredictionView::UtilStamp> after =
        view.UtilStampOf(n.first_gpu, n.gpu_count);
    e.node_version = after ? n.version : 0;
    e.util = after;
  }
  return e.rooms;
}

const NodeRooms* NodeRoomsCache::OfSeenTwice(model::NodeIndex node, const model::ClusterState& c,
                                             PredictionView& view,
                                             const std::vector<int>& percents) {
  Entry& e = EntryOf(node, c);
  const model::Node& n = c.node(node);
  const std::optional<PredictionView::UtilStamp> stamp = view.UtilStampOf(n.first_gpu, n.gpu_count);
  if (!stamp) return nullptr;  // nothing can be kept
  if (e.node_version == n.version && e.util == stamp) return &e.rooms;
  if (e.seen_version == n.version && e.seen_util == stamp) return &Of(node, c, view, percents);
  e.seen_version = n.version;
  e.seen_util = stamp;
  return nullptr;
}

const NodeRooms& NodeRoomsCache::ShapeOf(model::NodeIndex node, const model::ClusterState& c,
                                         PredictionView& view, const std::vector<int>& percents) {
  Entry& e = EntryOf(node, c);
  const model::Node& n = c.node(node);
  if (e.node_version != n.version) {
    Fill(e.rooms, n, c, view, Descending(percents), false);
    e.node_version = n.version;
    e.util.reset();
  }
  return e.rooms;
}

void NodeRoomsCache::Fill(NodeRooms& rooms, const model::Node& n, const model::ClusterState& c,
                          PredictionView& view, const std::vector<int>& descending, bool utils) {
  rooms.occupied.clear();
  rooms.empties.clear();
  rooms.idle.clear();
  // No share fits where the smallest one's milli are not free (ShareFits).
  const int least = descending.empty() ? 0 : descending.back();
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
      if (least * 10 > part.free_milli()) continue;
      // A larger share gives at least as much memory: the largest that fits gives the most.
      int64_t most = -1;
      for (int pct : descending) {
        if (ShareFits(part, pct, 0)) {
          most = part.memory_mib * pct / 100;
          break;
        }
      }
      if (most < 0) continue;
      const double util = utils ? view.CachedUtil(p, c) : 0.0;
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
  if (utils) {
    // Insertion sort, stable: a node's few partitions, sorted without stable_sort's buffer
    // (a malloc per fill).
    std::vector<NodeRooms::Occupied>& v = rooms.occupied;
    for (size_t i = 1; i < v.size(); ++i) {
      const NodeRooms::Occupied o = v[i];
      size_t j = i;
      for (; j > 0 && o.util < v[j - 1].util; --j) v[j] = v[j - 1];
      v[j] = o;
    }
  }
}

}  // namespace tessera::policy
