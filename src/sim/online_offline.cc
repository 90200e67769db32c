#include "sim/online_offline.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/rng.h"
#include "model/cluster.h"
#include "policy/muxflow.h"
#include "predict/predictor.h"
#include "sim/engine.h"
#include "sim/explain.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "sim/world.h"

namespace tessera::sim {
namespace {

// A service never finishes within the day: more queries than any replica can serve.
constexpr int64_t kServiceQueries = int64_t{1} << 50;
constexpr double kLoadIntervalS = 60;
constexpr double kBucketS = 3600;
// Without dynamic SM, 001's ablation keeps a fixed offline share; its Fig. 8 example is 40 %.
constexpr int kFixedSmPercent = 40;

struct Variant {
  bool offline = true;
  PhysicsOptions::Sharing sharing = PhysicsOptions::Sharing::kMps;
  nlohmann::json options = nlohmann::json::object();
};

// The experiment's arms: each is muxflow (the one registered policy it runs) with options, on a
// ground truth with or without MPS, with or without the offline trace.
struct Arm {
  std::string_view name;
  bool offline;
  PhysicsOptions::Sharing sharing;
  nlohmann::json (*options)();
};

nlohmann::json NoOptions() { return nlohmann::json::object(); }
// ts and pb-ts: first come, first placed, at MPS's full share, and nothing protects the service.
nlohmann::json Unprotected() {
  const nlohmann::json never = {2, 2, 2};
  return {{"dynamic_sm", false},
          {"matching", false},
          {"offline_period", true},
          {"gpu_util_thresholds", never},
          {"sm_activity_thresholds", never},
          {"memory_thresholds", never},
          {"clock_drop_thresholds", never}};
}
nlohmann::json NoDynamicSm() {
  return {{"dynamic_sm", false}, {"fixed_sm_percent", kFixedSmPercent}};
}
nlohmann::json NoMatching() { return {{"matching", false}, {"offline_period", true}}; }
nlohmann::json Neither() {
  nlohmann::json o = NoDynamicSm();
  o.update(NoMatching());
  return o;
}

using Sharing = PhysicsOptions::Sharing;
constexpr Arm kArms[] = {{"online-only", false, Sharing::kMps, NoOptions},
                         {"ts", true, Sharing::kTimeSlice, Unprotected},
                         {"pb-ts", true, Sharing::kPriorityTimeSlice, Unprotected},
                         {"muxflow", true, Sharing::kMps, NoOptions},
                         {"muxflow-S", true, Sharing::kMps, NoDynamicSm},
                         {"muxflow-M", true, Sharing::kMps, NoMatching},
                         {"muxflow-S-M", true, Sharing::kMps, Neither}};
constexpr std::string_view kOnlineOfflinePolicies[] = {kArms[0].name, kArms[1].name, kArms[2].name,
                                                       kArms[3].name, kArms[4].name, kArms[5].name,
                                                       kArms[6].name};

// NAME or NAME{json}: an arm, with muxflow options over the arm's own.
Expected<Variant> VariantOf(std::string_view spec) {
  std::string_view name = spec;
  nlohmann::json extra = nlohmann::json::object();
  if (const size_t brace = spec.find('{'); brace != std::string_view::npos) {
    name = spec.substr(0, brace);
    extra = nlohmann::json::parse(spec.substr(brace), nullptr, /*allow_exceptions=*/false);
    if (!extra.is_object()) {
      return Fail(
          "experiment online-offline: policy '{}': the options after the name must be one JSON "
          "object",
          spec);
    }
  }
  for (const Arm& arm : kArms) {
    if (arm.name != name) continue;
    Variant v{.offline = arm.offline, .sharing = arm.sharing, .options = arm.options()};
    v.options.update(extra);
    return v;
  }
  return Fail(
      "experiment online-offline: unknown policy '{}' (one of online-only, ts, pb-ts, muxflow, "
      "muxflow-S, muxflow-M, muxflow-S-M)",
      name);
}

// The training apps, `catalog.apps` from `first` on, get the host time that leaves `gpu` idle
// 1 − duty of their step alone: host = step × (1 / duty − 1), the step its time on the GPU.
void AddTrainerHostTime(AppCatalog& catalog, size_t first, model::GpuModelId gpu, double duty) {
  const Physics alone(catalog, 0);
  for (size_t i = first; i < catalog.apps.size(); ++i) {
    AppSpec& app = catalog.apps[i];
    const double step_s = 1 / alone.IsolatedQps(app, gpu, -1, 1000);
    app.host_s = step_s * (1 / duty - 1);
  }
}

}  // namespace

Expected<AppCatalog> OnlineOfflineCatalog(const AppCatalog& catalog,
                                          std::span<const OnlineService> services,
                                          const ServiceMemory& memory, std::string_view gpu,
                                          double trainer_duty) {
  AppCatalog out;
  out.reference_gpu = catalog.reference_gpu;
  const std::optional<model::GpuModelId> model = model::FindGpuModel(gpu);
  if (memory.resident && !model) {
    return Fail("experiment online-offline: unknown GPU model '{}'", gpu);
  }
  for (const OnlineService& s : services) {
    const AppSpec* app = catalog.Find(s.app);
    if (!app) return Fail("experiment online-offline: service {} needs app '{}'", s.name, s.app);
    if (out.Find(app->key)) continue;
    out.apps.push_back(*app);
    if (!memory.resident) continue;
    const double gpu_mib = static_cast<double>(model::GetGpuModel(*model).memory_mib);
    const double resident =
        std::max(static_cast<double>(app->footprint_mib), memory.resident_share * gpu_mib);
    UsageTrajectory& u = out.apps.back().usage;
    const bool once = memory.burst_once_at_s.has_value();
    u = {.phases = {{.duration_s = 1, .use = {.memory_mib = resident}}},
         .burst = UsageBurst{.period_s = once ? *memory.burst_once_at_s + memory.burst_s
                                              : memory.burst_period_s,
                             .duration_s = memory.burst_s,
                             .peak = {.memory_mib = resident + memory.burst_share * gpu_mib},
                             .ramp_s = memory.burst_ramp_s,
                             .staggered = !once,
                             .repeat = !once},
         .memory_only = true};
  }
  if (catalog.training.empty()) {
    return Fail("experiment online-offline: the catalogue lists no `training` apps");
  }
  const size_t first_training = out.apps.size();
  for (const AppSpec& t : catalog.training) out.apps.push_back(t);
  if (trainer_duty < 1) {
    if (!model) return Fail("experiment online-offline: unknown GPU model '{}'", gpu);
    AddTrainerHostTime(out, first_training, *model, trainer_duty);
  }
  return out;
}

Expected<ProfileSamples> OnlineOfflineSamples(const Physics& physics,
                                              const std::vector<std::string>& gpus, uint64_t seed) {
  ProfilerOptions profiling;
  for (const AppSpec& a : physics.catalog().apps) profiling.full_apps.push_back(a.key);
  profiling.full_runs = 3;
  profiling.interference_gpu = gpus.front();
  return Profiler(physics, profiling).Sample(gpus, seed);
}

Expected<predict::Predictor> OnlineOfflinePredictor(const Physics& physics,
                                                    const std::vector<std::string>& gpus,
                                                    uint64_t seed) {
  Expected<ProfileSamples> samples = OnlineOfflineSamples(physics, gpus, seed);
  if (!samples) return std::unexpected(samples.error());
  return predict::Predictor::Create(samples->TakeProfile(), samples->TakeInterference(), {},
                                    CatalogFeatures(physics.catalog()));
}

namespace {

// The scenario's GPU models: its `gpu` first, then `second_gpu` if any (checked by the caller).
std::vector<model::GpuModelId> ModelsOf(const OnlineOfflineScenario& s) {
  std::vector<model::GpuModelId> models = {*model::FindGpuModel(s.gpu)};
  if (!s.second_gpu.empty()) models.push_back(*model::FindGpuModel(s.second_gpu));
  return models;
}

// Nodes named by their model ("t4-00", "a10-01"); with two models the odd nodes take the second.
model::ClusterState MakeCluster(const OnlineOfflineScenario& s,
                                std::span<const model::GpuModelId> models) {
  model::ClusterState cluster;
  for (int n = 0; n < s.nodes; ++n) {
    const model::GpuModelId gpu = models[static_cast<size_t>(n) % models.size()];
    std::string name = model::GetGpuModel(gpu).name;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    TESSERA_CHECK(cluster
                      .AddNode(model::UniformNode(fmt::format("{}-{:02}", name, n), gpu,
                                                  s.gpus_per_node, 64000, int64_t{128} << 10))
                      .has_value());
  }
  return cluster;
}

}  // namespace

std::vector<OnlineService> DefaultServices(int gpus) {
  // Per-replica loads: bert-base/bs1 (T4 capacity ≈ 420 QPS) at 001's 20–190 QPS, ρ ≈ 0.05–0.45;
  // the other two over the same ρ range of their capacity (≈ 645 and ≈ 1,260 QPS on a T4).
  std::vector<OnlineService> out = {
      {"recommend", "bert-base/bs1/seq64", {20, 190, 20}, 0},
      {"translate", "bert-base-multilingual-cased/bs8/seq64", {30, 290, 21}, 0},
      {"vision", "onnx/resnet50", {0.7, 6.6, 13}, 0}};
  for (int i = 0; i < gpus; ++i) ++out[static_cast<size_t>(i) % out.size()].replicas;
  return out;
}

std::span<const std::string_view> OnlineOfflinePolicies() { return kOnlineOfflinePolicies; }

OnlineOfflineScenario ShortBurstScenario() {
  OnlineOfflineScenario s;
  s.nodes = 1;
  s.gpus_per_node = 2;
  s.horizon_s = 240;
  s.offline_jobs = 2;
  s.submit_window_s = 2;
  s.duration_median_s = 40;
  s.duration_sigma = 0;
  s.duration_max_s = 40;
  s.checkpoint_s = 10;
  s.sample_interval_s = 1;
  s.service_memory.burst_once_at_s = 10;
  s.service_memory.burst_ramp_s = 50;
  s.service_memory.burst_s = 60;
  return s;
}

double OversoldGpu(std::span<const OfflineTimes> jobs) {
  double exclusive = 0, real = 0;
  for (const OfflineTimes& j : jobs) {
    exclusive += j.exclusive_s;
    real += j.real_s;
  }
  return real > 0 ? exclusive / real : 0;
}

double SojournRate(const QueueObservation& q) { return q.mu - std::min(q.lambda, 0.99 * q.mu); }

double MeanLatency(std::span<const QueueObservation> qs, double host_s) {
  double weight = 0, sum = 0;
  for (const QueueObservation& q : qs) {
    if (q.weight <= 0 || q.mu <= 0) continue;
    weight += q.weight;
    sum += q.weight * (host_s + 1 / SojournRate(q));
  }
  return weight > 0 ? sum / weight : 0;
}

double LatencyQuantile(std::span<const QueueObservation> qs, double host_s, double q) {
  // P(T > host + x) = Σ w_i exp(−r_i x) / Σ w_i, decreasing in x: bisect for 1 − q.
  double weight = 0, slowest = 0;
  for (const QueueObservation& o : qs) {
    if (o.weight <= 0 || o.mu <= 0) continue;
    weight += o.weight;
    slowest = std::max(slowest, 1 / SojournRate(o));
  }
  if (weight <= 0) return 0;
  auto tail = [&](double x) {
    double t = 0;
    for (const QueueObservation& o : qs) {
      if (o.weight > 0 && o.mu > 0) t += o.weight * std::exp(-SojournRate(o) * x);
    }
    return t / weight;
  };
  double lo = 0, hi = slowest * std::log(1 / std::max(1e-12, 1 - q)) * 2 + 1e-9;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (tail(mid) > 1 - q ? lo : hi) = mid;
  }
  return host_s + (lo + hi) / 2;
}

namespace {

// The services first, at t = 0, one replica per GPU, appended to `out`, each one's offered load
// set in `physics`; the service of each replica's id (an index into `services`).
std::map<model::WorkloadId, size_t> AddServices(std::span<const OnlineService> services,
                                                std::span<const model::GpuModelId> models,
                                                Physics& physics, model::WorkloadId& next_id,
                                                std::vector<model::Workload>& out) {
  std::map<model::WorkloadId, size_t> service_of;
  for (size_t i = 0; i < services.size(); ++i) {
    const OnlineService& s = services[i];
    for (int r = 0; r < s.replicas; ++r) {
      model::Workload w;
      w.id = next_id++;
      w.name = fmt::format("{}-{}", s.name, r);
      w.app = s.app;
      w.klass = model::WorkloadClass::kOnline;
      w.queries = kServiceQueries;
      w.gpu = {.count = 1, .milli = 1000, .models = {models.begin(), models.end()}};
      w.arrival_s = 0;
      physics.SetOfferedLoad(w.id, s.load);
      service_of[w.id] = i;
      out.push_back(std::move(w));
    }
  }
  return service_of;
}

// The offline trace: its own stream, so every policy of a seed sees the same jobs; appended to
// `out`.
void AddOfflineJobs(const OnlineOfflineScenario& scenario, uint64_t seed,
                    const AppCatalog& full_catalog, std::span<const model::GpuModelId> models,
                    const Physics& physics, model::WorkloadId& next_id,
                    std::vector<model::Workload>& out) {
  const model::GpuModelId gpu = models.front();  // the trace's durations are on this model
  const AppCatalog& catalog = physics.catalog();
  Rng trace(seed ^ 0x0ff11e5ULL);
  double t = 0;
  for (int j = 0; j < scenario.offline_jobs; ++j) {
    t += trace.Exponential(scenario.offline_jobs / scenario.submit_window_s);
    const std::string& key = full_catalog.training[trace.Below(full_catalog.training.size())].key;
    const AppSpec& app = *catalog.Find(key);
    const double duration = std::min(
        scenario.duration_max_s,
        scenario.duration_median_s * std::exp(scenario.duration_sigma * trace.Normal(0, 1)));
    const double rate = physics.IsolatedQps(app, gpu, -1, 1000);  // iterations/s alone
    model::Workload w;
    w.id = next_id++;
    w.name = fmt::format("job-{}", j);
    w.app = app.key;
    w.klass = model::WorkloadClass::kOffline;
    w.queries = std::max<int64_t>(1, std::llround(duration * rate));
    w.checkpoint_queries = std::max<int64_t>(1, std::llround(scenario.checkpoint_s * rate));
    w.gpu = {.count = 1,
             .milli = 1000,
             .memory_mib = app.footprint_mib,
             .models = {models.begin(), models.end()}};
    w.arrival_s = t;
    out.push_back(std::move(w));
  }
}

// The hourly timeline: each bucket's request-weighted latency and its GPUs' mean activity.
std::vector<TimelinePoint> Timeline(const EngineResult& result,
                                    const std::vector<std::vector<QueueObservation>>& by_hour,
                                    double host_s) {
  std::vector<TimelinePoint> timeline(by_hour.size());
  std::vector<int> in_bucket(by_hour.size(), 0);
  for (const ClusterSample& c : result.load_ticks) {
    const auto bucket = static_cast<size_t>(c.t / kBucketS);
    if (bucket >= timeline.size()) continue;
    timeline[bucket].gpu_util += c.gpu_util;
    timeline[bucket].sm_activity += c.sm_activity;
    ++in_bucket[bucket];
  }
  for (size_t b = 0; b < timeline.size(); ++b) {
    timeline[b].hour = static_cast<double>(b) * kBucketS / 3600;
    timeline[b].latency_ms = 1000 * MeanLatency(by_hour[b], host_s);
    if (in_bucket[b] > 0) {
      timeline[b].gpu_util /= in_bucket[b];
      timeline[b].sm_activity /= in_bucket[b];
    }
  }
  return timeline;
}

// The run's figures from the engine's outcomes: the services' latency from their load samples,
// the offline jobs' completions, evictions and executions, the GPUs' activity.
OnlineOfflineRun Summarize(const EngineResult& result, const OnlineOfflineScenario& scenario,
                           std::span<const OnlineService> services,
                           const std::map<model::WorkloadId, size_t>& service_of,
                           const Physics& physics, const model::ClusterState& cluster) {
  OnlineOfflineRun run;
  double memory_mib = 0;  // the cluster's
  for (model::GpuIndex g = 0; g < cluster.gpu_count(); ++g) {
    memory_mib += static_cast<double>(model::GetGpuModel(cluster.gpu(g).model).memory_mib);
  }
  std::vector<OfflineTimes> finished;
  double memory_held = 0;  // MiB·s
  // A workload's footprint from its first start to its end (or the run's).
  auto hold = [&](const WorkloadOutcome& o) {
    const AppSpec* app = physics.catalog().Find(o.workload.app);
    if (!app || !o.start_s) return;
    memory_held += static_cast<double>(app->footprint_mib) *
                   std::max(0.0, o.end_s.value_or(result.stop_s) - *o.start_s);
  };
  const double host_s = scenario.host_latency_ms / 1000;
  std::vector<QueueObservation> all;
  std::vector<std::vector<QueueObservation>> by_hour(
      static_cast<size_t>(std::ceil(scenario.horizon_s / kBucketS)));
  int64_t ticks = 0, overloaded = 0, down = 0;
  double jct_sum = 0;
  for (const WorkloadOutcome& o : result.workloads) {
    hold(o);
    if (auto it = service_of.find(o.workload.id); it != service_of.end()) {
      for (const LoadSample& s : o.load) {
        if (s.capacity_qps <= 0) {  // down: its requests fail, they have no latency
          ++ticks;
          ++down;
          continue;
        }
        const double lambda = services[it->second].load.QpsAt(s.t);
        const QueueObservation q{lambda * kLoadIntervalS, lambda, s.capacity_qps};
        all.push_back(q);
        const auto bucket = static_cast<size_t>(s.t / kBucketS);
        if (bucket < by_hour.size()) by_hour[bucket].push_back(q);
        ++ticks;
        overloaded += lambda >= 0.99 * s.capacity_qps;
      }
      run.online_oom_kills += o.oom_kills;
      continue;
    }
    if (o.start_s) run.executions += 1 + o.moves;
    run.evictions += o.moves;
    run.lost_iterations += o.lost_queries;
    if (o.end_s && !o.failed) {
      ++run.offline_jobs_done;
      jct_sum += *o.end_s - o.workload.arrival_s;
      const AppSpec* app = physics.catalog().Find(o.workload.app);
      // T_sep on the model of the GPU it finished on (the nodes are uniform).
      const double alone =
          app && o.node >= 0
              ? physics.IsolatedQps(*app, cluster.gpu(cluster.node(o.node).first_gpu).model, -1,
                                    1000)
              : 0;
      if (alone > 0 && o.start_s) {
        finished.push_back(
            {static_cast<double>(o.workload.queries) / alone, *o.end_s - *o.start_s});
      }
    }
  }
  run.online_latency_mean_ms = 1000 * MeanLatency(all, host_s);
  run.online_latency_p99_ms = 1000 * LatencyQuantile(all, host_s, 0.99);
  run.overloaded_share = ticks > 0 ? static_cast<double>(overloaded) / ticks : 0;
  run.online_down_share = ticks > 0 ? static_cast<double>(down) / ticks : 0;
  run.offline_jct_mean_s = run.offline_jobs_done > 0 ? jct_sum / run.offline_jobs_done : 0;
  const double gpu_time = cluster.gpu_count() * std::max(1.0, result.stop_s);
  run.gpu_util_mean = result.gpu_util_integral / gpu_time;
  run.sm_activity_mean = result.sm_activity_integral / gpu_time;
  run.oversold_gpu = OversoldGpu(finished);
  // With services' trajectories the engine's samples hold every GPU's use (offline jobs at what
  // they reserve); without, the footprints.
  if (result.gpu_memory_integral > 0) memory_held = result.gpu_memory_integral;
  run.gpu_memory_mean = memory_held / (std::max(1.0, result.stop_s) * memory_mib);
  run.timeline = Timeline(result, by_hour, host_s);
  return run;
}

}  // namespace

Expected<OnlineOfflineWorld> BuildOnlineOfflineWorld(std::string_view policy_name,
                                                     const OnlineOfflineScenario& scenario,
                                                     uint64_t seed,
                                                     const AppCatalog& full_catalog) {
  Expected<Variant> variant = VariantOf(policy_name);
  if (!variant) return std::unexpected(variant.error());
  for (const std::string& m : {scenario.gpu, scenario.second_gpu}) {
    if (!m.empty() && !model::FindGpuModel(m)) {
      return Fail("experiment online-offline: unknown GPU model '{}'", m);
    }
  }
  const std::vector<model::GpuModelId> models = ModelsOf(scenario);
  OnlineOfflineWorld out;
  out.gpus = {scenario.gpu};
  if (!scenario.second_gpu.empty()) out.gpus.push_back(scenario.second_gpu);
  const int gpus = scenario.nodes * scenario.gpus_per_node;
  out.services = scenario.services.empty() ? DefaultServices(gpus) : scenario.services;
  Expected<AppCatalog> catalog = OnlineOfflineCatalog(
      full_catalog, out.services, scenario.service_memory, scenario.gpu, scenario.trainer_duty);
  if (!catalog) return std::unexpected(catalog.error());

  // On a mixed cluster a job's speed "when running separately" (001 §5's normalised
  // throughput) is the one its trace states, exclusive on `scenario.gpu`, unless the variant
  // names another reference (`{"reference_gpu":""}`: each GPU's own, 001 read literally).
  if (!scenario.second_gpu.empty() && !variant->options.contains("reference_gpu")) {
    variant->options["reference_gpu"] = scenario.gpu;
  }
  out.policy = "muxflow" + variant->options.dump();
  WorldOptions options{
      .policy = out.policy,
      .seed = seed,
      .predictor = [&](const Physics& physics,
                       const model::ClusterState&) -> Expected<predict::Predictor> {
        return OnlineOfflinePredictor(physics, out.gpus, seed);
      },
      .always_predict = true,
      .can_move = true,
      .engine = {.cycle_interval_s = scenario.sample_interval_s,
                 .horizon_s = scenario.horizon_s,
                 .telemetry_interval_s = scenario.sample_interval_s,
                 .usage_interval_s = scenario.sample_interval_s,
                 .cycle_after_usage = true,
                 .load_interval_s = kLoadIntervalS}};
  options.physics.sharing = variant->sharing;
  auto world = World::Build(*catalog, MakeCluster(scenario, models), options);
  if (!world) return std::unexpected(world.error());
  out.world = std::move(*world);

  model::WorkloadId next_id = 1;
  out.service_of = AddServices(out.services, models, out.world->physics, next_id, out.workloads);
  if (variant->offline) {
    AddOfflineJobs(scenario, seed, full_catalog, models, out.world->physics, next_id,
                   out.workloads);
    out.offline_jobs = scenario.offline_jobs;
  }
  return out;
}

Expected<OnlineOfflineRun> RunOnlineOffline(std::string_view policy_name,
                                            const OnlineOfflineScenario& scenario, uint64_t seed,
                                            const AppCatalog& full_catalog) {
  Expected<OnlineOfflineWorld> built =
      BuildOnlineOfflineWorld(policy_name, scenario, seed, full_catalog);
  if (!built) return std::unexpected(built.error());
  World& world = *built->world;
  for (model::Workload& w : built->workloads) {
    if (auto ok = world.engine->Add(std::move(w)); !ok) return std::unexpected(ok.error());
  }
  OnlineOfflineRun run = Summarize(world.engine->Run(), scenario, built->services,
                                   built->service_of, world.physics, world.cluster);
  run.policy = std::string(policy_name);
  run.seed = seed;
  run.offline_jobs = built->offline_jobs;
  return run;
}

const report::MetricTable<OnlineOfflineRun>& OnlineOfflineTable() {
  using Run = OnlineOfflineRun;
  static const report::MetricTable<Run> table{
      .labels = {{"policy", "policy", 12, [](const Run& r) { return r.policy; }}},
      .metrics = {
          {"online_latency_mean_ms", &Run::online_latency_mean_ms, "lat mean", 1, 2, 10, "ms"},
          {"online_latency_p99_ms", &Run::online_latency_p99_ms, "lat p99", 1, 2, 9, "ms"},
          {"overloaded_share", &Run::overloaded_share, ""},
          {"gpu_util_mean", &Run::gpu_util_mean, "GPU %", 100, 1, 8},
          {"sm_activity_mean", &Run::sm_activity_mean, "SM %", 100, 1, 8},
          {"gpu_memory_mean", &Run::gpu_memory_mean, "mem %", 100, 1, 8},
          {"offline_jct_mean_s", &Run::offline_jct_mean_s, "JCT s", 1, 0, 10},
          {"offline_jobs_done", &Run::offline_jobs_done, "jobs", 1, 1, 9},
          {"offline_jobs", &Run::offline_jobs, ""},
          {"oversold_gpu", &Run::oversold_gpu, "oversold", 1, 3, 9},
          {"evictions", &Run::evictions, "evicted", 1, 1, 9},
          {"online_oom_kills", &Run::online_oom_kills, "svc OOM", 1, 1, 8},
          {"online_down_share", &Run::online_down_share, ""},
          {"executions", &Run::executions, "executions", 1, 1, 10},
          {"lost_iterations", &Run::lost_iterations, ""}}};
  return table;
}

OnlineOfflineRun MeanOf(std::span<const OnlineOfflineRun> runs) {
  OnlineOfflineRun m = OnlineOfflineTable().Mean(runs);
  if (runs.empty()) return m;
  // The timelines, point by point.
  const double n = static_cast<double>(runs.size());
  for (TimelinePoint& p : m.timeline) p.latency_ms = p.gpu_util = p.sm_activity = 0;
  for (const OnlineOfflineRun& r : runs) {
    for (size_t b = 0; b < m.timeline.size() && b < r.timeline.size(); ++b) {
      m.timeline[b].latency_ms += r.timeline[b].latency_ms / n;
      m.timeline[b].gpu_util += r.timeline[b].gpu_util / n;
      m.timeline[b].sm_activity += r.timeline[b].sm_activity / n;
    }
  }
  return m;
}

nlohmann::json OnlineOfflineJson(size_t seeds, std::span<const OnlineOfflineRun> means) {
  nlohmann::json results = OnlineOfflineTable().Json(means);
  for (size_t i = 0; i < means.size(); ++i) {
    nlohmann::json timeline = nlohmann::json::array();
    for (const TimelinePoint& p : means[i].timeline) {
      timeline.push_back({{"hour", p.hour},
                          {"latency_ms", p.latency_ms},
                          {"gpu_util", p.gpu_util},
                          {"sm_activity", p.sm_activity}});
    }
    results[i]["timeline"] = std::move(timeline);
  }
  return {{"experiment", "online-offline"}, {"seeds", seeds}, {"results", std::move(results)}};
}

std::string OnlineOfflineHtml(size_t seeds, std::span<const OnlineOfflineRun> means) {
  std::string html =
      report::PageOpen("tessera online-offline", "tessera simulate --experiment online-offline") +
      fmt::format(
          "<p>{} policies × {} seed(s), 16 × 8 T4, 24 h simulated; means over seeds. Latency: "
          "M/M/1 per replica plus the host latency (docs/results.md). The numbers are in "
          "<code>report.json</code>.</p>\n",
          means.size(), seeds) +
      OnlineOfflineTable().Html(means) + "<div>\n";
  // A line per policy through its hourly timeline, at each hour's middle.
  struct Chart {
    const char* title;
    const char* unit;
    double (*value)(const TimelinePoint&);
  };
  const Chart charts[] = {{"Online latency (request-weighted mean per hour)", "ms",
                           [](const TimelinePoint& p) { return p.latency_ms; }},
                          {"GPU utilisation (mean over GPUs)", "%",
                           [](const TimelinePoint& p) { return 100 * p.gpu_util; }},
                          {"SM activity (mean over GPUs)", "%",
                           [](const TimelinePoint& p) { return 100 * p.sm_activity; }}};
  for (const Chart& c : charts) {
    std::vector<report::Series> lines;
    double hours = 1;
    for (const OnlineOfflineRun& m : means) {
      report::Series line{.name = m.policy};
      for (const TimelinePoint& p : m.timeline) {
        line.points.push_back({p.hour + 0.5, c.value(p)});
        hours = std::max(hours, p.hour + 1);
      }
      lines.push_back(std::move(line));
    }
    html += report::LinesSvg(c.title, "hour of the day", c.unit, lines,
                             {.width = 640,
                              .height = 320,
                              .plot_width = 420,
                              .plot_height = 230,
                              .x_ticks = 8,
                              .x_max_at_least = hours,
                              .legend_gap = 20});
  }
  return html + "</div>\n" + report::PageClose();
}

namespace {
// `trainer_duty=D`, 0 < D ≤ 1, or nothing.
std::optional<double> TrainerDutyOf(std::string_view item) {
  constexpr std::string_view kKey = "trainer_duty=";
  if (!item.starts_with(kKey)) return std::nullopt;
  double duty = 0;  // > 0: from the smallest positive double up
  if (!ReadingNumberIn(item.substr(kKey.size()), std::nextafter(0.0, 1.0), 1, duty)) {
    return std::nullopt;
  }
  return duty;
}
}  // namespace

Expected<OnlineOfflineScenario> OnlineOfflineScenarioOf(std::string_view reading) {
  OnlineOfflineScenario scenario;
  for (const std::string_view item : ReadingItems(reading)) {
    if (item == "cluster=t4") {
      scenario.second_gpu.clear();
    } else if (item == "cluster=t4-a10") {
      scenario.second_gpu = "A10";
    } else if (item == "memory=resident") {
      scenario.service_memory.resident = true;
    } else if (item == "memory=footprint") {
      scenario.service_memory.resident = false;
    } else if (auto duty = TrainerDutyOf(item)) {
      scenario.trainer_duty = *duty;
    } else {
      return Fail(
          "--reading: '{}' is not one of cluster=t4|t4-a10, memory=resident|footprint, "
          "trainer_duty=D with 0 < D <= 1 (experiment online-offline)",
          item);
    }
  }
  return scenario;
}

Expected<void> CheckOnlineOfflineArgs(const ExperimentArgs& args) {
  for (const std::string& policy : args.policies) {
    if (auto v = VariantOf(policy); !v) return std::unexpected(v.error());
  }
  if (auto s = OnlineOfflineScenarioOf(args.reading); !s) return std::unexpected(s.error());
  return {};
}

Expected<ExperimentOutput> RunOnlineOfflineExperiment(const ExperimentArgs& args,
                                                      const Experiment& experiment) {
  Expected<AppCatalog> catalog = CatalogOf(args);
  if (!catalog) return std::unexpected(catalog.error());
  Expected<OnlineOfflineScenario> read = OnlineOfflineScenarioOf(args.reading);
  if (!read) return std::unexpected(read.error());
  const OnlineOfflineScenario& scenario = *read;
  auto means = MeansPerPolicy<OnlineOfflineRun>(
      args, experiment,
      [&](const std::string& policy, uint64_t seed) {
        return RunOnlineOffline(policy, scenario, seed, *catalog);
      },
      [](std::span<const OnlineOfflineRun> runs) { return MeanOf(runs); });
  if (!means) return std::unexpected(means.error());
  ExperimentOutput out{.json = OnlineOfflineJson(args.seeds.size(), *means)};
  out.table = fmt::format(
                  "experiment online-offline: {} x {} {}{}, 24 h, 3 online services on every "
                  "GPU, {} offline training jobs (Philly-like), {} seed(s)\n\n",
                  scenario.nodes, scenario.gpus_per_node, scenario.gpu,
                  scenario.second_gpu.empty() ? "" : " and " + scenario.second_gpu + " (half each)",
                  scenario.offline_jobs, args.seeds.size()) +
              OnlineOfflineTable().Text(*means);
  return WithReport(std::move(out), args.out, OnlineOfflineHtml(args.seeds.size(), *means));
}

namespace {

// One replica of the services per GPU of `cluster`, in turn, each reserving what the offline
// quota leaves, at its load at `now`; a line per replica for the scene's heading.
Expected<std::vector<std::string>> PlaceReplicas(std::span<const OnlineService> services,
                                                 model::GpuModelId t4, double now,
                                                 model::ClusterState& cluster, Physics& physics,
                                                 model::WorkloadId& id) {
  std::vector<std::string> lines;
  for (int g = 0; g < cluster.gpu_count(); ++g) {
    const OnlineService& s = services[static_cast<size_t>(g) % services.size()];
    const model::PartitionIndex p = model::ClusterState::PartitionOf(g, 0);
    model::Workload w;
    w.id = id++;
    w.name = fmt::format("{}-{}", s.name, g);
    w.app = s.app;
    w.gpu = {.count = 1, .milli = 1000, .models = {t4}};
    const int64_t memory = cluster.partition(p).memory_mib -
                           policy::OfflineMemoryCap(cluster.partition(p).memory_mib, 0.4);
    if (auto ok = cluster.Place(w, {w.id, 0, {{p, 1000, memory}}}); !ok) {
      return std::unexpected(ok.error());
    }
    physics.SetOfferedLoad(w.id, s.load);
    lines.push_back(fmt::format("{} ({}, {:.0f} QPS now)", w.name, s.app, s.load.QpsAt(now)));
  }
  return lines;
}

// What DCGM and NVML would publish: each service's SM activity, each GPU's total and its
// engine utilisation.
void PublishActivity(const model::ClusterState& cluster, Physics& physics,
                     telemetry::StaticTelemetry& telemetry) {
  for (int g = 0; g < cluster.gpu_count(); ++g) {
    double busy = 0, sm = 0;
    for (const model::Client& c :
         cluster.partition(model::ClusterState::PartitionOf(g, 0)).clients) {
      const model::PlacedWorkload& pw = *cluster.Find(c.workload);
      const RunRate r = physics.Rate(pw, cluster);
      busy += r.gpu_busy;
      sm += r.sm_load;
      if (!c.best_effort) telemetry.SetSmActivity(pw.workload.name, r.sm_load);
    }
    telemetry.SetSmActivity(cluster.gpu(g).uuid, std::min(1.0, sm));
    telemetry.SetUtilization(cluster.gpu(g).uuid, std::min(1.0, busy));
  }
}

// The explanation's world: one node of `gpus` T4s, the policy asked for, its predictor profiled
// on the T4, the clock at `start_s`.
Expected<std::unique_ptr<World>> ExplainWorld(const ExplainArgs& f, const AppCatalog& catalog,
                                              model::GpuModelId t4, int gpus, double start_s) {
  model::ClusterState node;
  if (auto ok = node.AddNode(model::UniformNode("t4-00", t4, gpus, 64000, 128 << 10)); !ok) {
    return std::unexpected(ok.error());
  }
  return World::Build(
      catalog, std::move(node),
      {.policy = f.policy,
       .seed = f.seed,
       .predictor = [&](const Physics& physics,
                        const model::ClusterState&) -> Expected<predict::Predictor> {
         return OnlineOfflinePredictor(physics, {"T4"}, f.seed);
       },
       .always_predict = true,
       .start_s = start_s});
}

}  // namespace

Expected<Explanation> ExplainOnlineOffline(const ExplainArgs& f) {
  const AppCatalog& full = *f.catalog;
  std::string out;
  constexpr int kGpus = 4;
  constexpr double kEvening = 20 * 3600.0;
  const std::vector<OnlineService> services = DefaultServices(kGpus);
  // Its telemetry is set by hand below: no trajectory plays a part.
  Expected<AppCatalog> catalog = OnlineOfflineCatalog(full, services, {.resident = false}, "T4");
  if (!catalog) return std::unexpected(catalog.error());
  const std::string app_key = f.app_set ? f.app : "train/resnet50";
  const AppSpec* app = catalog->Find(app_key);
  if (!app || std::none_of(full.training.begin(), full.training.end(),
                           [&](const AppSpec& t) { return t.key == app_key; })) {
    return Explanation{
        .usage_error = fmt::format(
            "--app: {} is explained with an offline training job; '{}' is not one of the "
            "catalogue's `training` apps",
            f.spec.name, app_key)};
  }
  const model::GpuModelId t4 = *model::FindGpuModel("T4");
  auto world = ExplainWorld(f, *catalog, t4, kGpus, kEvening);
  if (!world) return std::unexpected(world.error());
  model::ClusterState& cluster = (*world)->cluster;
  Physics& physics = (*world)->physics;
  policy::Policy& policy = *(*world)->policy;
  physics.SetTime(kEvening);
  auto job = [&](model::WorkloadId id, const AppSpec& a) {
    model::Workload w;
    w.id = id;
    w.name = fmt::format("job-{}", id);
    w.app = a.key;
    w.klass = model::WorkloadClass::kOffline;
    w.queries = 100000;
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = a.footprint_mib, .models = {t4}};
    return w;
  };
  // One replica per GPU, reserving what the offline quota leaves; GPU 3 also runs VGG16.
  model::WorkloadId id = 1;
  auto lines = PlaceReplicas(services, t4, kEvening, cluster, physics, id);
  if (!lines) return std::unexpected(lines.error());
  const model::Workload vgg = job(id++, *physics.catalog().Find("train/vgg16"));
  const model::PartitionIndex shared = model::ClusterState::PartitionOf(kGpus - 1, 0);
  if (auto ok = cluster.Place(vgg, {vgg.id, 0, {{shared, 700, 6000, /*best_effort=*/true}}}); !ok) {
    return std::unexpected(ok.error());
  }
  PublishActivity(cluster, physics, (*world)->telemetry);
  const model::Workload x = job(id++, *app);
  policy.AfterCycle(cluster);  // the first telemetry sample: Init → Healthy
  const model::Workload* pending[] = {&x};
  out += fmt::format(
      "scenario: online-offline (seed 001) at 20:00 — one node of {} T4s, each held by a "
      "service replica:\n",
      kGpus);
  for (const std::string& l : *lines) out += fmt::format("  {}\n", l);
  out += fmt::format("  GPU {} also runs {} (train/vgg16) at 70 % SM, best effort\n", kGpus - 1,
                     vgg.name);
  auto batch = policy.PlaceBatch(pending, cluster);
  if (batch && !batch->empty()) {
    if (auto ok = cluster.Place(x, batch->front().placement); !ok) {
      return std::unexpected(ok.error());
    }
    out += fmt::format("{} arrives ({}); a matching round places it.\n\n", x.name, x.app);
  } else {
    out += fmt::format("{} arrives ({}); no round placed it.\n\n", x.name, x.app);
  }
  out += policy.Explain(x, cluster);
  return Explanation{.text = std::move(out)};
}

}  // namespace tessera::sim
