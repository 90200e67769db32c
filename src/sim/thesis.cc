#include "sim/thesis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "policy/registry.h"
#include "predict/predictor.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {
namespace {

constexpr double kDurationS = 900;  // "roughly fifteen minutes"
constexpr int kBatch = 8;
constexpr double kJitterS = 5;  // "a random delay of few seconds"
// The thesis's engines (data/apps.yaml); the catalogue may hold more apps than these.
constexpr const char* kEngines[] = {"onnx/resnet50", "onnx/mobilenet", "onnx/ssd-mobilenet",
                                    "tf/resnet50",   "tf/mobilenet",   "tf/ssd-mobilenet"};

}  // namespace

std::string ThesisScenario::name() const {
  std::string n = fmt::format("pods={},slo={}", pods, high_slo ? "high" : "low");
  if (nodes > 0) n += fmt::format(",nodes={}", nodes);
  if (unprofiled > 0) n += fmt::format(",unprofiled={}", unprofiled);
  return n;
}

model::ClusterState ThesisScaleCluster(int nodes) {
  const char* models[] = {"A30-24GB", "A100-40GB", "H100-80GB", "V100-32GB"};
  model::ClusterState c;
  for (int n = 0; n < nodes; ++n) {
    auto ok = c.AddNode(model::UniformNode(
        fmt::format("node-{}", n), *model::FindGpuModel(models[n % 4]), 8, 128000, 1024 * 1024));
    TESSERA_CHECK(ok.has_value());
  }
  return c;
}

model::ClusterState ThesisCluster() {
  model::ClusterState c;
  const model::GpuModelId a30 = *model::FindGpuModel("A30-24GB");
  const bool ok =
      c.AddNode(model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 32000, 128 * 1024))
          .has_value() &&
      c.AddNode(model::UniformNode("a30", a30, 1, 32000, 128 * 1024)).has_value() &&
      c.AddNode(model::UniformNode("cpu", 0, 0, 32000, 128 * 1024)).has_value();
  TESSERA_CHECK(ok);
  return c;
}

double ThesisSloBase(const AppSpec& app, bool high_slo, const Physics& physics) {
  const model::GpuModelId v100 = *model::FindGpuModel("V100-32GB");
  const model::GpuModelId a30 = *model::FindGpuModel("A30-24GB");
  const model::GpuModel& a30m = model::GetGpuModel(a30);
  if (high_slo) {
    return (physics.IsolatedQps(app, v100, -1, 1000) +
            physics.IsolatedQps(app, a30, *a30m.FindProfile("4g.24gb"), 1000)) /
           2;
  }
  return (physics.IsolatedQps(app, v100, -1, 250) +
          physics.IsolatedQps(app, a30, *a30m.FindProfile("1g.6gb"), 1000)) /
         2;
}

model::Workload ThesisPod(const AppSpec& app, model::WorkloadId id) {
  model::Workload w;
  w.id = id;
  w.name = fmt::format("{}-{}", app.key, id);
  w.app = app.key;
  w.features = app.features;  // what the pod declares (tessera.io/feature.*)
  w.cpu_milli = 1000;
  w.memory_mib = 4096;
  w.gpu.count = 1;  // nvidia.com/gpu: 1; the policy decides the slice
  // The pod states the GPU memory its model needs (tessera.io/gpu-memory), rounded up to
  // 256 MiB; the baselines' fixed slices ignore it, as the thesis's did.
  w.gpu.memory_mib = (app.footprint_mib + 255) / 256 * 256;
  return w;
}

std::vector<model::Workload> ThesisWorkloads(const ThesisScenario& s, uint64_t seed,
                                             const Physics& physics) {
  Rng rng(seed);
  const int batches = (s.pods + kBatch - 1) / kBatch;
  double clock = 0;
  std::vector<model::Workload> out;
  for (int i = 0; i < s.pods; ++i) {
    const AppSpec* app = physics.catalog().Find(kEngines[rng.Below(std::size(kEngines))]);
    TESSERA_CHECK(app != nullptr);
    model::Workload w = ThesisPod(*app, i + 1);
    w.queries = app->queries_min + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(
                                       app->queries_max - app->queries_min + 1)));
    w.slo_qps = rng.Uniform(0.8, 1.2) * ThesisSloBase(*app, s.high_slo, physics);
    if (s.nodes > 0) {
      clock += rng.Exponential(s.pods / 3600.0);  // Poisson: `pods` per hour
      w.arrival_s = clock;
    } else {
      w.arrival_s = (i / kBatch) * (kDurationS / batches) + rng.Uniform(0, kJitterS);
    }
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<std::string> ThesisUnprofiledApps(const ThesisScenario& s, uint64_t seed) {
  std::vector<std::string> pool(std::begin(kEngines), std::end(kEngines));
  Rng rng(seed ^ 0x0a11ced5ULL);
  std::vector<std::string> out;
  while (static_cast<int>(out.size()) < std::min<int>(s.unprofiled, std::ssize(kEngines))) {
    const size_t k = rng.Below(pool.size());
    out.push_back(pool[k]);
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return out;
}

ProfilerOptions ThesisProfiling(const ThesisScenario& s, uint64_t seed) {
  // The thesis characterised its engines on every configuration (Ch. 6.1); the scenario's
  // unprofiled engines get 1-2 measurements, like any app nobody profiled.
  ProfilerOptions profiling;
  profiling.new_apps = ThesisUnprofiledApps(s, seed);
  for (const char* key : kEngines) {
    if (std::find(profiling.new_apps.begin(), profiling.new_apps.end(), key) ==
        profiling.new_apps.end()) {
      profiling.full_apps.push_back(key);
    }
  }
  return profiling;
}

namespace {

// The GPU models of `cluster`, each once, in the order their first GPU appears.
std::vector<model::GpuModelId> ModelsOf(const model::ClusterState& cluster) {
  std::vector<model::GpuModelId> models;
  for (model::GpuIndex g = 0; g < cluster.gpu_count(); ++g) {
    if (std::find(models.begin(), models.end(), cluster.gpu(g).model) == models.end())
      models.push_back(cluster.gpu(g).model);
  }
  return models;
}

// What the thesis's characterisation (Ch. 6) would have given a policy that predicts: the
// Profiler's sparse, noisy samples of every GPU model in the cluster — never Physics.
Expected<predict::Predictor> ProfiledPredictor(const Physics& physics,
                                               const model::ClusterState& cluster,
                                               const ThesisScenario& s, uint64_t seed) {
  std::vector<std::string> models;
  for (model::GpuModelId id : ModelsOf(cluster)) models.push_back(model::GetGpuModel(id).name);
  Expected<ProfileSamples> samples =
      Profiler(physics, ThesisProfiling(s, seed)).Sample(models, seed ^ 0x5eedULL);
  if (!samples) return std::unexpected(samples.error());
  return predict::Predictor::Create(samples->TakeProfile(), samples->TakeInterference(), {},
                                    CatalogFeatures(physics.catalog()));
}

// The run's figures (Ch. 9.3) from the engine's outcomes.
ThesisRun Summarize(const EngineResult& r, const model::ClusterState& cluster,
                    const Physics& physics) {
  const std::vector<model::GpuModelId> models = ModelsOf(cluster);
  ThesisRun run;
  run.pods = static_cast<int>(r.workloads.size());
  // A pod that never started waited until the run stopped (the horizon, if work was left).
  const double stop = std::max(r.end_s, r.stop_s);
  double diff_sum = 0, pending_sum = 0, exec_sum = 0;
  int executed = 0;
  for (const WorkloadOutcome& o : r.workloads) {
    const bool ran = o.end_s && !o.failed;
    if (o.failed) ++run.failures;
    const double achieved = ran ? o.achieved_qps() : 0;
    const double rel = (achieved - o.workload.slo_qps) / o.workload.slo_qps;
    const bool met = ran && achieved >= o.workload.slo_qps;
    if (!met) ++run.slo_violations;
    const AppSpec* app = physics.catalog().Find(o.workload.app);
    const bool feasible = app && physics.BestIsolatedQps(*app, models) >= o.workload.slo_qps;
    run.slo_feasible += feasible;
    run.slo_met_feasible += feasible && met;
    run.relative_qps_diff.push_back(ran ? rel : -1);
    run.workloads.push_back({.id = o.workload.id,
                             .app = o.workload.app,
                             .slo_qps = o.workload.slo_qps,
                             .achieved_qps = achieved,
                             .failed = o.failed,
                             .failure = o.failure,
                             .arrival_s = o.workload.arrival_s,
                             .start_s = o.start_s,
                             .end_s = o.end_s,
                             .pending_s = o.start_s ? o.pending_s() : stop - o.workload.arrival_s,
                             .node = o.start_s ? cluster.node(o.node).name : "",
                             .partition = o.partition,
                             .profile = o.profile,
                             .mps_milli = o.milli,
                             .moves = o.moves,
                             .slo_feasible = feasible});
    run.moves += o.moves;
    run.never_placed += !o.start_s;
    diff_sum += std::abs(ran ? rel : -1);
    pending_sum += o.start_s ? o.pending_s() : stop - o.workload.arrival_s;
    if (ran) {
      exec_sum += *o.end_s - *o.start_s;
      ++executed;
    }
  }
  run.slo_attainment = 1.0 - run.slo_violations / std::max(1, run.pods);
  run.qps_slo_abs_diff_mean = diff_sum / std::max(1, run.pods);
  run.pending_s_mean = pending_sum / std::max(1, run.pods);
  run.execution_s_mean = executed ? exec_sum / executed : 0;
  // Nothing finished: no makespan (r.end_s is then 0, before the first arrival).
  run.makespan_s = std::max(0.0, r.end_s - r.first_arrival_s);
  run.gpu_util_mean = r.gpu_util_mean;
  run.power_w_mean = r.power_w_mean;
  run.energy_j = r.energy_j;
  return run;
}

}  // namespace

Expected<ThesisRun> RunThesis(const std::string& policy_name, const ThesisScenario& s,
                              uint64_t seed, const AppCatalog& catalog) {
  for (const char* key : kEngines) {
    if (!catalog.Find(key))
      return Fail("the thesis experiment needs app '{}' in the catalogue", key);
  }
  Physics physics(catalog, seed);
  Rng rng(seed);
  model::ClusterState cluster = s.nodes > 0 ? ThesisScaleCluster(s.nodes) : ThesisCluster();
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(policy_name);
  if (!spec) return std::unexpected(spec.error());
  std::optional<predict::Predictor> predictor;
  if (const auto info = policy::FindPolicy(spec->name); info && info->needs_predictor) {
    Expected<predict::Predictor> p = ProfiledPredictor(physics, cluster, s, seed);
    if (!p) return std::unexpected(p.error());
    predictor.emplace(std::move(*p));
  }
  telemetry::StaticTelemetry telemetry;
  ManualClock clock;  // the engine's virtual time, which a policy with a period reads (muxflow)
  predict::Predictor* learner = predictor ? &*predictor : nullptr;
  auto policy = policy::MakePolicy(spec->name,
                                   {.rng = &rng,
                                    .clock = &clock,
                                    .predictor = learner,
                                    .telemetry = &telemetry,
                                    .learner = learner,
                                    .can_move = true},
                                   spec->options);
  if (!policy) return std::unexpected(policy.error());
  Engine engine(cluster, **policy, physics, rng,
                {.horizon_s = 48 * 3600, .telemetry = &telemetry, .clock = &clock});
  for (model::Workload& w : ThesisWorkloads(s, seed, physics)) {
    if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  ThesisRun run = Summarize(engine.Run(), cluster, physics);
  run.policy = policy_name;
  run.scenario = s;
  run.seed = seed;
  return run;
}

double ThesisRun::slo_attainment_feasible() const {
  return slo_feasible > 0 ? slo_met_feasible / slo_feasible : std::nan("");
}

ThesisRun MeanOf(const std::vector<ThesisRun>& runs) {
  ThesisRun m;
  if (runs.empty()) return m;
  m.policy = runs[0].policy;
  m.scenario = runs[0].scenario;
  const double n = static_cast<double>(runs.size());
  double pods = 0, failures = 0, violations = 0;
  for (const ThesisRun& r : runs) {
    pods += r.pods;
    failures += r.failures;
    violations += r.slo_violations;
    m.slo_feasible += r.slo_feasible / n;
    m.slo_met_feasible += r.slo_met_feasible / n;
    m.slo_attainment += r.slo_attainment / n;
    m.qps_slo_abs_diff_mean += r.qps_slo_abs_diff_mean / n;
    m.makespan_s += r.makespan_s / n;
    m.pending_s_mean += r.pending_s_mean / n;
    m.execution_s_mean += r.execution_s_mean / n;
    m.moves += r.moves / n;
    m.never_placed += r.never_placed / n;
    m.gpu_util_mean += r.gpu_util_mean / n;
    m.power_w_mean += r.power_w_mean / n;
    m.energy_j += r.energy_j / n;
    m.relative_qps_diff.insert(m.relative_qps_diff.end(), r.relative_qps_diff.begin(),
                               r.relative_qps_diff.end());
  }
  m.pods = static_cast<int>(std::lround(pods / n));
  m.failures = failures / n;
  m.slo_violations = violations / n;
  return m;
}

}  // namespace tessera::sim
