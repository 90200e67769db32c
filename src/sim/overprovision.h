#pragma once
// The over-provisioning experiment (seed 003 §6): MLPerf SingleStream inference
// engines arrive one by one, uniformly every [5, 10] s, at one V100-32GB. Each asks for more GPU
// memory than it uses by an over-provisioning percentage (0 to 250 % in steps of 50 %): its
// request is its peak use × (1 + pct/100), so at 0 % a 7 GB engine asks for 7 GB (003 §6.1).
// What it really holds moves as data/apps.yaml's `sharing` apps state (sim/usage.h): a container
// start, a model load at half its memory, then its working set. Two mixes:
//
//   homogeneous     25 TensorFlow ssd-mobilenet engines of 1,024 queries (003 §6.1)
//   heterogeneous   the 25 engines of 003 Table 2, in an order drawn per seed
//
// Policies: whole-gpu (Kubernetes' device plugin), gpushare (Alibaba's extender: packs by
// request), resource-aware (003 §5: packs by use). Any registered policy may be named, with
// options (NAME{json}). Metrics per run: mean pending time (first bind − arrival), the p99 of
// end-to-end time (end − arrival), the GPU's mean memory used and SM activity over the makespan
// (003's "CUDA cores utilization"), its mean power and energy over the run, and OOM kills.
// Deterministic for (policy, mix, pct, seed).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "report/table.h"
#include "sim/apps.h"
#include "sim/experiment.h"
#include "sim/explain.h"
#include "sim/physics.h"
#include "sim/usage.h"

namespace tessera::sim {

struct SharingEngine {
  std::string app;  // key in the catalogue's `sharing` list
  int64_t queries = 0;
};

// The V100's power, two readings (docs/results.md, "overprovision"). `seed003` (default):
// 003 §4's own measurements on its V100 (Fig. 2's text): 41.5 W at 7.22 % CUDA-core utilisation
// (one engine per GPU) and 52.9 W at 49 % (gpushare), the line through both — 39.5 W idle,
// 27.3 W more per unit of SM load, 66.8 W fully loaded. `thesis`: the thesis's flat V100
// (Ch. 6.2: 40 W idle, +20 % loaded; sim/physics.h), which the other experiments keep.
// `--reading power=seed003|thesis`.
PhysicsOptions::PowerLine Seed003V100Power();

struct OverprovisionScenario {
  bool power_seed003 = true;  // false: the thesis's reading
  // Who crashes when the V100 runs out of memory (sim/usage.h): `oom=fit` (default), the
  // growers until the GPU fits; `oom=one`, one grower a sample, as before 2026-12-02.
  OomRule oom_rule = OomRule::kGrowersUntilFit;
  std::string gpu = "V100-32GB";
  double arrival_min_s = 5;
  double arrival_max_s = 10;
  std::vector<int> overprovision_pct = {0, 50, 100, 150, 200, 250};
  int homogeneous_engines = 25;  // 003 does not say; Table 2's mix has 25
  std::string homogeneous_app = "mlperf/tf/ssd-mobilenet";
  int64_t homogeneous_queries = 1024;
};

// The mixes, in report order, and their engines (before the per-seed shuffle).
std::span<const std::string_view> OverprovisionMixes();
[[nodiscard]] Expected<std::vector<SharingEngine>> MixEngines(
    std::string_view mix, const OverprovisionScenario& scenario);
// whole-gpu, gpushare, resource-aware.
std::span<const std::string_view> OverprovisionPolicies();
// What an engine of `app` asks for at `pct` % over-provisioning: ceil(peak use × (1 + pct/100)).
int64_t OverprovisionedRequestMib(const AppSpec& app, int pct);

struct OverprovisionRun {
  std::string policy;
  std::string mix;
  int overprovision_pct = 0;
  uint64_t seed = 0;
  double pending_s_mean = 0;
  double e2e_p99_s = 0;
  double gpu_mem_used_mean = 0;  // MiB, time-mean over the makespan
  double gpu_util_mean = 0;      // SM activity, 0..1, time-mean over the makespan
  double power_w_mean = 0;       // mean over the run (t = 0 to the last event)
  double energy_j = 0;           // over the run
  double oom_kills = 0;
  double makespan_s = 0;
  double engines_failed = 0;
};

[[nodiscard]] Expected<OverprovisionRun> RunOverprovision(std::string_view policy,
                                                          std::string_view mix, int pct,
                                                          const OverprovisionScenario& scenario,
                                                          uint64_t seed, const AppCatalog& catalog);
// The metrics of a run, declared once: the JSON, the CLI table and the report come from here.
const report::MetricTable<OverprovisionRun>& OverprovisionTable();
// The scenario a --reading asks for: "" or a comma-separated list of power=seed003|thesis and
// oom=fit|one; anything else is an Error naming the accepted keys.
[[nodiscard]] Expected<OverprovisionScenario> OverprovisionScenarioOf(std::string_view reading);
// Means over seeds (OverprovisionTable().Mean); policy, mix and pct of the first.
OverprovisionRun MeanOf(std::span<const OverprovisionRun> runs);

// The report: {experiment, seeds, results: [a row per mix, policy and percentage]}, and an
// HTML page with, per mix, a line per policy over the percentages for each charted metric.
nlohmann::json OverprovisionJson(size_t seeds, std::span<const OverprovisionRun> means);
std::string OverprovisionHtml(size_t seeds, std::span<const OverprovisionRun> means);
// `tessera simulate --experiment overprovision` (registered in experiments.cc).
[[nodiscard]] Expected<ExperimentOutput> RunOverprovisionExperiment(const ExperimentArgs& args,
                                                                    const Experiment& experiment);

// `tessera explain` for the policies that share GPUs by memory (seeds 003, 004): a V100-32GB
// node with 30 s of memory, SM and bandwidth series, as DCGM and the agent publish them: GPU 0
// holds two TF SSD-MobileNet engines that asked for 14,336 MiB each (100 % over-provisioned) and
// use about 7,000 each; GPU 1 one that asked for 24,576 MiB and is still growing. One more
// engine asks for 14,336 MiB, and the policy says which check let it in where.
[[nodiscard]] Expected<Explanation> ExplainOverprovision(const ExplainArgs& args);

}  // namespace tessera::sim
