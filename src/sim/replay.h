#pragma once
// Arrive-only replay: workloads arrive one at a time, in the given order, are scheduled at once
// by the scheduler core, and never finish; a workload that fits nowhere fails for good. This is
// the FGD paper's method (ATC'23 §6: pods never depart, failures are not retried) and the
// simplest driver of the core. Deterministic: same cluster, policy, order and seed → same run.

#include <functional>
#include <span>

#include "base/rng.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "sched/scheduler.h"

namespace tessera::sim {

struct ReplayEvent {
  size_t index;  // position in the arrival order
  const model::Workload* workload;
  bool placed;
  double arrived_gpu_milli;    // Σ requested GPU milli of all workloads submitted so far
  double allocated_gpu_milli;  // cluster's allocated GPU milli after this event
  // Nodes whose workloads a move changed in this event (moves.h; empty otherwise).
  std::span<const model::NodeIndex> touched = {};
};

struct ReplayResult {
  size_t placed = 0;
  size_t failed = 0;
  double arrived_gpu_milli = 0;
  double allocated_gpu_milli = 0;
  // Arrived GPU milli when the first workload failed; < 0 if none failed.
  double first_failure_arrived_gpu_milli = -1;

  // Counts one arrival (arrived_gpu_milli already includes it) and the cluster after it.
  void Record(bool was_placed, const model::ClusterState& cluster);
};

// GPU milli a workload requests: count × milli.
double RequestedGpuMilli(const model::Workload& w);

// Replays `order` on `cluster` with `policy`; `on_event` (optional) sees every arrival.
// Ties between nodes go to the lowest index (kFirst) or to a seeded random pick (kRandom, as the
// FGD paper's simulator, which runs kube-scheduler's selectHost).
ReplayResult ReplayArriveOnly(model::ClusterState& cluster, policy::Policy& policy, Rng& rng,
                              std::span<const model::Workload> order,
                              const std::function<void(const ReplayEvent&)>& on_event = {},
                              sched::TieBreak tie_break = sched::TieBreak::kFirst);

}  // namespace tessera::sim
