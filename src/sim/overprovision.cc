#include "sim/overprovision.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/rng.h"
#include "base/stats.h"
#include "model/cluster.h"
#include "policy/registry.h"
#include "sim/engine.h"
#include "sim/physics.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {
namespace {

constexpr std::string_view kMixes[] = {"homogeneous", "heterogeneous"};
constexpr std::string_view kPolicies[] = {"whole-gpu", "gpushare", "resource-aware"};

// 003 Table 2: model, then (queries per engine, engines) twice.
struct TableRow {
  const char* app;
  int64_t queries[2];
  int engines[2];
};
constexpr TableRow kTable2[] = {
    {"mlperf/tf/mobilenet", {1024, 2048}, {2, 2}},
    {"mlperf/tf/mobilenet-quantized", {256, 512}, {2, 2}},
    {"mlperf/tf/resnet50", {4096, 8192}, {2, 2}},
    {"mlperf/tf/ssd-mobilenet", {128, 1024}, {3, 2}},
    {"mlperf/tf/ssd-mobilenet-quantized-finetuned", {64, 1024}, {2, 2}},
    {"mlperf/tf/ssd-mobilenet-symmetrically-quantized-finetuned", {512, 4096}, {2, 2}},
};

}  // namespace

std::span<const std::string_view> OverprovisionMixes() { return kMixes; }
std::span<const std::string_view> OverprovisionPolicies() { return kPolicies; }

Expected<std::vector<SharingEngine>> MixEngines(std::string_view mix,
                                                const OverprovisionScenario& scenario) {
  std::vector<SharingEngine> out;
  if (mix == "homogeneous") {
    for (int i = 0; i < scenario.homogeneous_engines; ++i) {
      out.push_back({scenario.homogeneous_app, scenario.homogeneous_queries});
    }
  } else if (mix == "heterogeneous") {
    for (const TableRow& row : kTable2) {
      for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < row.engines[k]; ++i) out.push_back({row.app, row.queries[k]});
      }
    }
  } else {
    return Fail("experiment overprovision: unknown mix '{}' (homogeneous or heterogeneous)", mix);
  }
  return out;
}

int64_t OverprovisionedRequestMib(const AppSpec& app, int pct) {
  return static_cast<int64_t>(std::ceil(app.usage.PeakMemoryMib() * (1 + pct / 100.0)));
}

Expected<OverprovisionRun> RunOverprovision(std::string_view policy_spec, std::string_view mix,
                                            int pct, const OverprovisionScenario& scenario,
                                            uint64_t seed, const AppCatalog& full_catalog) {
  if (pct < 0) return Fail("experiment overprovision: over-provisioning {} % is negative", pct);
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(scenario.gpu);
  if (!gpu) return Fail("experiment overprovision: unknown GPU model '{}'", scenario.gpu);
  Expected<std::vector<SharingEngine>> engines = MixEngines(mix, scenario);
  if (!engines) return std::unexpected(engines.error());
  // The experiment's own catalogue: the `sharing` apps, as its physics' `apps`.
  const AppCatalog catalog = SharingCatalog(full_catalog);
  for (const SharingEngine& e : *engines) {
    const AppSpec* app = catalog.Find(e.app);
    if (app == nullptr || app->usage.empty()) {
      return Fail(
          "experiment overprovision: the catalogue's `sharing` list has no app '{}' with a "
          "usage trajectory",
          e.app);
    }
  }
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(policy_spec);
  if (!spec) return std::unexpected(spec.error());

  Physics physics(catalog, seed);
  model::ClusterState cluster;
  if (auto ok = cluster.AddNode(model::UniformNode("v100", *gpu, 1, 40000, 132 * 1024)); !ok) {
    return std::unexpected(ok.error());
  }
  Rng rng(seed);
  ManualClock clock;
  telemetry::StaticTelemetry telemetry;
  auto policy = policy::MakePolicy(
      spec->name, {.rng = &rng, .clock = &clock, .telemetry = &telemetry}, spec->options);
  if (!policy) return std::unexpected(policy.error());
  Engine engine(cluster, **policy, physics, rng, {.telemetry = &telemetry, .clock = &clock});

  // The arrivals: their own stream, so every policy and percentage of a seed sees the same.
  Rng trace(seed ^ 0x0e7e4ULL);
  std::vector<SharingEngine> order = std::move(*engines);
  if (mix == "heterogeneous") {
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[trace.Below(i)]);
  }
  double t = 0;
  model::WorkloadId id = 1;
  for (const SharingEngine& e : order) {
    t += trace.Uniform(scenario.arrival_min_s, scenario.arrival_max_s);
    model::Workload w;
    w.id = id++;
    w.name = fmt::format("engine-{}", w.id);
    w.app = e.app;
    w.cpu_milli = 1000;
    w.memory_mib = 2048;
    w.queries = e.queries;
    w.gpu = {.count = 1,
             .milli = 1000,
             .memory_mib = OverprovisionedRequestMib(*catalog.Find(e.app), pct),
             .models = {*gpu}};
    w.arrival_s = t;
    if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  const EngineResult r = engine.Run();

  OverprovisionRun run{.policy = std::string(policy_spec),
                       .mix = std::string(mix),
                       .overprovision_pct = pct,
                       .seed = seed};
  std::vector<double> e2e;
  for (const WorkloadOutcome& o : r.workloads) {
    run.pending_s_mean += o.pending_s() / static_cast<double>(r.workloads.size());
    if (o.end_s) e2e.push_back(*o.end_s - o.workload.arrival_s);
    run.oom_kills += o.oom_kills;
    run.engines_failed += o.failed || !o.end_s;
  }
  run.e2e_p99_s = e2e.empty() ? 0 : Quantile(e2e, 0.99);
  run.makespan_s = r.end_s - r.first_arrival_s;
  const double gpus = std::max(1, cluster.gpu_count());
  if (run.makespan_s > 0) run.gpu_mem_used_mean = r.gpu_memory_integral / (gpus * run.makespan_s);
  // 003's "CUDA cores utilization" (7.22 % for one engine, §4) is what the SMs compute, not
  // the engine-active time (every SingleStream engine keeps the engine active: data/apps.yaml's
  // fixed_active): the SM activity.
  if (run.makespan_s > 0) run.gpu_util_mean = r.sm_activity_integral / (gpus * run.makespan_s);
  run.energy_j = r.energy_j;
  run.power_w_mean = r.power_w_mean;
  return run;
}

OverprovisionRun MeanOf(std::span<const OverprovisionRun> runs) {
  OverprovisionRun m;
  if (runs.empty()) return m;
  m.policy = runs.front().policy;
  m.mix = runs.front().mix;
  m.overprovision_pct = runs.front().overprovision_pct;
  m.seed = runs.front().seed;
  const double n = static_cast<double>(runs.size());
  for (const OverprovisionRun& r : runs) {
    m.pending_s_mean += r.pending_s_mean / n;
    m.e2e_p99_s += r.e2e_p99_s / n;
    m.gpu_mem_used_mean += r.gpu_mem_used_mean / n;
    m.gpu_util_mean += r.gpu_util_mean / n;
    m.power_w_mean += r.power_w_mean / n;
    m.energy_j += r.energy_j / n;
    m.oom_kills += r.oom_kills / n;
    m.makespan_s += r.makespan_s / n;
    m.engines_failed += r.engines_failed / n;
  }
  return m;
}

}  // namespace tessera::sim
