#pragma once
// UsageTrajectory: what a running workload of an application holds and does on its GPU over
// time, apart from what it requested (seed 003 §3, seed 004 §2): GPU memory in use,
// SM activity and memory-bandwidth activity (0..1 of the GPU), as phases played from the
// workload's start, plus an optional periodic burst. Seed 004 measured SM peaks up to 90× and
// bandwidth peaks up to 400× the median; a burst is how a trajectory states such peaks.
//
// Phases hold for their duration_s in order; after the last one the trajectory holds the last
// phase (repeat: hold) or starts over (repeat: loop). A burst covers the last duration_s of
// every period_s since the start: during it each quantity is the larger of the phase's and the
// burst's. A pure value: data/apps.yaml describes it (sim/apps.h), sim::Physics answers it as
// ground truth, the engine samples it; policies never see it, only the telemetry it produces.

#include <cstddef>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "model/placement.h"

namespace tessera::model {
class ClusterState;
}  // namespace tessera::model

namespace tessera::sim {

struct UsagePoint {
  double memory_mib = 0;
  double sm = 0;         // SM activity, 0..1 (DCGM_FI_PROF_SM_ACTIVE)
  double bandwidth = 0;  // DRAM activity, 0..1 of peak (DCGM_FI_PROF_DRAM_ACTIVE)
  bool operator==(const UsagePoint&) const = default;
};

struct UsagePhase {
  double duration_s = 0;  // > 0
  UsagePoint use;
  bool operator==(const UsagePhase&) const = default;
};

struct UsageBurst {
  double period_s = 0;    // > duration_s
  double duration_s = 0;  // > 0
  UsagePoint peak;
  double ramp_s = 0;       // 0 ≤ ramp_s ≤ duration_s; 0: a step
  bool staggered = false;  // shifted per workload (At's offset_s)
  bool repeat = true;      // false: only the first period's burst, [period − duration, period)
  bool operator==(const UsageBurst&) const = default;
};

struct UsageTrajectory {
  std::vector<UsagePhase> phases;  // empty: the application states no trajectory
  bool loop = false;
  std::optional<UsageBurst> burst;
  bool memory_only = false;  // sm and bandwidth are not the trajectory's to state

  bool empty() const { return phases.empty(); }
  // The use `since_start_s` seconds after the workload started (clamped at 0); a staggered
  // burst is played `burst_offset_s` later in its period.
  UsagePoint At(double since_start_s, double burst_offset_s = 0) const;
  // The most memory it ever holds.
  double PeakMemoryMib() const;
  bool operator==(const UsageTrajectory&) const = default;
};

// A usage sample of the running workloads, as the engine takes one every usage interval
// (sim/engine.h): each workload's use, and what they hold together on each partition.

// One running workload's part of a sample.
struct WorkloadUsage {
  model::WorkloadId id = 0;
  const model::Placement* placement = nullptr;  // its slices; not owned
  std::optional<UsagePoint> use;  // nullopt: no trajectory (it holds what it reserved)
  bool activity = true;           // its trajectory states SM and bandwidth activity
  double growth_mib = 0;          // with a trajectory: memory grown since its last sample
  size_t order = 0;               // the engine's index of it: breaks ties between growers
};

// What one partition's clients hold together.
struct PartitionUsage {
  UsagePoint sum;
  bool traced = false;    // some client has a trajectory
  bool activity = false;  // some client's trajectory states SM and bandwidth activity
  // Its clients with a trajectory: (growth since the last sample, order, id).
  std::vector<std::tuple<double, size_t, model::WorkloadId>> growers;
};

struct UsageSample {
  std::vector<WorkloadUsage> workloads;  // in the order given (the engine's: by id)
  std::map<model::PartitionIndex, PartitionUsage> partitions;
};

// The sample of `workloads`: each adds its use to its slices' partitions, spread evenly over
// them, or, without a trajectory, the memory each slice reserves.
UsageSample SumUsage(std::vector<WorkloadUsage> workloads);

// Who crashes when a partition's clients hold more than its memory.
enum class OomRule {
  // The client whose use grew most since the last sample, one per partition per sample, even if
  // the partition stays over (then, at the next sample, whichever client ties at the top — one
  // that holds nothing, restarting, included). The rule every experiment ran before 2026-12-02.
  kOneGrower,
  // Clients that grew since the last sample, the most grown first, until the partition fits:
  // only an allocation can fail, and memory already held is not given back, so a client that did
  // not grow (a container in its crash back-off among them) never crashes, and after the sample
  // the partition holds no more than its memory (ours: the physics of a GPU without isolation).
  kGrowersUntilFit,
};

// Out of memory: on each partition of `cluster` whose clients hold more than its memory, the
// clients `rule` picks crash (their allocations are the ones that fail; ties: the greater order,
// then id). Takes the crashed workloads' use out of `sample` (after the crash they hold
// nothing) and returns their ids, in increasing order.
std::vector<model::WorkloadId> KillOutOfMemory(const model::ClusterState& cluster,
                                               UsageSample& sample,
                                               OomRule rule = OomRule::kOneGrower);

}  // namespace tessera::sim
