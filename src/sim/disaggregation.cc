#include "sim/disaggregation.h"

#include <fmt/core.h>

#include <algorithm>

#include "base/rng.h"
#include "model/cluster.h"
#include "policy/drmaestro.h"
#include "policy/job_profile.h"
#include "sim/engine.h"
#include "sim/explain.h"
#include "sim/physics.h"
#include "sim/world.h"

namespace tessera::sim {
namespace {

// The default policies, each with the short name its bars carry in the report.
struct DefaultPolicy {
  std::string_view spec;
  std::string_view bar;
};
constexpr DefaultPolicy kDefaults[] = {{R"(drmaestro{"disaggregate":false})", "firmament-like"},
                                       {"drmaestro", "drmaestro"},
                                       {R"(drmaestro{"network_aware":true})", "drmaestro+NA"},
                                       {"first-fit", "first-fit"},
                                       {"best-fit", "best-fit"}};
constexpr std::string_view kDisaggregationPolicies[] = {
    kDefaults[0].spec, kDefaults[1].spec, kDefaults[2].spec, kDefaults[3].spec, kDefaults[4].spec};

// A bar's name: the default's short one, or the policy as given.
std::string BarName(const std::string& policy) {
  for (const DefaultPolicy& d : kDefaults) {
    if (d.spec == policy) return std::string(d.bar);
  }
  return policy;
}
constexpr int64_t kNodeCpuMilli = 160'000;      // 2 × 10 POWER8 cores × 8 threads (002)
constexpr int64_t kNodeMemoryMib = 512 << 10;   // 512 GB (002)
constexpr int64_t kJobCpuMilli = 8'000;         // ours
constexpr int64_t kJobMemoryMib = 32 << 10;     // ours
constexpr int64_t kWarmupMemoryMib = 64 << 10;  // ours
const char kWarmupApp[] = "cpu/warmup";
const char kIperfApp[] = "cpu/iperf";

// The scenario's numbers are sane and the catalogue has its apps.
Expected<void> CheckScenario(const DisaggregationScenario& scenario, const AppCatalog& catalog) {
  if (scenario.nodes < 2 || scenario.jobs < 1 || scenario.gpus_per_node < 1 ||
      !(scenario.arrival_rate > 0) || !(scenario.warmup_s >= 1) ||
      !(scenario.slack_max >= scenario.slack_min) || !(scenario.slack_min >= 0) ||
      scenario.iperf_every < 1 || !(scenario.iperf_min_s >= 1) ||
      !(scenario.iperf_max_s >= scenario.iperf_min_s) || !(scenario.work_scale > 0)) {
    return Fail("experiment disaggregation: bad scenario {}", scenario.Label());
  }
  for (const char* key : {kWarmupApp, kIperfApp}) {
    if (key == kIperfApp && !scenario.colocation) continue;
    if (catalog.Find(key) == nullptr) {
      return Fail("experiment disaggregation: the catalogue's `sharing` list has no app '{}'", key);
    }
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
  return {};
}

// The Iperf-like jobs of the co-location world: one per `iperf_every` Rodinia jobs, Poisson at
// arrival_rate / iperf_every from t = 0, each CPU-only (8 threads, 32 GiB, ours) for
// U[iperf_min_s, iperf_max_s]; ids after `last`. Their own stream: the Rodinia jobs' is the same
// in both worlds.
Expected<void> AddIperfJobs(const DisaggregationScenario& scenario, uint64_t seed,
                            model::WorkloadId last, World& world) {
  Rng trace(seed ^ 0x69706572ULL);
  double t = 0;
  for (int i = 0; i < scenario.jobs / scenario.iperf_every; ++i) {
    t += trace.Exponential(scenario.arrival_rate / scenario.iperf_every);
    model::Workload w;
    w.id = ++last;
    w.name = fmt::format("iperf-{}", i);
    w.app = kIperfApp;
    w.klass = model::WorkloadClass::kOffline;
    w.cpu_milli = kJobCpuMilli;
    w.memory_mib = kJobMemoryMib;
    w.queries = std::max<int64_t>(
        1, std::llround(scenario.work_scale *
                        trace.Uniform(scenario.iperf_min_s, scenario.iperf_max_s)));
    w.arrival_s = t;
    if (auto ok = world.engine->Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  return {};
}

// The warm-up (one CPU-only job per two nodes, at t = 0), then the jobs: their own stream, so
// every policy of a seed sees the same. Returns the last warm-up's id.
Expected<model::WorkloadId> AddJobs(const DisaggregationScenario& scenario, uint64_t seed,
                                    model::GpuModelId gpu, World& world) {
  const AppCatalog& catalog = world.physics.catalog();
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
    if (auto ok = world.engine->Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  const model::WorkloadId warmups = id;
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
    const int64_t drawn = app.queries_min + static_cast<int64_t>(trace.Below(static_cast<uint64_t>(
                                                app.queries_max - app.queries_min + 1)));
    w.queries =
        std::max<int64_t>(1, std::llround(scenario.work_scale * static_cast<double>(drawn)));
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = app.footprint_mib, .models = {gpu}};
    const double rate = world.physics.IsolatedQps(app, gpu, -1, 1000);
    // Drawn under either goal, so that both readings see the same jobs.
    const double slack = 1 + trace.Uniform(scenario.slack_min, scenario.slack_max);
    w.goal_s = scenario.goal == DisaggregationScenario::Goal::kJob
                   ? static_cast<double>(w.queries) / rate * slack
                   : scenario.work_scale * 0.5 *
                         static_cast<double>(app.queries_min + app.queries_max) / rate;
    w.goal_z = 1 + static_cast<int>(trace.Below(10));
    w.arrival_s = t;
    if (auto ok = world.engine->Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  if (scenario.colocation) {
    if (auto ok = AddIperfJobs(scenario, seed, id, world); !ok) return std::unexpected(ok.error());
  }
  return warmups;
}

// The figures over the jobs (the warm-up's ids are up to `warmups`).
DisaggregationRun Summarize(const EngineResult& r, model::WorkloadId warmups) {
  DisaggregationRun run;
  double first = -1, last = 0;
  int counted = 0;
  for (const WorkloadOutcome& o : r.workloads) {
    if (o.workload.id <= warmups || o.workload.app == kIperfApp) continue;
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
  // The engine's mean runs to its last completion, the warm-up's when the jobs end first; the
  // GPU time is all the jobs', inside their makespan.
  const double engine_span = r.end_s - r.first_arrival_s;
  run.gpu_util_mean =
      run.makespan_s > 0 ? r.gpu_util_mean * engine_span / run.makespan_s : r.gpu_util_mean;
  return run;
}

}  // namespace

std::string DisaggregationScenario::Label() const {
  const std::string work = work_scale == DisaggregationScenario{}.work_scale
                               ? ""
                               : fmt::format(",work={:g}", work_scale);
  return fmt::format("nodes={},jobs={}{}{}{}", nodes, jobs, colocation ? "" : ",network-only",
                     goal == Goal::kJob ? ",goal=job" : "", work);
}

std::vector<DisaggregationScenario> DisaggregationScenarios(std::optional<int> nodes) {
  if (nodes) {
    DisaggregationScenario one;
    one.jobs = one.jobs / one.nodes * *nodes;
    one.nodes = *nodes;
    return {one};
  }
  DisaggregationScenario large;
  large.nodes = 128;
  large.jobs = 4096;
  return {DisaggregationScenario{}, large};
}

std::vector<DisaggregationScenario> DisaggregationPrototypeScenarios() {
  DisaggregationScenario small, large;
  small.nodes = large.nodes = 4;
  small.jobs = 128;
  large.jobs = 512;
  return {small, large};
}

Expected<std::vector<DisaggregationScenario>> DisaggregationScenariosOf(
    const ExperimentArgs& args) {
  const std::optional<int> nodes =
      args.cluster_nodes_given ? std::optional<int>(args.cluster_nodes) : std::nullopt;
  bool prototype = false, colocation = true;
  auto goal = DisaggregationScenario::Goal::kClass;
  double work_scale = DisaggregationScenario{}.work_scale;
  for (const std::string_view item : ReadingItems(args.reading)) {
    if (item == "scenario=simulation" || item == "scenario=prototype") {
      prototype = item == "scenario=prototype";
    } else if (item == "world=colocation" || item == "world=network-only") {
      colocation = item == "world=colocation";
    } else if (item == "goal=class" || item == "goal=job") {
      goal = item == "goal=job" ? DisaggregationScenario::Goal::kJob
                                : DisaggregationScenario::Goal::kClass;
    } else if (!(item.starts_with("work=") &&
                 ReadingNumberIn(item.substr(5), 0.01, 10, work_scale))) {
      return Fail(
          "--reading: '{}' is not one of scenario=simulation|prototype, "
          "world=colocation|network-only, goal=class|job, work=X (X in 0.01..10) (experiment "
          "disaggregation)",
          item);
    }
  }
  if (prototype && nodes) {
    return Fail(
        "--cluster-nodes does not apply to --reading scenario=prototype (002's four machines)");
  }
  std::vector<DisaggregationScenario> scenarios =
      prototype ? DisaggregationPrototypeScenarios() : DisaggregationScenarios(nodes);
  for (DisaggregationScenario& s : scenarios) {
    s.colocation = colocation;
    s.goal = goal;
    s.work_scale = work_scale;
  }
  return scenarios;
}

std::span<const std::string_view> DisaggregationPolicies() { return kDisaggregationPolicies; }

policy::JobProfiles ProfileJobs(const AppCatalog& catalog, const std::vector<std::string>& apps,
                                model::GpuModelId gpu, bool colocation) {
  const Physics physics(catalog, 0, {.noise_sd = 0});
  policy::JobProfiles profiles;
  for (const std::string& key : apps) {
    const AppSpec* app = catalog.Find(key);
    if (app == nullptr) continue;
    policy::JobProfile& p = profiles[key];
    p.remote_slowdown = app->remote.Slowdown(0);
    p.network_sensitivity = app->remote.sensitivity();
    p.network_share = app->remote.network_share;
    if (app->compute_s + app->memory_s > 0) {  // a CPU-only job has no GPU run time to profile
      p.seconds_per_query = {{gpu, 1 / physics.IsolatedQps(*app, gpu, -1, 1000)}};
    }
    if (colocation) {
      p.link_load = app->link.disk_share + app->link.load;
      p.local_sensitivity = app->link.disk_share * PhysicsOptions{}.link_stretch;
    }
  }
  return profiles;
}

Expected<DisaggregationRun> RunDisaggregation(std::string_view policy_spec,
                                              const DisaggregationScenario& scenario, uint64_t seed,
                                              const AppCatalog& full_catalog) {
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(scenario.gpu);
  if (!gpu) return Fail("experiment disaggregation: unknown GPU model '{}'", scenario.gpu);
  const AppCatalog catalog = SharingCatalog(full_catalog);
  if (auto ok = CheckScenario(scenario, catalog); !ok) return std::unexpected(ok.error());
  std::vector<std::string> profiled = scenario.apps;
  if (scenario.colocation) profiled.push_back(kIperfApp);
  const policy::JobProfiles profiles = ProfileJobs(catalog, profiled, *gpu, scenario.colocation);
  model::ClusterState cluster;
  for (int n = 0; n < scenario.nodes; ++n) {
    if (auto ok = cluster.AddNode(model::UniformNode(
            fmt::format("k80-{}", n), *gpu, scenario.gpus_per_node, kNodeCpuMilli, kNodeMemoryMib));
        !ok) {
      return std::unexpected(ok.error());
    }
  }
  WorldOptions options{
      .policy = policy_spec, .seed = seed, .publish_telemetry = false, .job_profiles = &profiles};
  options.physics.link_colocation = scenario.colocation;
  options.engine.rerate_node_neighbours = scenario.colocation;
  auto world = World::Build(catalog, std::move(cluster), options);
  if (!world) return std::unexpected(world.error());
  Engine& engine = *(*world)->engine;

  auto warmups = AddJobs(scenario, seed, *gpu, **world);
  if (!warmups) return std::unexpected(warmups.error());
  DisaggregationRun run = Summarize(engine.Run(), *warmups);
  run.policy = std::string(policy_spec);
  run.scenario = scenario.Label();
  run.seed = seed;
  return run;
}

const report::MetricTable<DisaggregationRun>& DisaggregationTable() {
  using Run = DisaggregationRun;
  static const report::MetricTable<Run> table{
      .labels = {{"scenario", "scenario", 18, [](const Run& r) { return r.scenario; }},
                 {"policy", "policy", 34, [](const Run& r) { return r.policy; }}},
      .metrics = {
          {"makespan_s", &Run::makespan_s, "makespan", 1, 0, 10, "s", "Makespan", "s"},
          {"qos_violations", &Run::qos_violations, "QoS viol", 1, 1, 8, "",
           "Jobs that missed their goal", "jobs"},
          {"jobs_done", &Run::jobs_done, "done", 1, 0, 8},
          {"pending_s_mean", &Run::pending_s_mean, "pending s", 1, 1, 10, "", "Pending time (mean)",
           "s"},
          {"remote_jobs", &Run::remote_jobs, "remote", 1, 1, 8, "", "Jobs on a remote GPU", "jobs"},
          {"gpu_util_mean", &Run::gpu_util_mean, "GPU util %", 100, 1, 10}}};
  return table;
}

DisaggregationRun MeanOf(std::span<const DisaggregationRun> runs) {
  return DisaggregationTable().Mean(runs);
}

nlohmann::json DisaggregationJson(size_t seeds, std::span<const DisaggregationRun> means) {
  return {{"experiment", "disaggregation"},
          {"seeds", seeds},
          {"results", DisaggregationTable().Json(means)}};
}

std::string DisaggregationHtml(size_t seeds, std::span<const DisaggregationRun> means) {
  std::string html =
      report::PageOpen("tessera disaggregation", "tessera simulate --experiment disaggregation") +
      fmt::format(
          "<p>Rodinia-like jobs on K80 nodes whose CPUs are half held by a warm-up; GPUs local "
          "only (firmament-like) or also remote; means over {} seed(s) (seed 002; "
          "docs/results.md). The numbers are in <code>report.json</code>.</p>\n",
          seeds);
  for (size_t i = 0; i < means.size();) {
    size_t j = i;
    while (j < means.size() && means[j].scenario == means[i].scenario) ++j;
    const std::span<const DisaggregationRun> group = means.subspan(i, j - i);
    html += fmt::format("<h2>{}</h2>\n<div>\n", report::Escape(means[i].scenario));
    html += DisaggregationTable().Bars(
        group, [](const DisaggregationRun& r) { return BarName(r.policy); });
    html += "</div>\n" + DisaggregationTable().Html(group);
    i = j;
  }
  return html + report::PageClose();
}

Expected<ExperimentOutput> RunDisaggregationExperiment(const ExperimentArgs& args,
                                                       const Experiment& experiment) {
  Expected<AppCatalog> catalog = CatalogOf(args);
  if (!catalog) return std::unexpected(catalog.error());
  std::vector<DisaggregationRun> means;
  Expected<std::vector<DisaggregationScenario>> scenarios = DisaggregationScenariosOf(args);
  if (!scenarios) return std::unexpected(scenarios.error());
  for (const DisaggregationScenario& scenario : *scenarios) {
    for (const std::string& policy : PoliciesOrDefault(args, experiment)) {
      Expected<DisaggregationRun> mean = MeanOverSeeds<DisaggregationRun>(
          args, "disaggregation " + scenario.Label() + ": " + policy,
          [&](uint64_t seed) { return RunDisaggregation(policy, scenario, seed, *catalog); },
          [](std::span<const DisaggregationRun> runs) { return MeanOf(runs); });
      if (!mean) return std::unexpected(mean.error());
      means.push_back(std::move(*mean));
    }
  }
  ExperimentOutput out{.json = DisaggregationJson(args.seeds.size(), means)};
  out.table = fmt::format(
                  "experiment disaggregation: K80 nodes, half their CPUs held by a warm-up, "
                  "Rodinia-like jobs at 16/s, {} seed(s)\n\n",
                  args.seeds.size()) +
              DisaggregationTable().Text(means);
  return WithReport(std::move(out), args.out, DisaggregationHtml(args.seeds.size(), means));
}

namespace {

// A pending job of the explain scene: 3,000 queries, its goal `slack` above its run alone.
model::Workload ExplainJob(model::WorkloadId id, const std::string& app, double slack, int z,
                           model::GpuModelId k80, const policy::JobProfiles& profiles) {
  model::Workload w;
  w.id = id;
  w.name = fmt::format("job-{}", id);
  w.app = app;
  w.klass = model::WorkloadClass::kOffline;
  w.queries = 3000;
  w.cpu_milli = 8000;
  w.memory_mib = 32 << 10;
  w.gpu = {.count = 1, .milli = 1000, .models = {k80}};
  w.goal_s = 3000 * profiles.at(app).seconds_per_query.at(k80) * (1 + slack);
  w.goal_z = z;
  w.arrival_s = static_cast<double>(id);
  return w;
}

// The explain scene's cluster: three nodes of two K80s, k80-0's CPU held by the warm-up, an NW
// job running on k80-1 with its GPU on k80-0, and an Iperf-like job on k80-2.
Expected<model::ClusterState> SmallCluster(model::GpuModelId k80,
                                           const policy::JobProfiles& profiles) {
  model::ClusterState cluster;
  for (int n = 0; n < 3; ++n) {
    if (auto ok = cluster.AddNode(
            model::UniformNode(fmt::format("k80-{}", n), k80, 2, 160'000, 512 << 10));
        !ok) {
      return std::unexpected(ok.error());
    }
  }
  model::Workload warmup;
  warmup.id = 1;
  warmup.name = "warmup";
  warmup.cpu_milli = 160'000;
  if (auto ok = cluster.Place(warmup, {.workload = 1, .node = 0}); !ok)
    return std::unexpected(ok.error());
  const model::Workload running = ExplainJob(2, "rodinia/nw", 0.5, 5, k80, profiles);
  if (auto ok = cluster.Place(
          running, {.workload = 2,
                    .node = 1,
                    .slices = {{model::ClusterState::PartitionOf(0, 0), 1000, 0, false, true}}});
      !ok) {
    return std::unexpected(ok.error());
  }
  model::Workload iperf;  // a network-intensive CPU job saturating k80-2's link
  iperf.id = 8;
  iperf.name = "iperf-8";
  iperf.app = kIperfApp;
  iperf.klass = model::WorkloadClass::kOffline;
  iperf.cpu_milli = kJobCpuMilli;
  iperf.memory_mib = kJobMemoryMib;
  if (auto ok = cluster.Place(iperf, {.workload = 8, .node = 2}); !ok) {
    return std::unexpected(ok.error());
  }
  return cluster;
}

// Two cycles of `policy` over `jobs`, each followed by its explanation; what the first leaves
// waiting has W = 1 in the second.
Expected<std::string> ExplainCycles(policy::Policy& policy, model::ClusterState& cluster,
                                    const std::vector<model::Workload>& jobs,
                                    std::string_view name) {
  std::string out;
  std::vector<const model::Workload*> pending;
  for (const model::Workload& w : jobs) pending.push_back(&w);
  for (int cycle = 1; cycle <= 2; ++cycle) {
    policy.Order(pending);
    auto batch = policy.PlaceBatch(pending, cluster);
    if (!batch) return Fail("{}: no batch placement", name);
    out += fmt::format("cycle {}: ", cycle);
    out += policy.Explain(*pending.front(), cluster);
    for (const policy::Candidate& c : *batch) {
      const auto it = std::find_if(jobs.begin(), jobs.end(), [&](const model::Workload& w) {
        return w.id == c.placement.workload;
      });
      if (it == jobs.end()) continue;
      if (auto ok = cluster.Place(*it, c.placement); !ok) return std::unexpected(ok.error());
      std::erase(pending, &*it);
    }
    if (pending.empty()) break;
    out += fmt::format("\n");
  }
  return out;
}

}  // namespace

Expected<Explanation> ExplainDisaggregation(const ExplainArgs& f) {
  const AppCatalog catalog = SharingCatalog(*f.catalog);
  const model::GpuModelId k80 = *model::FindGpuModel("K80");
  const std::vector<std::string> profiled = {"rodinia/nw",    "rodinia/hotspot", "rodinia/lavamd",
                                             "rodinia/btree", "rodinia/srad",    kIperfApp};
  const policy::JobProfiles profiles = ProfileJobs(catalog, profiled, k80, /*colocation=*/true);
  auto small = SmallCluster(k80, profiles);
  if (!small) return std::unexpected(small.error());
  WorldOptions options{
      .policy = f.policy, .seed = f.seed, .publish_telemetry = false, .job_profiles = &profiles};
  options.physics.link_colocation = true;  // the experiment's default world
  auto world = World::Build(catalog, std::move(*small), options);
  if (!world) return std::unexpected(world.error());
  const std::vector<model::Workload> jobs = {
      ExplainJob(3, "rodinia/nw", 0.1, 1, k80, profiles),
      ExplainJob(4, "rodinia/hotspot", 0.1, 5, k80, profiles),
      ExplainJob(5, "rodinia/lavamd", 0.3, 5, k80, profiles),
      ExplainJob(6, "rodinia/btree", 0.5, 9, k80, profiles),
      ExplainJob(7, "rodinia/srad", 0.2, 3, k80, profiles)};
  Expected<std::string> cycles =
      ExplainCycles(*(*world)->policy, (*world)->cluster, jobs, f.spec.name);
  if (!cycles) return std::unexpected(cycles.error());
  return Explanation{
      .text =
          "scenario: disaggregation (seed 002) — 3 nodes of 2 K80s; k80-0's CPU held by the "
          "warm-up; job 2 (rodinia/nw) runs on k80-1 with its GPU on k80-0 (remote); an "
          "Iperf-like job saturates k80-2's link; jobs 3-7 pending (nw, hotspot, lavamd, btree, "
          "srad; goals 10-50 % above their run alone)\n\n" +
          *cycles};
}

}  // namespace tessera::sim
