#pragma once
// Engine: the discrete-event simulator's core loop (DESIGN §5). On a virtual clock it delivers
// arrivals to the scheduler core, runs scheduling cycles, starts bound workloads at the rate
// GroundTruth gives them, moves completion times whenever a GPU's co-location changes, finishes
// MIG reshapes after `reshape_s`, and integrates GPU utilisation, power and energy.
//
// Usage and out of memory (seeds 003 and 004; docs/simulator.md "Use that moves, and out of
// memory"). Workloads whose application states a usage trajectory (GroundTruth::UsageAt) are
// sampled every usage_interval_s while any runs: their memory, SM and bandwidth use go to the
// telemetry by the workload's name and, summed, by its partition's uuid (a workload without a
// trajectory counts there with the memory its slices reserve), as DCGM and the agent's per-pod
// series would. A partition whose use exceeds its memory is out of memory: the workload whose
// use grew most since the last sample (its allocation is the one that fails; ties: the last
// bound) crashes and is relaunched in place, as the kubelet restarts a crashed container:
// nothing for its back-off (oom_relaunch_s, doubling per crash in a row), its work back to its
// last checkpoint, its trajectory from the start. Each kill is counted in its outcome
// (sim/usage.h sums a sample and picks the workloads it kills).
//
// Online services (seed 001; docs/simulator.md "Online services, best-effort jobs and time
// slices"). Services whose offered load moves with time are re-rated at load ticks
// (load_interval_s), and their service rate sampled for latency reports. Telemetry publishes
// each client's SM activity (its sm_load) by workload name and each GPU's by uuid, as NVML's
// per-process utilisation and DCGM's PROF_SM_ACTIVE would.
//
// Determinism. Events at equal times run in a fixed order (completions, reshapes, arrivals,
// usage samples, load ticks, telemetry samples, cycle), and ties by sequence number, so a run
// is a pure function of its inputs and seeds.
//
// Single-threaded. The engine owns nothing it is given: cluster, policy and truth outlive it.

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "sched/scheduler.h"
#include "sim/ground_truth.h"
#include "sim/usage.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {

struct EngineOptions {
  double cycle_interval_s = 1.0;  // a cycle also runs right after every arrival and completion
  double reshape_s = 5.0;         // MIG reconfiguration time (thesis Ch. 8.3)
  double horizon_s = 1e9;         // stop here even if work remains (counted as unfinished)
  // When set, the engine publishes what a DCGM exporter scraped by Prometheus would: every
  // `telemetry_interval_s` a sample of each partition's graphics-engine activity (its clients'
  // busy fractions, capped at 1) and each GPU's, by uuid — the util(p) that telemetry-driven
  // policies read, as stale between samples as a real scrape.
  telemetry::StaticTelemetry* telemetry = nullptr;
  double telemetry_interval_s = 1.0;
  // A workload a policy moves (Eviction::requeue) keeps the queries it has done — up to its
  // last checkpoint when it checkpoints (Workload::checkpoint_queries: an evicted training
  // job restarts from there, seed 001 §6) — goes back to the queue with its arrival time, and
  // once bound again serves nothing for this long: its container starting and its model
  // loading (chosen: no seed gives it). A policy's resizes (AfterCycle) re-rate it at once.
  double move_restart_s = 10.0;
  // The virtual clock the engine drives, when the caller must hand it to a policy first
  // (PolicyContext::clock: muxflow's rescheduling period); else the engine keeps its own.
  ManualClock* clock = nullptr;
  // Usage sampling (and so OOM detection) period, and the time an OOM-killed workload serves
  // nothing before its container is back: the kubelet's crash back-off, 10 s doubling with each
  // crash up to 300 s, and back to 10 s once a run lasted 600 s (Kubernetes, "Pod Lifecycle").
  double usage_interval_s = 1.0;
  // A usage sample also runs a scheduling cycle, so that a policy guarding against what the
  // samples show (muxflow's SysMonitor: seed 001 §4.1 samples at "the millisecond level") acts
  // on each one, not only when an event or a pending workload runs a cycle.
  bool cycle_after_usage = false;
  double oom_relaunch_s = 10.0;
  double oom_relaunch_max_s = 300.0;
  double oom_backoff_reset_s = 600.0;
  // Who crashes when a GPU runs out of memory (sim/usage.h). The default keeps every
  // experiment's world as it was; overprovision takes kGrowersUntilFit (docs/simulator.md).
  OomRule oom_rule = OomRule::kOneGrower;
  // Online services whose truth states an offered load (GroundTruth::HasOfferedLoad): re-rated
  // every this many seconds while any runs, their service rate recorded in
  // WorkloadOutcome::load — the load moves smoothly in minutes (seed 001 §2).
  double load_interval_s = 60.0;
  // Seed 002's simulator (≈430): when a task starts or finishes, every running task of the
  // machines it uses (its node and its remote GPUs' nodes) is re-rated, local ones too — for a
  // truth whose co-location reaches past a GPU (PhysicsOptions::link_colocation). Off: only the
  // workloads on its GPUs, and remote ones sharing its network links.
  bool rerate_node_neighbours = false;
};

// An online service's state at a load tick: the rate its request queue is served at.
struct LoadSample {
  double t = 0;
  double capacity_qps = 0;  // RunRate::capacity_qps: what it could serve there now; 0 while
                            // its container is down (an OOM relaunch's back-off, a move)
  double served_qps = 0;    // min(offered, capacity)
};

// The cluster at a load tick: mean GPU utilisation and SM activity over its GPUs.
struct ClusterSample {
  double t = 0;
  double gpu_util = 0;
  double sm_activity = 0;
};

// One workload's life, for reports.
struct WorkloadOutcome {
  model::Workload workload;
  std::optional<double> start_s;  // bound
  std::optional<double> end_s;    // finished or failed
  bool failed = false;
  std::string failure;
  model::NodeIndex node = -1;
  std::string partition;    // uuid of its first slice
  std::string profile;      // that partition's MIG profile ("1g.6gb"), or "whole"
  int32_t milli = 0;        // its share of that partition (MPS active threads x 10; 1000 = all)
  int moves = 0;            // times a policy moved it (the slice above is the last one)
  double lost_queries = 0;  // work done since its last checkpoint when moved or killed: redone
  int oom_kills = 0;        // times it crashed out of memory (and was relaunched in place)
  int remote_slices = 0;    // of its last placement: GPUs in another node (seed 002)
  double queries_done = 0;
  // Online services with an offered load: one sample per load tick while bound (and serving).
  std::vector<LoadSample> load;
  // Mean QPS over its execution: queries / (end - start); 0 if it never ran.
  // Moves count: their restarts and time back in the queue are part of the execution.
  double achieved_qps() const;
  double pending_s() const;  // start - arrival (or end - arrival if it never started)
};

struct EngineResult {
  std::vector<WorkloadOutcome> workloads;  // in submission order
  double first_arrival_s = 0;
  double end_s = 0;          // last completion (makespan = end - first arrival)
  double stop_s = 0;         // the last event: the horizon when work was left, else about end_s
  double gpu_util_mean = 0;  // time-mean over GPUs, while anything ran
  double power_w_mean = 0;   // cluster power, time-mean over the makespan
  double energy_j = 0;
  // Σ over GPUs of ∫ utilisation dt and ∫ SM activity dt (Σ clients' SM load, capped at 1)
  // over the whole run, for experiments whose work never drains (online services).
  double gpu_util_integral = 0;
  double sm_activity_integral = 0;
  // Σ over partitions of ∫ GPU memory used dt (MiB·s), from the usage samples (each holds
  // until the next one): what DCGM's FB_USED would integrate. Only while workloads with a
  // usage trajectory run (0 otherwise).
  double gpu_memory_integral = 0;
  std::vector<ClusterSample> load_ticks;  // one per load tick (online services only)
  sched::CycleStats scheduler;
};

class Engine {
 public:
  Engine(model::ClusterState& cluster, policy::Policy& policy, GroundTruth& truth, Rng& rng,
         EngineOptions options = {});

  // Queues an arrival (at w.arrival_s); workloads are reported in the order they were added.
  // Refuses a duplicate id or a workload with no queries to run.
  [[nodiscard]] Expected<void> Add(model::Workload w);
  // Runs until every workload finished or failed, or the horizon. Once: the result takes the
  // outcomes (a second call is a bug, and aborts).
  EngineResult Run();

 private:
  enum class Kind {
    kCompletion = 0,
    kReshapeDone = 1,
    kArrival = 2,
    kUsage = 3,
    kLoad = 4,
    kTelemetry = 5,
    kCycle = 6
  };
  struct Event {
    double t;
    Kind kind;
    uint64_t seq;
    int64_t subject;   // workload index, GPU index
    uint64_t version;  // completions: stale when the workload's version moved on
    bool operator>(const Event& o) const;
  };
  struct Running {
    size_t index;      // into outcomes_
    double remaining;  // queries
    double qps = 0;
    double busy = 0;
    double load = 0;           // its sm_load
    double capacity = 0;       // RunRate::capacity_qps
    double since = 0;          // last progress update
    double resume_at = 0;      // after a move: no progress before this (restart)
    double run_start = 0;      // its usage trajectory's time 0: this run's start
    double last_memory = 0;    // at the last usage sample
    int crashes_in_a_row = 0;  // the kubelet's back-off count
    uint64_t version = 0;
    std::vector<model::GpuIndex> gpus;
    // With remote slices (or rerate_node_neighbours): its node and its remote GPUs' nodes,
    // whose network it loads.
    std::vector<model::NodeIndex> network_nodes;
  };

  void Push(double t, Kind kind, int64_t subject, uint64_t version = 0);
  void AdvanceTo(double t);  // integrates energy/utilisation up to t
  void Bind(const model::Workload& w, const model::Placement& p);
  void Finish(model::WorkloadId id, bool failed, const std::string& why);
  // A policy moved it: progress kept, back to the queue (its outcome stays open).
  void Suspend(model::WorkloadId id);
  // With checkpoints, drops the work done since the last one (counted in lost_queries).
  static void RollBackToCheckpoint(WorkloadOutcome& o, Running& r);
  // Samples the trajectories of the running workloads, publishes them, kills what runs out of
  // memory; schedules the next sample while any trajectory runs.
  void SampleUsage();
  // Each running workload's part of a usage sample at `now`, by id; notes its memory for the
  // next sample's growth.
  std::vector<WorkloadUsage> RunningUsage(double now);
  // Publishes a sample to options_.telemetry: by workload name, and by partition uuid where a
  // client has a trajectory.
  void PublishUsage(double now, const UsageSample& sample);
  void OomKill(model::WorkloadId id);
  // Takes a running workload off: its progress counted up to now, its GPUs re-rated, its
  // telemetry forgotten, a cycle requested. nullopt when it is not running.
  std::optional<Running> Stop(model::WorkloadId id);
  // Queries served since the last progress update.
  double Progress(const Running& r, double now) const;
  // Recomputes the rates of everything on the GPUs queued in rerate_ (and rerate_ids_).
  void Settle();
  void SetGpuUtil(model::GpuIndex g, double util, double load);
  void RequestCycle();
  // A remote stream through `nodes` started or stopped: re-rate every running workload whose
  // remote streams share one of them (their network load moved).
  void RerateNetwork(const std::vector<model::NodeIndex>& nodes);
  void PublishTelemetry();
  // A load tick: re-rates the GPUs of every running service with an offered load; false when
  // none runs (the ticks stop until one is bound).
  bool LoadTick();
  // After the tick's re-rate: one LoadSample per such service.
  void RecordLoad();
  std::vector<model::GpuIndex> GpusOf(const model::Placement& p) const;
  bool Done() const;

  model::ClusterState& cluster_;
  const policy::Policy& policy_;  // asked whether it holds workloads back (HoldsBack)
  GroundTruth& truth_;
  EngineOptions options_;
  ManualClock own_clock_;
  ManualClock& clock_;  // options_.clock or own_clock_
  sched::Scheduler scheduler_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  std::vector<WorkloadOutcome> outcomes_;
  std::unordered_map<model::WorkloadId, size_t> index_of_;
  std::unordered_map<model::WorkloadId, Running> running_;
  // Moved workloads as they stopped: the queries still to do, and the version their completions
  // had reached (a new run continues it, so a completion pushed for the old run stays stale).
  std::unordered_map<model::WorkloadId, Running> suspended_;
  size_t settled_ = 0;  // finished or failed
  bool cycle_pending_ = false;
  bool usage_pending_ = false;                     // a kUsage event is queued
  bool ran_ = false;                               // Run was called
  bool load_pending_ = false;                      // a kLoad event is queued
  std::vector<model::GpuIndex> rerate_;            // GPUs whose co-location changed
  std::vector<model::WorkloadId> rerate_ids_;      // GPU-less workloads just started
  std::vector<model::WorkloadId> remote_running_;  // running with network_nodes
  std::vector<double> gpu_util_;
  std::vector<double> gpu_power_;             // at its current SM load
  std::vector<double> gpu_load_;              // Σ clients' sm_load, capped at 1
  std::vector<double> partition_util_;        // by PartitionIndex
  std::vector<model::GpuIndex> unpublished_;  // re-rated since the last telemetry sample
  std::vector<char> unpublished_flag_;        // by GpuIndex: in unpublished_
  double total_util_ = 0;                     // Σ gpu_util_
  double total_power_ = 0;                    // Σ gpu_power_
  double total_load_ = 0;                     // Σ gpu_load_
  double end_s_ = 0;
  std::vector<ClusterSample> load_ticks_;
  // Integrals.
  double last_t_ = 0;
  double energy_j_ = 0;
  double util_time_ = 0;    // Σ_gpus ∫ util dt
  double sm_time_ = 0;      // Σ_gpus ∫ SM load dt
  double memory_time_ = 0;  // Σ_partitions ∫ memory used dt (MiB·s), from usage samples
  double active_time_ = 0;  // ∫ dt while anything ran
};

}  // namespace tessera::sim
