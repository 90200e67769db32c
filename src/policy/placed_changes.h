#pragma once
// PlacedChanges: which running workloads a closed loop (a policy's AfterCycle) must look at
// again, so that the loop costs what changed since its last pass rather than what runs:
//   - the workloads on every node whose Node::version moved (placed, removed, resized,
//     reshaped, taken down or back), and
//   - the workloads whose QPS the telemetry changed (Telemetry::WorkloadQpsChangedSince);
// and which workloads left (placed at the last pass, placed nowhere now), so the loop drops
// what it kept about them. Where it cannot tell — the first pass, the node count changed, a
// telemetry without a log of QPS changes, or the caller says everything changed — every
// placed workload is visited. Not thread-safe.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "model/cluster.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

class PlacedChanges {
 public:
  // One pass: compares `c` with the last pass (and reads the telemetry's changes since).
  // `everything`: visit every placed workload whatever changed.
  void Update(const model::ClusterState& c, const telemetry::Telemetry* telemetry, bool everything);
  // Every placed workload from now on in this pass (for a loop whose inputs all moved).
  void VisitAll(const model::ClusterState& c);
  // The workloads to look at this pass: ascending, no repeats, all placed.
  const std::vector<model::WorkloadId>& visit() const { return visit_; }
  // Placed at the last pass, not now (ascending).
  const std::vector<model::WorkloadId>& gone() const { return gone_; }
  // Whether the telemetry's WorkloadQps for `id` may differ from what it was at the last pass:
  // false only when the telemetry's log of QPS changes answered this pass and does not name
  // it. A loop that judged a workload on its QPS at the last pass where it was visited may
  // keep that judgement while this is false at every pass since (it is visited whenever it is
  // true).
  bool QpsMayHaveMoved(model::WorkloadId id) const {
    return !qps_told_ || std::binary_search(qps_moved_.begin(), qps_moved_.end(), id);
  }

 private:
  struct NodeSeen {
    uint64_t version = 0;
    std::vector<model::WorkloadId> ids;  // ascending
  };
  // Node n changed since the last pass: who left it, who is on it now (visited), names for
  // those new on it.
  void Revisit(const model::ClusterState& c, model::NodeIndex n);
  std::vector<NodeSeen> nodes_;
  std::optional<uint64_t> telemetry_version_;
  // Workload names as the telemetry uses them, for the workloads seen on nodes; entries of
  // workloads gone are dropped when the map outgrows the placed workloads.
  telemetry::UuidMap<model::WorkloadId> by_name_;
  std::vector<model::WorkloadId> visit_, gone_;
  bool qps_told_ = false;                     // the log answered this pass
  std::vector<model::WorkloadId> qps_moved_;  // the placed workloads it named (ascending)
  std::vector<std::string_view> names_;       // scratch
  std::vector<model::WorkloadId> before_;     // scratch: a node's workloads at the last pass
};

}  // namespace tessera::policy
