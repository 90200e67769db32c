#include "sim/disaggregation.h"

#include <fmt/core.h>

#include <algorithm>

#include "base/clock.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/job_profile.h"
#include "policy/registry.h"
#include "sim/engine.h"
#include "sim/physics.h"

namespace tessera::sim {
namespace {

constexpr std::string_view kPolicies[] = {R"(drmaestro{"disaggregate":false})", "drmaestro",
                                          R"(drmaestro{"network_aware":true})", "first-fit",
                                          "best-fit"};
constexpr int64_t kNodeCpuMilli = 160'000;      // 2 × 10 POWER8 cores × 8 threads (002)
constexpr int64_t kNodeMemoryMib = 512 << 10;   // 512 GB (002)
constexpr int64_t kJobCpuMilli = 8'000;         // ours
constexpr int64_t kJobMemoryMib = 32 << 10;     // ours
constexpr int64_t kWarmupMemoryMib = 64 << 10;  // ours
const char kWarmupApp[] = "cpu/warmup";

}  // namespace

std::string DisaggregationScenario::Label() const {
  return fmt::format("nodes={},jobs={}", nodes, jobs);
}

std::vector<DisaggregationScenario> DisaggregationScenarios() {
  DisaggregationScenario large;
  large.nodes = 128;
  large.jobs = 4096;
  return {DisaggregationScenario{}, large};
}

std::span<const std::string_view> DisaggregationPolicies() { return kPolicies; }

policy::JobProfiles ProfileJobs(const AppCatalog& catalog, const std::vector<std::string>& apps,
                                model::GpuModelId gpu) {
  const Physics physics(catalog, 0, {.noise_sd = 0});
  policy::JobProfiles profiles;
  for (const std::string& key : apps) {
    const AppSpec* app = catalog.Find(key);
    if (app == nullptr) continue;
    profiles[key] = {.seconds_per_query = {{gpu, 1 / physics.IsolatedQps(*app, gpu, -1, 1000)}},
                     .remote_slowdown = app->remote.Slowdown(0),
                     .network_sensitivity = app->remote.sensitivity(),
                     .network_share = app->remote.network_share};
  }
  return profiles;
}

Expected<DisaggregationRun> RunDisaggregation(std::string_view policy_spec,
                                              const DisaggregationScenario& scenario, uint64_t seed,
                                              const AppCatalog& full_catalog) {
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(scenario.gpu);
  if (!gpu) return Fail("experiment disaggregation: unknown GPU model '{}'", scenario.gpu);
  if (scenario.nodes < 2 || scenario.jobs < 1 || scenario.gpus_per_node < 1 ||
      !(scenario.arrival_rate > 0) || !(scenario.warmup_s >= 1) ||
      !(scenario.slack_max >= scenario.slack_min) || !(scenario.slack_min >= 0)) {
    return Fail("experiment disaggregation: bad scenario {}", scenario.Label());
  }
  const AppCatalog catalog = SharingCatalog(full_catalog);
  if (catalog.Find(kWarmupApp) == nullptr) {
    return Fail("experiment disaggregation: the catalogue's `sharing` list has no app '{}'",
                kWarmupApp);
  }
  if (scenario.apps.empty()) return Fail("experiment disaggregation: no apps");
  for (const std::string& key : scenario.apps) {
    const AppSpec* app = catalog.Find(key);
    if (app == nullptr || app->remote.empty()) {
      return Fail(
          "experiment disaggregation: the catalogue's `sharing` list has no app '{}' with a "
          "`remote` profile",
          key);
    }
  }
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(policy_spec);
  if (!spec) return std::unexpected(spec.error());

  Physics physics(catalog, seed);
  const policy::JobProfiles profiles = ProfileJobs(catalog, scenario.apps, *gpu);
  model::ClusterState cluster;
  for (int n = 0; n < scenario.nodes; ++n) {
    if (auto ok = cluster.AddNode(model::UniformNode(
            fmt::format("k80-{}", n), *gpu, scenario.gpus_per_node, kNodeCpuMilli, kNodeMemoryMib));
        !ok) {
      return std::unexpected(ok.error());
    }
  }
  Rng rng(seed);
  ManualClock clock;
  auto policy = policy::MakePolicy(
      spec->name, {.rng = &rng, .clock = &clock, .job_profiles = &profiles}, spec->options);
  if (!policy) return std::unexpected(policy.error());
  Engine engine(cluster, **policy, physics, rng, {.clock = &clock});

  model::WorkloadId id = 0;
  for (int i = 0; i < scenario.nodes / 2; ++i) {
    model::Workload w;
    w.id = ++id;
    w.name = fmt::format("warmup-{}", i);
    w.app = kWarmupApp;
    w.klass = model::WorkloadClass::kOffline;
    w.cpu_milli = kNodeCpuMilli;
    w.memory_mib = kWarmupMemoryMib;
    w.queries = static_cast<int64_t>(scenario.warmup_s);  // one query per second
    if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  const model::WorkloadId warmups = id;
  // The trace: its own stream, so every policy of a seed sees the same jobs.
  Rng trace(seed ^ 0x64726d61ULL);
  double t = 0;
  for (int i = 0; i < scenario.jobs; ++i) {
    t += trace.Exponential(scenario.arrival_rate);
    const AppSpec& app = *catalog.Find(scenario.apps[trace.Below(scenario.apps.size())]);
    model::Workload w;
    w.id = ++id;
    w.name = fmt::format("job-{}", i);
    w.app = app.key;
    w.klass = model::WorkloadClass::kOffline;
    w.cpu_milli = kJobCpuMilli;
    w.memory_mib = kJobMemoryMib;
    w.queries = app.queries_min + static_cast<int64_t>(trace.Below(static_cast<uint64_t>(
                                      app.queries_max - app.queries_min + 1)));
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = app.footprint_mib, .models = {*gpu}};
    const double alone = static_cast<double>(w.queries) / physics.IsolatedQps(app, *gpu, -1, 1000);
    w.goal_s = alone * (1 + trace.Uniform(scenario.slack_min, scenario.slack_max));
    w.goal_z = 1 + static_cast<int>(trace.Below(10));
    w.arrival_s = t;
    if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  const EngineResult r = engine.Run();

  DisaggregationRun run{
      .policy = std::string(policy_spec), .scenario = scenario.Label(), .seed = seed};
  double first = -1, last = 0;
  int counted = 0;
  for (const WorkloadOutcome& o : r.workloads) {
    if (o.workload.id <= warmups) continue;
    if (first < 0 || o.workload.arrival_s < first) first = o.workload.arrival_s;
    run.pending_s_mean += o.pending_s();
    ++counted;
    if (!o.end_s || o.failed) continue;
    run.jobs_done += 1;
    last = std::max(last, *o.end_s);
    run.remote_jobs += o.remote_slices > 0;
    run.qos_violations += *o.end_s - *o.start_s > o.workload.goal_s;
  }
  if (counted > 0) run.pending_s_mean /= counted;
  run.makespan_s = last - std::max(0.0, first);
  run.gpu_util_mean = r.gpu_util_mean;
  return run;
}

DisaggregationRun MeanOf(std::span<const DisaggregationRun> runs) {
  DisaggregationRun m;
  if (runs.empty()) return m;
  m.policy = runs.front().policy;
  m.scenario = runs.front().scenario;
  m.seed = runs.front().seed;
  const double n = static_cast<double>(runs.size());
  for (const DisaggregationRun& r : runs) {
    m.makespan_s += r.makespan_s / n;
    m.qos_violations += r.qos_violations / n;
    m.jobs_done += r.jobs_done / n;
    m.pending_s_mean += r.pending_s_mean / n;
    m.remote_jobs += r.remote_jobs / n;
    m.gpu_util_mean += r.gpu_util_mean / n;
  }
  return m;
}

}  // namespace tessera::sim
