#pragma once
// The disaggregation experiment (seed 002, Experiments 4–5; Experiment 2's four-machine
// prototype runs by reading): Rodinia-like batch jobs
// on a cluster of K80 nodes whose CPUs are half taken by a warm-up of CPU-only jobs, so that a
// scheduler confined to local GPUs leaves the GPUs of the busy nodes idle, and one that may
// place a job's GPU on another node than its CPU (a remote slice, over the network) does not.
//
//  - Cluster: `nodes` × 4 K80 (one GK210 each), 160 hardware threads and 512 GiB per node
//    (002's POWER8 Firestone servers: 2 × 10 cores × 8 threads, 512 GB).
//  - Warm-up: CPU-only jobs of `cpu/warmup`, one per two nodes, each holding a whole node's CPU
//    (002: "initial jobs requesting 50% of the available CPUs with no network requirements")
//    for `warmup_s`, submitted at t = 0.
//  - Jobs: `jobs` of the eight Rodinia-like apps of apps.yaml's `sharing` list, uniformly (002's
//    simulation), Poisson at `arrival_rate` per second (002: 16), each one GPU, 8 threads and 32
//    GiB; its work drawn from the app's query range; a completion-time goal τ and z uniform in
//    1..10. τ (`goal`): by class (default), its app's mean work alone on a local K80 — 002's
//    τ_c, "an average completion time goal" (eq. 6), "the task's expected completion time"
//    (≈265); by job (`--reading goal=job`, ours), its own run alone × (1 + U[slack_min,
//    slack_max]).
//  - Policies: drmaestro without disaggregation (002's Firmament baseline), drmaestro,
//    drmaestro + network-aware, first-fit and best-fit. drmaestro's JobProfiles come from the
//    catalogue as offline profiling would give them (noise-free run time per query on a K80,
//    RemoteProfile's slowdown and sensitivity).
//
// Metrics over the Rodinia jobs: makespan (last completion − first arrival), QoS violations
// (jobs whose run, start to end, took longer than their goal: 002's "jobs that suffered
// slowdown"), jobs done, mean pending time, jobs that ran on a remote GPU. Deterministic for
// (policy, scenario, seed).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "policy/job_profile.h"
#include "report/table.h"
#include "sim/apps.h"
#include "sim/experiment.h"
#include "sim/explain.h"

namespace tessera::sim {

struct DisaggregationScenario {
  int nodes = 16;
  int jobs = 512;
  int gpus_per_node = 4;
  std::string gpu = "K80";
  double arrival_rate = 16;  // jobs per second (002)
  double warmup_s = 2000;    // 002: the warm-up jobs "execute for ≈2000s"
  // The goal τ (`--reading goal=`): by class (002's τ_c, eq. 6 and ≈265: the app's mean work
  // alone on a local K80), or by job (ours: its own run alone × (1 + U[slack_min, slack_max])).
  // The slack is drawn either way, so both readings see the same jobs.
  enum class Goal { kClass, kJob };
  Goal goal = Goal::kClass;
  double slack_min = 0.1;
  double slack_max = 0.6;
  std::vector<std::string> apps = {"rodinia/btree",      "rodinia/backprop", "rodinia/gaussian",
                                   "rodinia/hotspot",    "rodinia/lavamd",   "rodinia/nw",
                                   "rodinia/pathfinder", "rodinia/srad"};
  // The world (`--reading world=`). colocation (default): seed 002's simulator re-rates every
  // task of a machine as tasks come and go (≈430) — here through the node's network link
  // (PhysicsOptions::link_colocation) — and network-intensive CPU jobs (`cpu/iperf`, 002's
  // Iperf of Experiment 1) arrive beside the Rodinia ones. network-only: the earlier world, where
  // only a remote run is slowed, by remote streams alone, and no Iperf-like jobs run.
  bool colocation = true;
  int iperf_every = 8;  // one Iperf-like job per this many Rodinia jobs, Poisson (ours)
  double iperf_min_s = 75, iperf_max_s = 255;  // its run, uniform (ours: the Rodinia jobs')
  // Every job's work (Rodinia and Iperf-like) × this (`--reading work=X`): 0.163 fits the
  // catalogue's run times to the makespan 002 measured for its Firmament baseline (Table 2, 128
  // jobs on four machines: 1145 s; ours 1141 s over seeds 1–10 with goals by job, 1147 s by
  // class). 1: the catalogue's (ours).
  double work_scale = 0.163;
  // "nodes=16,jobs=512", then ",network-only" in that world, ",goal=job" and ",work=X" off the
  // defaults.
  std::string Label() const;
};

// 002's two simulated scenarios: 16 nodes with 512 jobs, 128 nodes with 4,096; given a node
// count, one scenario of that many nodes with 002's 32 jobs a node.
std::vector<DisaggregationScenario> DisaggregationScenarios(std::optional<int> nodes = {});
// 002's prototype runs (Experiment 2, Tables 2–3: four machines, 128 and 512 jobs, the same
// warm-up and arrival rate): `--reading scenario=prototype`.
std::vector<DisaggregationScenario> DisaggregationPrototypeScenarios();
// The scenarios `args` names: its --reading, comma-separated keys ("" or scenario=simulation:
// 002's simulated pair, or one of --cluster-nodes; scenario=prototype: the prototype's pair,
// without --cluster-nodes; world=colocation (default) or world=network-only; goal=class
// (default) or goal=job; work=X).
[[nodiscard]] Expected<std::vector<DisaggregationScenario>> DisaggregationScenariosOf(
    const ExperimentArgs& args);
// drmaestro{"disaggregate":false}, drmaestro, drmaestro{"network_aware":true}, first-fit, best-fit.
std::span<const std::string_view> DisaggregationPolicies();

struct DisaggregationRun {
  std::string policy;
  std::string scenario;
  uint64_t seed = 0;
  double makespan_s = 0;
  double qos_violations = 0;
  double jobs_done = 0;
  double pending_s_mean = 0;
  double remote_jobs = 0;    // ran (last) with a remote GPU
  double gpu_util_mean = 0;  // time-mean over the GPUs, over the makespan (only the jobs use GPUs)
};

// What offline profiling (002's inference engine) tells drmaestro about `apps` of `catalog` (the
// experiment's physics catalogue, sharing apps as its apps) on `gpu`: noise-free seconds per
// query alone on a whole local GPU, and RemoteProfile's slowdown, sensitivity and share; in the
// co-location world also what each puts on its node's link (disk share + load) and how its run
// grows with that link's load (disk share × PhysicsOptions::link_stretch).
policy::JobProfiles ProfileJobs(const AppCatalog& catalog, const std::vector<std::string>& apps,
                                model::GpuModelId gpu, bool colocation = false);

[[nodiscard]] Expected<DisaggregationRun> RunDisaggregation(std::string_view policy,
                                                            const DisaggregationScenario& scenario,
                                                            uint64_t seed,
                                                            const AppCatalog& catalog);
// The metrics of a run, declared once: the JSON, the CLI table and the report come from here.
const report::MetricTable<DisaggregationRun>& DisaggregationTable();
// Means over seeds (DisaggregationTable().Mean); policy, scenario and seed of the first.
DisaggregationRun MeanOf(std::span<const DisaggregationRun> runs);

// The report: {experiment, seeds, results: [a row per scenario and policy]}, and an HTML page
// with, per scenario, a bar per policy for each charted metric (the defaults by short names:
// firmament-like, drmaestro+NA) and the table.
nlohmann::json DisaggregationJson(size_t seeds, std::span<const DisaggregationRun> means);
std::string DisaggregationHtml(size_t seeds, std::span<const DisaggregationRun> means);
// `tessera simulate --experiment disaggregation` (registered in experiments.cc).
[[nodiscard]] Expected<ExperimentOutput> RunDisaggregationExperiment(const ExperimentArgs& args,
                                                                     const Experiment& experiment);

// `tessera explain` in this experiment's (co-location) world, small: three nodes of two K80s,
// k80-0's CPU held by the warm-up, an NW job running on k80-1 with its GPU on k80-0 (loading
// both nodes' network), an Iperf-like job saturating k80-2's link, and five Rodinia-like jobs
// pending. Two cycles run; after each the policy prints its two flow networks (arcs per kind,
// costs) and each job's fate.
[[nodiscard]] Expected<Explanation> ExplainDisaggregation(const ExplainArgs& args);

}  // namespace tessera::sim
