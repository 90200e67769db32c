#include "sim/replay.h"

#include "base/clock.h"
#include "sched/scheduler.h"

namespace tessera::sim {

double RequestedGpuMilli(const model::Workload& w) {
  return static_cast<double>(w.gpu.count) * w.gpu.milli;
}

void ReplayResult::Record(bool was_placed, const model::ClusterState& cluster) {
  if (was_placed) {
    ++placed;
  } else {
    ++failed;
    if (first_failure_arrived_gpu_milli < 0) first_failure_arrived_gpu_milli = arrived_gpu_milli;
  }
  allocated_gpu_milli = cluster.allocated_gpu_milli();
}

ReplayResult ReplayArriveOnly(model::ClusterState& cluster, policy::Policy& policy, Rng& rng,
                              std::span<const model::Workload> order,
                              const std::function<void(const ReplayEvent&)>& on_event,
                              sched::TieBreak tie_break) {
  ManualClock clock;
  sched::Scheduler scheduler(cluster, policy, clock, rng, {},
                             {.drop_unschedulable = true, .tie_break = tie_break});
  ReplayResult r;
  for (size_t i = 0; i < order.size(); ++i) {
    const model::Workload& w = order[i];
    clock.Set(static_cast<double>(i));
    r.arrived_gpu_milli += RequestedGpuMilli(w);
    // Placed when this arrival is in the cluster after its cycle: a batch policy's cycle could
    // bind another pod than the event's (the scheduler drops what a batch leaves waiting).
    bool placed = false;
    if (scheduler.Submit(w)) {
      scheduler.RunCycle();
      placed = cluster.Find(w.id) != nullptr;
    }
    r.Record(placed, cluster);
    if (on_event) on_event({i, &w, placed, r.arrived_gpu_milli, r.allocated_gpu_milli});
  }
  return r;
}

}  // namespace tessera::sim
