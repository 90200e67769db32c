#pragma once
// NodeRooms: what the predicting policies' score ceilings (Policy::ScoreCeiling) read of a node
// — its occupied partitions with room for a share, its empty partitions, its idle GPUs — kept
// per node while the node's version and its partitions' utilisations
// (PredictionView::UtilStampOf) hold, so that a ceiling costs a few loads instead of a pass
// over the node's partitions. Each policy turns the rooms into its own bound: a set score is
// 100 · (1 − util) times a mean of terms ≤ 1, and on an empty partition or an idle GPU the
// policy knows x's best alone. Not thread-safe (as PredictionView).

#include <cstdint>
#include <vector>

#include "model/cluster.h"
#include "policy/prediction_view.h"

namespace tessera::policy {

// Ceilings are raised by this factor: a set score's mean of terms is ≤ 1, and an offer
// recomputed from the same numbers the same, only up to rounding.
constexpr double kCeilingMargin = 1 + 1e-12;

struct NodeRooms {
  // `memory_mib`: the most memory a share that fits gives, so that ShareFits(part, pct, need)
  // holds for some of the policy's shares exactly when need ≤ memory_mib.
  struct Occupied {
    double util = 0;  // PredictionView::CachedUtil
    int64_t memory_mib = 0;
    model::PartitionIndex partition = 0;
    model::GpuModelId model = 0;
    int profile = -1;
  };
  std::vector<Occupied> occupied;  // partitions with clients and room, lowest util first
  // Empty partitions (idle GPUs' included), one per (model, profile): the lowest util among
  // them, the most memory, and one of them.
  struct Empty {
    model::PartitionIndex partition = 0;
    double util = 0;
    int64_t memory_mib = 0;
    model::GpuModelId model = 0;
    int profile = -1;
  };
  std::vector<Empty> empties;
  // Available idle GPUs, one per (model, MIG enabled).
  struct Idle {
    model::GpuIndex gpu = 0;
    model::GpuModelId model = 0;
    bool mig = false;
  };
  std::vector<Idle> idle;
};

class NodeRoomsCache {
 public:
  // The rooms of `node` in `c` for a policy that offers the MPS shares `percents` (percent of
  // a partition, 1..100; the same at every call); calls view.BeginNode() first.
  const NodeRooms& Of(model::NodeIndex node, const model::ClusterState& c, PredictionView& view,
                      const std::vector<int>& percents);
  // Of's rooms where they pay: if kept and still holding (the node's version and its
  // utilisations' stamp), or if the node is as this call last saw it (the rooms will likely
  // be read again: filled now). Else nullptr, and the node's state is noted: a node that
  // changes between two looks costs no fill. Read after view.BeginNode() (a fill calls it again).
  const NodeRooms* OfSeenTwice(model::NodeIndex node, const model::ClusterState& c,
                               PredictionView& view, const std::vector<int>& percents);
  // The same rooms without their utilisations: every field but `util` as Of gives it, and
  // `occupied` in no particular order. Kept while the node's version holds alone (a
  // utilisation moving does not refill it); valid until the next call for this node. Does not
  // call view.BeginNode().
  const NodeRooms& ShapeOf(model::NodeIndex node, const model::ClusterState& c,
                           PredictionView& view, const std::vector<int>& percents);

 private:
  // With `utils`, reads each partition's utilisation and sorts `occupied` by it. `descending`:
  // the policy's shares, largest first.
  static void Fill(NodeRooms& rooms, const model::Node& n, const model::ClusterState& c,
                   PredictionView& view, const std::vector<int>& descending, bool utils);
  const std::vector<int>& Descending(const std::vector<int>& percents);
  std::vector<int> percents_, descending_;  // the shares asked with, and sorted
  struct Entry {
    uint64_t node_version = 0;  // 0: never filled (node versions start at 1)
    // What the utilisations were read under; nullopt: not read (a shape only).
    std::optional<PredictionView::UtilStamp> util;
    NodeRooms rooms;
    // What OfSeenTwice last saw of the node (0: nothing).
    uint64_t seen_version = 0;
    std::optional<PredictionView::UtilStamp> seen_util;
  };
  Entry& EntryOf(model::NodeIndex node, const model::ClusterState& c);
  std::vector<Entry> entries_;  // [node]
};

}  // namespace tessera::policy
