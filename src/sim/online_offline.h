#pragma once
// The online-offline experiment (seed 001, MuxFlow §7): online inference services
// with a daily load hold every GPU of a T4 cluster (001's testbed; or half T4, half A10, as
// 001's internal clusters) for a simulated day, while offline training jobs from a Philly-like
// trace fill what the services leave. Policies:
//
//   online-only   the services alone: the latency baseline (001: "Online-only")
//   ts            offline jobs time-share the services' GPUs, no MPS, no protection (Gandiva)
//   pb-ts         the same with the service at high priority (AntMan, PAI)
//   muxflow       MPS space sharing with dynamic SM, matching and SysMonitor (policy/muxflow.h)
//   muxflow-S, muxflow-M, muxflow-S-M   without dynamic SM, matching, or both (001 Fig. 13)
//
// Every policy that places offline work does it in rounds every 15 min (001 §6: the scheduler
// is invoked periodically; muxflow's offline_period where the matching is off), so an ablation
// changes one mechanism only. Without dynamic SM the offline share is fixed at 40 % (001
// Fig. 8's example). ts and pb-ts place like muxflow-M at MPS's full share with SysMonitor's
// thresholds out of reach, on a ground truth without MPS (PhysicsOptions::sharing). Any
// variant takes muxflow options after its name: muxflow-S{"fixed_sm_percent":100}.
//
// Latency (stated model; no seed gives one): each service replica is an M/M/1 queue served at
// the rate its GPU gives it now (RunRate::capacity_qps, sampled every load tick) and offered
// the service's load λ(t) per replica, plus a fixed host latency (network, pre- and
// post-processing): a request's sojourn is host + Exp(μ − λ). The day's mean weights every
// tick and replica by its requests; the p99 is that of the mixture of their sojourn
// distributions. A tick with λ ≥ 0.99 μ is overloaded and counted at ρ = 0.99.
//
// Deterministic for (policy, scenario, seed). Not thread-safe; runs share nothing.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/predictor.h"
#include "report/table.h"
#include "sim/apps.h"
#include "sim/experiment.h"
#include "sim/explain.h"
#include "sim/load_curve.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "sim/world.h"

namespace tessera::sim {

struct OnlineService {
  std::string name;  // workload names are "<name>-<replica>"
  std::string app;   // key in the catalogue's `apps`
  DailyLoad load;    // per replica
  int replicas = 0;
};

// What a service replica holds on its GPU (docs/results.md, "Services' memory"). Resident
// (`--reading memory=resident`, the default): the framework's cache, a stable share of the
// scenario GPU's memory (001 §2, Fig. 2: "stable because the DL framework … caches"; 001 §7.5:
// online-only GPUs hold 42 % in the deployment), bursting now and then (001 §4.1: "when the
// GPU memory usage of the online workload bursts"): the cache grows by `burst_share` over
// `burst_ramp_s`, holds for the rest of `burst_s` and goes back, once per `burst_period_s` per
// replica at a phase drawn per replica. 001 gives neither the size nor the shape of a burst
// (ours); the period is the one constant set from a result, 001's 1.5 % of offline executions
// evicted (≈245). Footprint (`memory=footprint`): the app's footprint_mib, no bursts.
struct ServiceMemory {
  bool resident = true;
  // Set: every replica bursts once, at this time of its run, and never again (a scripted
  // scenario: the cluster box's); burst_period_s is then unused.
  std::optional<double> burst_once_at_s;
  double resident_share = 0.42;
  double burst_share = 0.30;
  double burst_ramp_s = 120;
  double burst_s = 600;
  double burst_period_s = 5 * 86400;
};

struct OnlineOfflineScenario {
  int nodes = 16;
  int gpus_per_node = 8;
  std::string gpu = "T4";  // the offline trace's durations are exclusive run times on it
  // Non-empty: every odd node has GPUs of this model instead (001 §6, ≈205: the internal
  // clusters mix T4 and A10; `--reading cluster=t4-a10`). Services and jobs may run on either.
  std::string second_gpu;
  double horizon_s = 86400;
  // Offline trace (Philly-like; see docs/results.md): Poisson submissions over the first
  // `submit_window_s`, exclusive run time log-normal with this median and σ, capped; one GPU
  // each; models drawn uniformly from the catalogue's `training` list.
  int offline_jobs = 1400;
  double submit_window_s = 12 * 3600;
  double duration_median_s = 1800;
  double duration_sigma = 1.5;
  double duration_max_s = 8 * 3600;
  double checkpoint_s = 600;  // a checkpoint every 10 min of exclusive progress
  // The share of a training step a job keeps a `gpu` busy alone; the rest of the step is host
  // time (input pipeline, host-side work: AppSpec::host_s), which leaves the GPU to a
  // time-sharing service. 001 §7.5 (≈283): MuxFlow without dynamic SM and matching raised the
  // deployment's GPU utilisation from 26 % to 76 %, so a job on a GPU the service leaves 74 %
  // idle keeps it busy 0.50 / 0.74 ≈ 0.68 of the time (`--reading trainer_duty=0.68`, the
  // default; every GPU read as holding a job, so a lower bound). 1: the catalogue's steps as
  // they are, nearly all on the GPU (`trainer_duty=1`, the world before 2026-12-02).
  double trainer_duty = 0.68;
  double host_latency_ms = 10;
  // How often the simulator samples the services' memory and telemetry and runs a cycle (10 s;
  // the cluster box's short scenario samples every second, as its agents do).
  double sample_interval_s = 10;
  ServiceMemory service_memory;
  std::vector<OnlineService> services;  // empty: DefaultServices(nodes × gpus_per_node)
};

// Three services sharing `gpus` replicas as evenly as they can (001 §7.1: three services
// "deployed over hundreds of GPUs", QPS "from 20 to 190"): bert-base/bs1 at 20–190 QPS per
// replica, and two with higher T4 capacity over the same utilisation range.
std::vector<OnlineService> DefaultServices(int gpus);

// The experiment's own catalogue: its services' apps and the `training` apps, all in `apps`,
// nothing else, so the profiling campaign characterises exactly what runs. With resident
// memory, each service app states it as a memory-only usage trajectory on `gpu`'s memory. A
// `trainer_duty` below 1 gives each training app the host time that makes its step keep a
// whole `gpu` busy that share of the time alone.
[[nodiscard]] Expected<AppCatalog> OnlineOfflineCatalog(const AppCatalog& catalog,
                                                        std::span<const OnlineService> services,
                                                        const ServiceMemory& memory,
                                                        std::string_view gpu,
                                                        double trainer_duty = 1);
// What the Profiler measures for muxflow's predictor (below), as samples: what the cluster box
// hands `tessera schedule` as its --profile and --interference.
[[nodiscard]] Expected<ProfileSamples> OnlineOfflineSamples(const Physics& physics,
                                                            const std::vector<std::string>& gpus,
                                                            uint64_t seed);
// muxflow's speed predictor: CF over what the Profiler measured of every app of `physics` on
// each of `gpus`, alone on every configuration (3 runs each), and in pairs at 50 % MPS on the
// first (001 §6 trains a predictor per GPU type; ours is one model over both).
[[nodiscard]] Expected<predict::Predictor> OnlineOfflinePredictor(
    const Physics& physics, const std::vector<std::string>& gpus, uint64_t seed);
// A scenario of minutes that one memory burst crosses, run by the simulator and by the cluster
// box alike (docs/cluster-box.md): one node of 2 T4s with a service each, 2 offline jobs of
// 40 s alone arriving in the first 2 s (checkpoints every 10 s), every service bursting once at
// 10 s by +30 % of the T4 over a 50-s ramp for 60 s, sampled every second, 240 s long. Its policy
// should run its rounds and holds at this scale: muxflow{"period_s":5,"base_hold_s":10}.
OnlineOfflineScenario ShortBurstScenario();
// The scenario `--reading` names, comma-separated: cluster=t4 (001's testbed, all T4; the
// default) or cluster=t4-a10; memory=resident (the default) or memory=footprint;
// trainer_duty=D, 0 < D ≤ 1 (0.68, the default; 1 the world before).
[[nodiscard]] Expected<OnlineOfflineScenario> OnlineOfflineScenarioOf(std::string_view reading);

// The experiment's policies, in report order.
std::span<const std::string_view> OnlineOfflinePolicies();

struct TimelinePoint {
  double hour = 0;        // bucket start
  double latency_ms = 0;  // request-weighted mean over the bucket
  double gpu_util = 0;    // mean over the bucket's load ticks
  double sm_activity = 0;
};

struct OnlineOfflineRun {
  std::string policy;
  uint64_t seed = 0;
  double online_latency_mean_ms = 0;
  double online_latency_p99_ms = 0;
  double overloaded_share = 0;  // of replica-ticks with λ ≥ 0.99 μ
  // Of replica-ticks with the replica's container down (relaunching after an OOM kill): its
  // requests fail and are left out of the latency.
  double online_down_share = 0;
  double gpu_util_mean = 0;  // over GPUs and the horizon
  double sm_activity_mean = 0;
  double offline_jct_mean_s = 0;  // finished jobs: end − submission
  double offline_jobs_done = 0;
  double offline_jobs = 0;
  double evictions = 0;         // offline runs a policy stopped (requeued from their checkpoint)
  double online_oom_kills = 0;  // service replicas that crashed out of memory (and relaunched)
  double executions = 0;        // offline runs started: first starts + restarts after evictions
  double lost_iterations = 0;
  // 001's oversold GPU (eq. 3, OversoldGpu): how much of a GPU the finished offline jobs got.
  double oversold_gpu = 0;
  // GPU memory in use over GPU memory, time-mean over GPUs and the run: each workload holds its
  // app's footprint while bound (services for the whole run, jobs from start to end).
  double gpu_memory_mean = 0;
  std::vector<TimelinePoint> timeline;  // hourly
};

// Seed 001's oversold GPU (§7.1, eq. 3) over finished offline jobs: the time they would have
// taken alone over the time they took, Σ T_sep / Σ T_real. 001 prints the ratio the other way
// up but defines the metric in [0, 1], 1 when the jobs got the speed they have alone, which
// only this way up gives (docs/results.md). T_real runs from a job's first start to its end.
struct OfflineTimes {
  double exclusive_s = 0;  // T_sep: its iterations at its exclusive speed on its GPU model
  double real_s = 0;       // T_real
};
double OversoldGpu(std::span<const OfflineTimes> jobs);

// One policy variant's world for a scenario and seed, its workloads not added to the engine yet:
// what RunOnlineOffline runs, and what the cluster box runs on its emulated cluster.
struct OnlineOfflineWorld {
  std::unique_ptr<World> world;                    // its physics knows every service's offered load
  std::vector<model::Workload> workloads;          // the services (arrival 0), then the jobs
  std::vector<OnlineService> services;             // the scenario's, or DefaultServices
  std::map<model::WorkloadId, size_t> service_of;  // a replica's service (into `services`)
  std::vector<std::string> gpus;                   // the GPU models, the scenario's first
  std::string policy;                              // the registered one: "muxflow{…}"
  int offline_jobs = 0;
};
[[nodiscard]] Expected<OnlineOfflineWorld> BuildOnlineOfflineWorld(
    std::string_view policy, const OnlineOfflineScenario& scenario, uint64_t seed,
    const AppCatalog& catalog);
[[nodiscard]] Expected<OnlineOfflineRun> RunOnlineOffline(std::string_view policy,
                                                          const OnlineOfflineScenario& scenario,
                                                          uint64_t seed, const AppCatalog& catalog);
// The metrics of a run, declared once: the JSON, the CLI table and the report come from here.
const report::MetricTable<OnlineOfflineRun>& OnlineOfflineTable();
// Means over seeds (OnlineOfflineTable().Mean, and the timelines point by point); policy of the
// first.
OnlineOfflineRun MeanOf(std::span<const OnlineOfflineRun> runs);

// The report: {experiment, seeds, results: [a row per policy, with its hourly timeline]}, and
// an HTML page with the table and a line per policy over the day for latency, GPU utilisation
// and SM activity.
nlohmann::json OnlineOfflineJson(size_t seeds, std::span<const OnlineOfflineRun> means);
std::string OnlineOfflineHtml(size_t seeds, std::span<const OnlineOfflineRun> means);
// A usage error for a --policy that names none of the arms (or options that are not an object),
// or a --reading that names no scenario.
[[nodiscard]] Expected<void> CheckOnlineOfflineArgs(const ExperimentArgs& args);
// `tessera simulate --experiment online-offline` (registered in experiments.cc).
[[nodiscard]] Expected<ExperimentOutput> RunOnlineOfflineExperiment(const ExperimentArgs& args,
                                                                    const Experiment& experiment);

// The latency model, exposed for tests. One queue observation: `weight` requests offered at
// λ to a server of rate μ.
struct QueueObservation {
  double weight = 0;
  double lambda = 0;
  double mu = 0;
};
// ρ capped at 0.99: the rate at which a request's sojourn decays, μ − min(λ, 0.99 μ).
double SojournRate(const QueueObservation& q);
// Request-weighted mean of host + 1 / (μ − λ), in seconds.
double MeanLatency(std::span<const QueueObservation> qs, double host_s);
// The q-quantile (0..1) of the mixture of host + Exp(μ − λ), in seconds (bisection).
double LatencyQuantile(std::span<const QueueObservation> qs, double host_s, double q);

// `tessera explain` in this experiment's world: one node of four T4s at the evening peak
// (20:00), each held by a replica of the services with its SM activity and utilisation
// published, GPU 3 already sharing with a VGG16 training job; an offline training job (--app,
// default train/resnet50) arrives, a matching round places it, and the policy explains each
// GPU's SysMonitor state and why the job went where it did.
[[nodiscard]] Expected<Explanation> ExplainOnlineOffline(const ExplainArgs& args);

}  // namespace tessera::sim
