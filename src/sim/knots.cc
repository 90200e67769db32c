#include "sim/knots.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "model/cluster.h"
#include "sim/engine.h"
#include "sim/physics.h"
#include "sim/world.h"

namespace tessera::sim {
namespace {

constexpr std::string_view kKnotsPolicies[] = {"whole-gpu", "knots-resag", "knots-cbp", "knots-pp"};
constexpr std::string_view kKnotsMixes[] = {"inference-heavy", "mixed", "batch-heavy"};

// The trace: its own stream, so every policy of a seed sees the same pods — batch jobs and
// inference pods shuffled, Poisson submissions over the window.
Expected<void> AddTrace(const KnotsScenario& scenario, uint64_t seed, model::GpuModelId gpu,
                        World& world) {
  const AppCatalog& catalog = world.physics.catalog();
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
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = app.footprint_mib, .models = {gpu}};
    if (serving) {
      w.slo_qps = scenario.slo_fraction * world.physics.IsolatedQps(app, gpu, -1, 1000);
      w.priority = scenario.inference_priority;
    }
    w.arrival_s = t;
    if (auto ok = world.engine->Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  return {};
}

// The run's figures from the engine's outcomes (seed 004's metrics).
KnotsRun Summarize(const EngineResult& r, int gpu_count) {
  KnotsRun run;
  int batch = 0, served = 0;
  for (const WorkloadOutcome& o : r.workloads) {
    run.oom_kills += o.oom_kills;
    const double end = o.end_s.value_or(r.stop_s);
    if (o.workload.slo_qps > 0) {
      ++served;
      run.inference_jct_s_mean += end - o.workload.arrival_s;
      const bool broke = o.failed || !o.end_s;
      run.qos_violations_run += broke || o.achieved_qps() < o.workload.slo_qps;
      // End to end: its queries waited while it was pending (004 ≈121).
      const double queries = static_cast<double>(o.workload.queries);
      run.qos_violations += broke || queries < o.workload.slo_qps * (end - o.workload.arrival_s);
    } else {
      ++batch;
      run.jct_s_mean += end - o.workload.arrival_s;
    }
  }
  if (batch > 0) run.jct_s_mean /= batch;
  if (served > 0) run.inference_jct_s_mean /= served;
  run.makespan_s = r.end_s - r.first_arrival_s;
  const double gpus = std::max(1, gpu_count);
  if (run.makespan_s > 0) run.gpu_util_mean = r.sm_activity_integral / (gpus * run.makespan_s);
  run.energy_j = r.energy_j;
  return run;
}

}  // namespace

std::span<const std::string_view> KnotsPolicies() { return kKnotsPolicies; }
std::span<const std::string_view> KnotsMixes() { return kKnotsMixes; }

Expected<KnotsReading> KnotsReading::Parse(std::string_view reading) {
  KnotsReading r;
  for (const std::string_view item : ReadingItems(reading)) {
    if (item == "load=heavy" || item == "load=even") {
      r.batch_heavy_factor = item == "load=heavy" ? 3 : 1;
    } else if (item == "priority=none" || item == "priority=inference") {
      r.inference_priority = item == "priority=inference" ? 1000 : 0;
    } else if (item == "batch=host" || item == "batch=gpu") {
      r.batch_host_time = item == "batch=host";
    } else {
      return Fail(
          "--reading: '{}' is not one of load=heavy|even, priority=none|inference, "
          "batch=host|gpu (experiment knots)",
          item);
    }
  }
  return r;
}

Expected<KnotsScenario> KnotsScenarioOf(std::string_view mix, const KnotsReading& reading) {
  KnotsScenario s;
  s.mix = std::string(mix);
  if (mix == "inference-heavy") {
    s.batch_jobs = 30;
    s.inference_pods = 60;
  } else if (mix == "batch-heavy") {
    s.batch_jobs = 80 * reading.batch_heavy_factor;
    s.inference_pods = 10 * reading.batch_heavy_factor;
  } else if (mix != "mixed") {
    return Fail("experiment knots: unknown mix '{}' (inference-heavy, mixed or batch-heavy)", mix);
  }
  s.inference_priority = reading.inference_priority;
  s.batch_host_time = reading.batch_host_time;
  return s;
}

Expected<KnotsRun> RunKnots(std::string_view policy_spec, const KnotsScenario& scenario,
                            uint64_t seed, const AppCatalog& full_catalog) {
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(scenario.gpu);
  if (!gpu) return Fail("experiment knots: unknown GPU model '{}'", scenario.gpu);
  AppCatalog catalog = SharingCatalog(full_catalog);
  if (!scenario.batch_host_time) {
    for (AppSpec& app : catalog.apps) {
      if (std::find(scenario.batch_apps.begin(), scenario.batch_apps.end(), app.key) ==
          scenario.batch_apps.end()) {
        continue;
      }
      app.fixed_s += app.host_s;
      app.host_s = 0;
    }
  }
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
  model::ClusterState cluster;
  for (int n = 0; n < scenario.nodes; ++n) {
    if (auto ok = cluster.AddNode(
            model::UniformNode(fmt::format("gpu{}", n), *gpu, 1, 32000, 128 * 1024));
        !ok) {
      return std::unexpected(ok.error());
    }
  }
  auto world = World::Build(catalog, std::move(cluster), {.policy = policy_spec, .seed = seed});
  if (!world) return std::unexpected(world.error());
  Engine& engine = *(*world)->engine;

  if (auto ok = AddTrace(scenario, seed, *gpu, **world); !ok) return std::unexpected(ok.error());
  KnotsRun run = Summarize(engine.Run(), (*world)->cluster.gpu_count());
  run.mix = scenario.mix;
  run.policy = std::string(policy_spec);
  run.seed = seed;
  return run;
}

const report::MetricTable<KnotsRun>& KnotsTable() {
  static const report::MetricTable<KnotsRun> table{
      .labels = {{"mix", "mix", 16, [](const KnotsRun& r) { return r.mix; }},
                 {"policy", "policy", 14, [](const KnotsRun& r) { return r.policy; }}},
      .metrics = {
          {"gpu_util_mean", &KnotsRun::gpu_util_mean, "SM %", 100, 1, 8, "",
           "GPU utilisation (SM activity)", "%"},
          {"jct_s_mean", &KnotsRun::jct_s_mean, "batch JCT", 1, 0, 10, "s",
           "Batch job completion time (mean)", "s"},
          {"energy_j", &KnotsRun::energy_j, "energy kJ", 1, 1, 10, "", "Energy", "kJ", 1000},
          {"qos_violations", &KnotsRun::qos_violations, "QoS viol", 1, 1, 8, "",
           "QoS violations (inference pods, end to end)", "pods"},
          {"qos_violations_run", &KnotsRun::qos_violations_run, "QoS run", 1, 1, 8},
          {"oom_kills", &KnotsRun::oom_kills, "OOM", 1, 1, 8, "", "OOM kills", "kills"},
          {"makespan_s", &KnotsRun::makespan_s, "makespan", 1, 0, 10, "s"},
          {"inference_jct_s_mean", &KnotsRun::inference_jct_s_mean, "infer JCT", 1, 0, 10, "s"}}};
  return table;
}

KnotsRun MeanOf(std::span<const KnotsRun> runs) { return KnotsTable().Mean(runs); }

nlohmann::json KnotsJson(size_t seeds, std::span<const KnotsRun> means) {
  return {{"experiment", "knots"}, {"seeds", seeds}, {"results", KnotsTable().Json(means)}};
}

std::string KnotsHtml(size_t seeds, std::span<const KnotsRun> means) {
  return report::PageOpen("tessera knots", "tessera simulate --experiment knots") +
         fmt::format(
             "<p>10 GPU nodes, batch jobs with usage bursts and latency-bound inference pods, "
             "in three mixes; means over {} seed(s) (seed 004; docs/results.md). The numbers "
             "are in <code>report.json</code>.</p>\n<div>\n",
             seeds) +
         KnotsTable().Bars(means, [](const KnotsRun& r) { return r.mix + " " + r.policy; }) +
         "</div>\n" + KnotsTable().Html(means) + report::PageClose();
}

Expected<ExperimentOutput> RunKnotsExperiment(const ExperimentArgs& args,
                                              const Experiment& experiment) {
  Expected<AppCatalog> catalog = CatalogOf(args);
  if (!catalog) return std::unexpected(catalog.error());
  const Expected<KnotsReading> reading = KnotsReading::Parse(args.reading);
  if (!reading) return std::unexpected(reading.error());
  std::vector<KnotsRun> means;
  std::string head;
  for (std::string_view mix : KnotsMixes()) {
    const Expected<KnotsScenario> scenario = KnotsScenarioOf(mix, *reading);
    if (!scenario) return std::unexpected(scenario.error());
    for (const std::string& policy : PoliciesOrDefault(args, experiment)) {
      Expected<KnotsRun> mean = MeanOverSeeds<KnotsRun>(
          args, fmt::format("knots: {} {}", mix, policy),
          [&](uint64_t seed) { return RunKnots(policy, *scenario, seed, *catalog); },
          [](std::span<const KnotsRun> runs) { return MeanOf(runs); });
      if (!mean) return std::unexpected(mean.error());
      means.push_back(std::move(*mean));
    }
    head += fmt::format("  {}: {} batch jobs and {} inference pods\n", mix, scenario->batch_jobs,
                        scenario->inference_pods);
  }
  const KnotsScenario base;
  ExperimentOutput out{.json = KnotsJson(args.seeds.size(), means)};
  out.table = fmt::format("experiment knots: {} x {}, pods over {:.0f} s, {} seed(s)\n{}\n",
                          base.nodes, base.gpu, base.submit_window_s, args.seeds.size(), head) +
              KnotsTable().Text(means);
  return WithReport(std::move(out), args.out, KnotsHtml(args.seeds.size(), means));
}

}  // namespace tessera::sim
