#pragma once
// The one translation between the store's records and a model::ClusterState that both
// Kubernetes drivers (k8s::Scheduler, k8s::Extender) use (DESIGN §6): pod uids become numeric
// workload ids, a store PlacementRecord becomes a Placement on the cluster, and a Placement
// becomes the record the store and the pod's annotation keep. Plain functions over values; the
// caller owns the ClusterState (and whatever lock guards it). WorkloadIds is not thread-safe.

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "k8s/binder.h"
#include "model/cluster.h"
#include "store/records.h"

namespace tessera::k8s {

// Numeric workload ids for pod uids: 1, 2, … in order of first sight; a uid keeps its id for
// the life of the map.
class WorkloadIds {
 public:
  model::WorkloadId IdOf(const std::string& uid);  // assigns the next id to a new uid
  std::optional<model::WorkloadId> Find(const std::string& uid) const;

 private:
  std::unordered_map<std::string, model::WorkloadId> ids_;
  model::WorkloadId next_ = 1;
};

// The placement `record` describes on `cluster`, for workload `w`. A `w` asking for as many GPUs
// as the record has slices keeps its request (what it asked for, not what it was given: a
// policy that moves it judges the request); any other `w` (one with no request: the
// extender's) gets the recorded one, one GPU per slice, each the first slice's share and
// memory, so that ClusterState::Place accepts it. Fails, naming it, when the cluster lacks the
// record's node or one of its partitions (the caller names the pod).
[[nodiscard]] Expected<model::Placement> PlacementFromRecord(const store::PlacementRecord& record,
                                                             const model::ClusterState& cluster,
                                                             model::Workload& w);

// The record of `pod`'s placement `p` on `cluster` (partitions by uuid, nodes by name).
store::PlacementRecord RecordOf(const PodRef& pod, const model::Placement& p,
                                const model::ClusterState& cluster);

// "GPU-a (250 milli, 0 MiB), GPU-b (…)" for events.
std::string SlicesText(const std::vector<store::SliceRecord>& slices);

}  // namespace tessera::k8s
