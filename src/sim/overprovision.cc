#include "sim/overprovision.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "base/stats.h"
#include "model/cluster.h"
#include "sim/engine.h"
#include "sim/explain.h"
#include "sim/physics.h"
#include "sim/world.h"

namespace tessera::sim {
namespace {

constexpr std::string_view kMixes[] = {"homogeneous", "heterogeneous"};
constexpr std::string_view kOverprovisionPolicies[] = {"whole-gpu", "gpushare", "resource-aware"};

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

PhysicsOptions::PowerLine Seed003V100Power() {
  // 003 §4 (Fig. 2): (utilisation, watts) alone and shared.
  constexpr double kAloneUtil = 0.0722, kAloneW = 41.5, kSharedUtil = 0.49, kSharedW = 52.9;
  const double slope = (kSharedW - kAloneW) / (kSharedUtil - kAloneUtil);
  const double idle = kAloneW - slope * kAloneUtil;
  return {idle, idle + slope};
}

Expected<OverprovisionScenario> OverprovisionScenarioOf(std::string_view reading) {
  OverprovisionScenario scenario;
  for (const std::string_view item : ReadingItems(reading)) {
    if (item == "power=seed003" || item == "power=thesis") {
      scenario.power_seed003 = item == "power=seed003";
    } else if (item == "oom=fit" || item == "oom=one") {
      scenario.oom_rule = item == "oom=fit" ? OomRule::kGrowersUntilFit : OomRule::kOneGrower;
    } else {
      return Fail(
          "--reading: '{}' is not one of power=seed003|thesis, oom=fit|one (experiment "
          "overprovision)",
          item);
    }
  }
  return scenario;
}

std::span<const std::string_view> OverprovisionMixes() { return kMixes; }
std::span<const std::string_view> OverprovisionPolicies() { return kOverprovisionPolicies; }

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

namespace {

// The arrivals: their own stream, so every policy and percentage of a seed sees the same.
Expected<void> AddArrivals(Engine& engine, std::vector<SharingEngine> order, std::string_view mix,
                           int pct, const OverprovisionScenario& scenario, uint64_t seed,
                           const AppCatalog& catalog, model::GpuModelId gpu) {
  Rng trace(seed ^ 0x0e7e4ULL);
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
             .models = {gpu}};
    w.arrival_s = t;
    if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  return {};
}

}  // namespace

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
  model::ClusterState cluster;
  if (auto ok = cluster.AddNode(model::UniformNode("v100", *gpu, 1, 40000, 132 * 1024)); !ok) {
    return std::unexpected(ok.error());
  }
  PhysicsOptions physics;
  if (scenario.power_seed003) {
    physics.power_by_gpu[scenario.gpu] = Seed003V100Power();
  }
  auto world = World::Build(catalog, std::move(cluster),
                            {.policy = policy_spec,
                             .seed = seed,
                             .physics = physics,
                             .engine = {.oom_rule = scenario.oom_rule}});
  if (!world) return std::unexpected(world.error());
  Engine& engine = *(*world)->engine;

  if (auto ok = AddArrivals(engine, std::move(*engines), mix, pct, scenario, seed, catalog, *gpu);
      !ok) {
    return std::unexpected(ok.error());
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
  const double gpus = std::max(1, (*world)->cluster.gpu_count());
  if (run.makespan_s > 0) run.gpu_mem_used_mean = r.gpu_memory_integral / (gpus * run.makespan_s);
  // 003's "CUDA cores utilization" (7.22 % for one engine, §4) is what the SMs compute, not
  // the engine-active time (every SingleStream engine keeps the engine active: data/apps.yaml's
  // fixed_active): the SM activity.
  if (run.makespan_s > 0) run.gpu_util_mean = r.sm_activity_integral / (gpus * run.makespan_s);
  run.energy_j = r.energy_j;
  run.power_w_mean = r.power_w_mean;
  return run;
}

const report::MetricTable<OverprovisionRun>& OverprovisionTable() {
  using Run = OverprovisionRun;
  static const report::MetricTable<Run> table{
      .labels = {{"mix", "mix", 14, [](const Run& r) { return r.mix; }},
                 {"policy", "policy", 16, [](const Run& r) { return r.policy; }},
                 {"overprovision_pct", "over%", 5,
                  [](const Run& r) { return int64_t{r.overprovision_pct}; }}},
      .metrics = {
          {"pending_s_mean", &Run::pending_s_mean, "pending s", 1, 1, 10, "", "Pending time (mean)",
           "s"},
          {"e2e_p99_s", &Run::e2e_p99_s, "e2e p99 s", 1, 1, 10, "", "End-to-end time (p99)", "s"},
          {"gpu_mem_used_mean", &Run::gpu_mem_used_mean, "mem GiB", 1, 1, 8, "",
           "GPU memory used (mean)", "GiB", 1024},
          {"gpu_util_mean", &Run::gpu_util_mean, "util %", 100, 1, 7, "", "GPU utilisation (mean)",
           "%"},
          {"power_w_mean", &Run::power_w_mean, "power W", 1, 1, 8, "", "Power (mean)", "W"},
          {"energy_j", &Run::energy_j, "energy kJ", 1, 1, 10, "", "Energy", "kJ", 1000},
          {"oom_kills", &Run::oom_kills, "OOM", 1, 1, 6},
          {"makespan_s", &Run::makespan_s, "makespan s", 1, 0, 10},
          {"engines_failed", &Run::engines_failed, "failed", 1, 1, 6}}};
  return table;
}

OverprovisionRun MeanOf(std::span<const OverprovisionRun> runs) {
  return OverprovisionTable().Mean(runs);
}

nlohmann::json OverprovisionJson(size_t seeds, std::span<const OverprovisionRun> means) {
  return {{"experiment", "overprovision"},
          {"seeds", seeds},
          {"results", OverprovisionTable().Json(means)}};
}

std::string OverprovisionHtml(size_t seeds, std::span<const OverprovisionRun> means) {
  using Run = OverprovisionRun;
  std::string html =
      report::PageOpen("tessera overprovision", "tessera simulate --experiment overprovision") +
      fmt::format(
          "<p>One V100-32GB, MLPerf SingleStream engines arriving every 5–10 s, each asking for "
          "its memory use × (1 + over-provisioning); means over {} seed(s) (seed 003 §6; "
          "docs/results.md). The numbers are in <code>report.json</code>.</p>\n",
          seeds);
  for (std::string_view mix : OverprovisionMixes()) {
    std::vector<Run> rows;
    for (const Run& m : means) {
      if (m.mix == mix) rows.push_back(m);
    }
    if (rows.empty()) continue;
    html += fmt::format("<h2>{} mix</h2>\n<div>\n", report::Escape(mix));
    html += OverprovisionTable().Lines(
        rows, "memory over-provisioning %", [](const Run& r) { return r.overprovision_pct; },
        [](const Run& r) { return r.policy; }, {.x_max_at_least = 50, .markers = true});
    html += "</div>\n" + OverprovisionTable().Html(rows);
  }
  return html + report::PageClose();
}

Expected<ExperimentOutput> RunOverprovisionExperiment(const ExperimentArgs& args,
                                                      const Experiment& experiment) {
  Expected<AppCatalog> catalog = CatalogOf(args);
  if (!catalog) return std::unexpected(catalog.error());
  Expected<OverprovisionScenario> read = OverprovisionScenarioOf(args.reading);
  if (!read) return std::unexpected(read.error());
  const OverprovisionScenario& scenario = *read;
  std::vector<OverprovisionRun> means;
  for (std::string_view mix : OverprovisionMixes()) {
    for (const std::string& policy : PoliciesOrDefault(args, experiment)) {
      for (int pct : scenario.overprovision_pct) {
        Expected<OverprovisionRun> mean = MeanOverSeeds<OverprovisionRun>(
            args, fmt::format("overprovision: {} {} {}%", mix, policy, pct),
            [&](uint64_t seed) {
              return RunOverprovision(policy, mix, pct, scenario, seed, *catalog);
            },
            [](std::span<const OverprovisionRun> runs) { return MeanOf(runs); });
        if (!mean) return std::unexpected(mean.error());
        means.push_back(std::move(*mean));
      }
    }
  }
  ExperimentOutput out{.json = OverprovisionJson(args.seeds.size(), means)};
  out.table = fmt::format(
                  "experiment overprovision: one {}, MLPerf SingleStream engines arriving every "
                  "{:.0f}-{:.0f} s, {} seed(s), power as {}\n\n",
                  scenario.gpu, scenario.arrival_min_s, scenario.arrival_max_s, args.seeds.size(),
                  scenario.power_seed003 ? "seed 003 measured it" : "the thesis reads it") +
              OverprovisionTable().Text(means);
  return WithReport(std::move(out), args.out, OverprovisionHtml(args.seeds.size(), means));
}

Expected<Explanation> ExplainOverprovision(const ExplainArgs& f) {
  std::string out;
  constexpr int64_t kRequest = 14336;
  const std::string app = f.app_set ? f.app : "tf/ssd-mobilenet";
  model::ClusterState node;
  const model::GpuModelId v100 = *model::FindGpuModel("V100-32GB");
  if (auto ok = node.AddNode(model::UniformNode("v100-0", v100, 2, 64000, 128 << 10)); !ok) {
    return std::unexpected(ok.error());
  }
  auto world = World::Build(*f.catalog, std::move(node),
                            {.policy = f.policy, .seed = f.seed, .start_s = 29.5});
  if (!world) return std::unexpected(world.error());
  model::ClusterState& cluster = (*world)->cluster;
  policy::Policy& policy = *(*world)->policy;
  auto engine = [&](model::WorkloadId id, int64_t request) {
    model::Workload w;
    w.id = id;
    w.name = fmt::format("engine-{}", id);
    w.app = app;
    w.cpu_milli = 1000;
    w.memory_mib = 2048;
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = request};
    return w;
  };
  // 30 one-second samples ending at t = 29, with a little jitter a real series has.
  telemetry::StaticTelemetry& telemetry = (*world)->telemetry;
  Rng jitter(f.seed);
  std::vector<double> gpu0(30, 0), gpu0_sm(30, 0), gpu0_bw(30, 0);
  for (model::WorkloadId id : {1, 2}) {
    const model::Workload w = engine(id, kRequest);
    if (auto ok = cluster.Place(w, {w.id, 0, {{0, 1000, 0, /*best_effort=*/true}}}); !ok) {
      return std::unexpected(ok.error());
    }
    for (int t = 0; t < 30; ++t) {
      const double mib = 7000 + jitter.Uniform(-150, 150);
      const double sm = 0.15 + jitter.Uniform(-0.05, 0.05);
      const double bw = 0.10 + jitter.Uniform(-0.03, 0.03);
      gpu0[static_cast<size_t>(t)] += mib;
      gpu0_sm[static_cast<size_t>(t)] += sm;
      gpu0_bw[static_cast<size_t>(t)] += bw;
      telemetry.AddMemorySample(w.name, t, mib);
      telemetry.AddSmActivitySample(w.name, t, sm);
      telemetry.AddBandwidthSample(w.name, t, bw);
    }
  }
  const model::Workload grower = engine(3, 24576);
  const model::PartitionIndex p1 = model::ClusterState::PartitionOf(1, 0);
  if (auto ok = cluster.Place(grower, {grower.id, 0, {{p1, 1000, 0, /*best_effort=*/true}}}); !ok) {
    return std::unexpected(ok.error());
  }
  for (int t = 0; t < 30; ++t) {
    const auto at = static_cast<size_t>(t);
    telemetry.AddMemorySample(cluster.gpu(0).uuid, t, gpu0[at]);
    telemetry.AddSmActivitySample(cluster.gpu(0).uuid, t, gpu0_sm[at]);
    telemetry.AddBandwidthSample(cluster.gpu(0).uuid, t, gpu0_bw[at]);
    const double mib = 4000 + 400.0 * t;  // a model still loading: 4,000 → 15,600 MiB
    const double sm = 0.05 + 0.01 * t, bw = 0.05 + 0.005 * t;
    for (const std::string& key : {cluster.gpu(1).uuid, grower.name}) {
      telemetry.AddMemorySample(key, t, mib);
      telemetry.AddSmActivitySample(key, t, sm);
      telemetry.AddBandwidthSample(key, t, bw);
    }
  }
  policy.AfterCycle(cluster);  // the policies read the telemetry as they would each cycle
  const model::Workload x = engine(4, kRequest);
  out += fmt::format(
      "scenario: one V100-32GB node (seeds 003 and 004), 30 s of memory, SM and bandwidth series.\n"
      "  GPU 0: engine-1 and engine-2 ({}), each asked for {} MiB and uses about 7000\n"
      "  GPU 1: engine-3 asked for 24576 MiB; its use grows 4000 -> 15600 MiB (still loading)\n"
      "{} arrives asking for {} MiB.\n\n",
      app, static_cast<long long>(kRequest), x.name, static_cast<long long>(kRequest));
  out += policy.Explain(x, cluster);
  return Explanation{.text = std::move(out)};
}

}  // namespace tessera::sim
