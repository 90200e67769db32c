#include "sim/knots.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/registry.h"
#include "sim/engine.h"
#include "sim/physics.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {
namespace {

constexpr std::string_view kPolicies[] = {"whole-gpu", "knots-resag", "knots-cbp", "knots-pp"};

}  // namespace

std::span<const std::string_view> KnotsPolicies() { return kPolicies; }

Expected<KnotsRun> RunKnots(std::string_view policy_spec, const KnotsScenario& scenario,
                            uint64_t seed, const AppCatalog& full_catalog) {
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(scenario.gpu);
  if (!gpu) return Fail("experiment knots: unknown GPU model '{}'", scenario.gpu);
  const AppCatalog catalog = SharingCatalog(full_catalog);
  for (const auto* list : {&scenario.batch_apps, &scenario.inference_apps}) {
    if (list->empty()) return Fail("experiment knots: no batch or no inference apps");
    for (const std::string& key : *list) {
      const AppSpec* app = catalog.Find(key);
      if (app == nullptr || app->usage.empty()) {
        return Fail(
            "experiment knots: the catalogue's `sharing` list has no app '{}' with a usage "
            "trajectory",
            key);
      }
    }
  }
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(policy_spec);
  if (!spec) return std::unexpected(spec.error());

  Physics physics(catalog, seed);
  model::ClusterState cluster;
  for (int n = 0; n < scenario.nodes; ++n) {
    if (auto ok = cluster.AddNode(
            model::UniformNode(fmt::format("gpu{}", n), *gpu, 1, 32000, 128 * 1024));
        !ok) {
      return std::unexpected(ok.error());
    }
  }
  Rng rng(seed);
  ManualClock clock;
  telemetry::StaticTelemetry telemetry;
  auto policy = policy::MakePolicy(
      spec->name, {.rng = &rng, .clock = &clock, .telemetry = &telemetry}, spec->options);
  if (!policy) return std::unexpected(policy.error());
  Engine engine(cluster, **policy, physics, rng, {.telemetry = &telemetry, .clock = &clock});

  // The trace: its own stream, so every policy of a seed sees the same pods.
  Rng trace(seed ^ 0x6b6e6f74ULL);
  const int total = scenario.batch_jobs + scenario.inference_pods;
  std::vector<char> inference(static_cast<size_t>(total), 0);
  for (int i = 0; i < scenario.inference_pods; ++i) inference[static_cast<size_t>(i)] = 1;
  for (size_t i = inference.size(); i > 1; --i) {
    std::swap(inference[i - 1], inference[trace.Below(i)]);
  }
  double t = 0;
  for (int i = 0; i < total; ++i) {
    t += trace.Exponential(total / scenario.submit_window_s);
    const bool serving = inference[static_cast<size_t>(i)];
    const std::vector<std::string>& apps = serving ? scenario.inference_apps : scenario.batch_apps;
    const AppSpec& app = *catalog.Find(apps[trace.Below(apps.size())]);
    model::Workload w;
    w.id = i + 1;
    w.name = fmt::format("{}-{}", serving ? "infer" : "batch", w.id);
    w.app = app.key;
    w.klass = serving ? model::WorkloadClass::kOnline : model::WorkloadClass::kOffline;
    w.cpu_milli = 2000;
    w.memory_mib = 4096;
    w.queries = app.queries_min + static_cast<int64_t>(trace.Below(static_cast<uint64_t>(
                                      app.queries_max - app.queries_min + 1)));
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = app.footprint_mib, .models = {*gpu}};
    if (serving) w.slo_qps = scenario.slo_fraction * physics.IsolatedQps(app, *gpu, -1, 1000);
    w.arrival_s = t;
    if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  const EngineResult r = engine.Run();

  KnotsRun run{.policy = std::string(policy_spec), .seed = seed};
  int batch = 0, served = 0;
  for (const WorkloadOutcome& o : r.workloads) {
    run.oom_kills += o.oom_kills;
    const double end = o.end_s.value_or(r.stop_s);
    if (o.workload.slo_qps > 0) {
      ++served;
      run.inference_jct_s_mean += end - o.workload.arrival_s;
      run.qos_violations += o.failed || !o.end_s || o.achieved_qps() < o.workload.slo_qps;
    } else {
      ++batch;
      run.jct_s_mean += end - o.workload.arrival_s;
    }
  }
  if (batch > 0) run.jct_s_mean /= batch;
  if (served > 0) run.inference_jct_s_mean /= served;
  run.makespan_s = r.end_s - r.first_arrival_s;
  const double gpus = std::max(1, cluster.gpu_count());
  if (run.makespan_s > 0) run.gpu_util_mean = r.sm_activity_integral / (gpus * run.makespan_s);
  run.energy_j = r.energy_j;
  return run;
}

KnotsRun MeanOf(std::span<const KnotsRun> runs) {
  KnotsRun m;
  if (runs.empty()) return m;
  m.policy = runs.front().policy;
  m.seed = runs.front().seed;
  const double n = static_cast<double>(runs.size());
  for (const KnotsRun& r : runs) {
    m.gpu_util_mean += r.gpu_util_mean / n;
    m.jct_s_mean += r.jct_s_mean / n;
    m.energy_j += r.energy_j / n;
    m.qos_violations += r.qos_violations / n;
    m.oom_kills += r.oom_kills / n;
    m.makespan_s += r.makespan_s / n;
    m.inference_jct_s_mean += r.inference_jct_s_mean / n;
  }
  return m;
}

}  // namespace tessera::sim
