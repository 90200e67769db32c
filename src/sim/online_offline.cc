#include "sim/online_offline.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/clock.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "sim/engine.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {
namespace {

constexpr std::string_view kPolicies[] = {"online-only", "ts",        "pb-ts",      "muxflow",
                                          "muxflow-S",   "muxflow-M", "muxflow-S-M"};

// A service never finishes within the day: more queries than any replica can serve.
constexpr int64_t kServiceQueries = int64_t{1} << 50;
constexpr double kLoadIntervalS = 60;
constexpr double kCycleIntervalS = 10;  // a cycle also runs on every event and load tick
constexpr double kBucketS = 3600;
// Without dynamic SM, 001's ablation keeps a fixed offline share; its Fig. 8 example is 40 %.
constexpr int kFixedSmPercent = 40;

struct Variant {
  bool offline = true;
  PhysicsOptions::Sharing sharing = PhysicsOptions::Sharing::kMps;
  nlohmann::json options = nlohmann::json::object();
};

Expected<Variant> VariantOf(std::string_view spec) {
  using Sharing = PhysicsOptions::Sharing;
  Variant v;
  // NAME{json}: muxflow options over the variant's own (e.g. muxflow{"period_s":60}).
  std::string_view policy = spec;
  nlohmann::json extra = nlohmann::json::object();
  if (const size_t brace = spec.find('{'); brace != std::string_view::npos) {
    policy = spec.substr(0, brace);
    extra = nlohmann::json::parse(spec.substr(brace), nullptr, /*allow_exceptions=*/false);
    if (!extra.is_object()) {
      return Fail(
          "experiment online-offline: unknown policy '{}': the options after the name "
          "must be one JSON object",
          spec);
    }
  }
  if (policy == "online-only") {
    v.offline = false;
  } else if (policy == "ts" || policy == "pb-ts") {
    // First come, first placed, at MPS's full share, and nothing protects the service.
    v.sharing = policy == "ts" ? Sharing::kTimeSlice : Sharing::kPriorityTimeSlice;
    const nlohmann::json never = {2, 2, 2};
    v.options = {{"dynamic_sm", false},
                 {"matching", false},
                 {"offline_period", true},
                 {"gpu_util_thresholds", never},
                 {"sm_activity_thresholds", never},
                 {"memory_thresholds", never},
                 {"clock_drop_thresholds", never}};
  } else if (policy == "muxflow-S") {
    v.options = {{"dynamic_sm", false}, {"fixed_sm_percent", kFixedSmPercent}};
  } else if (policy == "muxflow-M") {
    v.options = {{"matching", false}, {"offline_period", true}};
  } else if (policy == "muxflow-S-M") {
    v.options = {{"dynamic_sm", false},
                 {"fixed_sm_percent", kFixedSmPercent},
                 {"matching", false},
                 {"offline_period", true}};
  } else if (policy != "muxflow") {
    return Fail(
        "experiment online-offline: unknown policy '{}' (one of online-only, ts, pb-ts, "
        "muxflow, muxflow-S, muxflow-M, muxflow-S-M)",
        policy);
  }
  v.options.update(extra);
  return v;
}

}  // namespace

Expected<AppCatalog> OnlineOfflineCatalog(const AppCatalog& catalog,
                                          std::span<const OnlineService> services) {
  AppCatalog out;
  out.reference_gpu = catalog.reference_gpu;
  for (const OnlineService& s : services) {
    const AppSpec* app = catalog.Find(s.app);
    if (!app) return Fail("experiment online-offline: service {} needs app '{}'", s.name, s.app);
    if (!out.Find(app->key)) out.apps.push_back(*app);
  }
  if (catalog.training.empty()) {
    return Fail("experiment online-offline: the catalogue lists no `training` apps");
  }
  for (const AppSpec& t : catalog.training) out.apps.push_back(t);
  return out;
}

Expected<predict::Predictor> OnlineOfflinePredictor(const Physics& physics, const std::string& gpu,
                                                    uint64_t seed) {
  ProfilerOptions profiling;
  for (const AppSpec& a : physics.catalog().apps) profiling.full_apps.push_back(a.key);
  profiling.full_runs = 3;
  profiling.interference_gpu = gpu;
  Expected<ProfileSamples> samples = Profiler(physics, profiling).Sample({gpu}, seed);
  if (!samples) return std::unexpected(samples.error());
  return predict::Predictor::Create(samples->TakeProfile(), samples->TakeInterference(), {},
                                    CatalogFeatures(physics.catalog()));
}

namespace {

model::ClusterState MakeCluster(const OnlineOfflineScenario& s, model::GpuModelId gpu) {
  model::ClusterState cluster;
  for (int n = 0; n < s.nodes; ++n) {
    TESSERA_CHECK(cluster
                      .AddNode(model::UniformNode(fmt::format("t4-{:02}", n), gpu, s.gpus_per_node,
                                                  64000, int64_t{128} << 10))
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

std::span<const std::string_view> OnlineOfflinePolicies() { return kPolicies; }

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

Expected<OnlineOfflineRun> RunOnlineOffline(std::string_view policy_name,
                                            const OnlineOfflineScenario& scenario, uint64_t seed,
                                            const AppCatalog& full_catalog) {
  Expected<Variant> variant = VariantOf(policy_name);
  if (!variant) return std::unexpected(variant.error());
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(scenario.gpu);
  if (!gpu) return Fail("experiment online-offline: unknown GPU model '{}'", scenario.gpu);
  const int gpus = scenario.nodes * scenario.gpus_per_node;
  const std::vector<OnlineService> services =
      scenario.services.empty() ? DefaultServices(gpus) : scenario.services;
  Expected<AppCatalog> catalog = OnlineOfflineCatalog(full_catalog, services);
  if (!catalog) return std::unexpected(catalog.error());

  PhysicsOptions physics_options;
  physics_options.sharing = variant->sharing;
  Physics physics(*catalog, seed, physics_options);
  model::ClusterState cluster = MakeCluster(scenario, *gpu);

  Expected<predict::Predictor> predictor = OnlineOfflinePredictor(physics, scenario.gpu, seed);
  if (!predictor) return std::unexpected(predictor.error());

  Rng rng(seed);
  ManualClock clock;
  telemetry::StaticTelemetry telemetry;
  auto policy = policy::MakePolicy("muxflow",
                                   {.rng = &rng,
                                    .clock = &clock,
                                    .predictor = &*predictor,
                                    .telemetry = &telemetry,
                                    .can_move = true},
                                   variant->options);
  if (!policy) return std::unexpected(policy.error());
  Engine engine(cluster, **policy, physics, rng,
                {.cycle_interval_s = kCycleIntervalS,
                 .horizon_s = scenario.horizon_s,
                 .telemetry = &telemetry,
                 .telemetry_interval_s = kCycleIntervalS,
                 .clock = &clock,
                 .load_interval_s = kLoadIntervalS});

  // The services first, at t = 0, one replica per GPU.
  model::WorkloadId next_id = 1;
  std::map<model::WorkloadId, const OnlineService*> service_of;
  for (const OnlineService& s : services) {
    for (int r = 0; r < s.replicas; ++r) {
      model::Workload w;
      w.id = next_id++;
      w.name = fmt::format("{}-{}", s.name, r);
      w.app = s.app;
      w.klass = model::WorkloadClass::kOnline;
      w.queries = kServiceQueries;
      w.gpu = {.count = 1, .milli = 1000, .models = {*gpu}};
      w.arrival_s = 0;
      physics.SetOfferedLoad(w.id, s.load);
      service_of[w.id] = &s;
      if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
    }
  }
  // The offline trace: its own stream, so every policy of a seed sees the same jobs.
  int offline_jobs = 0;
  if (variant->offline) {
    Rng trace(seed ^ 0x0ff11e5ULL);
    double t = 0;
    for (int j = 0; j < scenario.offline_jobs; ++j) {
      t += trace.Exponential(scenario.offline_jobs / scenario.submit_window_s);
      const std::string& key = full_catalog.training[trace.Below(full_catalog.training.size())].key;
      const AppSpec& app = *catalog->Find(key);
      const double duration = std::min(
          scenario.duration_max_s,
          scenario.duration_median_s * std::exp(scenario.duration_sigma * trace.Normal(0, 1)));
      const double rate = physics.IsolatedQps(app, *gpu, -1, 1000);  // iterations/s alone
      model::Workload w;
      w.id = next_id++;
      w.name = fmt::format("job-{}", j);
      w.app = app.key;
      w.klass = model::WorkloadClass::kOffline;
      w.queries = std::max<int64_t>(1, std::llround(duration * rate));
      w.checkpoint_queries = std::max<int64_t>(1, std::llround(scenario.checkpoint_s * rate));
      w.gpu = {.count = 1, .milli = 1000, .memory_mib = app.footprint_mib, .models = {*gpu}};
      w.arrival_s = t;
      if (auto ok = engine.Add(std::move(w)); !ok) return std::unexpected(ok.error());
      ++offline_jobs;
    }
  }
  const EngineResult result = engine.Run();

  OnlineOfflineRun run;
  run.policy = std::string(policy_name);
  run.seed = seed;
  run.offline_jobs = offline_jobs;
  const double host_s = scenario.host_latency_ms / 1000;
  std::vector<QueueObservation> all;
  std::vector<std::vector<QueueObservation>> by_hour(
      static_cast<size_t>(std::ceil(scenario.horizon_s / kBucketS)));
  int64_t ticks = 0, overloaded = 0;
  double jct_sum = 0;
  for (const WorkloadOutcome& o : result.workloads) {
    if (auto it = service_of.find(o.workload.id); it != service_of.end()) {
      for (const LoadSample& s : o.load) {
        const double lambda = it->second->load.QpsAt(s.t);
        const QueueObservation q{lambda * kLoadIntervalS, lambda, s.capacity_qps};
        all.push_back(q);
        const auto bucket = static_cast<size_t>(s.t / kBucketS);
        if (bucket < by_hour.size()) by_hour[bucket].push_back(q);
        ++ticks;
        overloaded += lambda >= 0.99 * s.capacity_qps;
      }
      continue;
    }
    if (o.start_s) run.executions += 1 + o.moves;
    run.evictions += o.moves;
    run.lost_iterations += o.lost_queries;
    if (o.end_s && !o.failed) {
      ++run.offline_jobs_done;
      jct_sum += *o.end_s - o.workload.arrival_s;
    }
  }
  run.online_latency_mean_ms = 1000 * MeanLatency(all, host_s);
  run.online_latency_p99_ms = 1000 * LatencyQuantile(all, host_s, 0.99);
  run.overloaded_share = ticks > 0 ? static_cast<double>(overloaded) / ticks : 0;
  run.offline_jct_mean_s = run.offline_jobs_done > 0 ? jct_sum / run.offline_jobs_done : 0;
  const double gpu_time = gpus * std::max(1.0, result.stop_s);
  run.gpu_util_mean = result.gpu_util_integral / gpu_time;
  run.sm_activity_mean = result.sm_activity_integral / gpu_time;
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
  run.timeline = std::move(timeline);
  return run;
}

OnlineOfflineRun MeanOf(std::span<const OnlineOfflineRun> runs) {
  OnlineOfflineRun m;
  if (runs.empty()) return m;
  m.policy = runs.front().policy;
  m.seed = runs.front().seed;
  const double n = static_cast<double>(runs.size());
  m.timeline = runs.front().timeline;
  for (TimelinePoint& p : m.timeline) p.latency_ms = p.gpu_util = p.sm_activity = 0;
  for (const OnlineOfflineRun& r : runs) {
    m.online_latency_mean_ms += r.online_latency_mean_ms / n;
    m.online_latency_p99_ms += r.online_latency_p99_ms / n;
    m.overloaded_share += r.overloaded_share / n;
    m.gpu_util_mean += r.gpu_util_mean / n;
    m.sm_activity_mean += r.sm_activity_mean / n;
    m.offline_jct_mean_s += r.offline_jct_mean_s / n;
    m.offline_jobs_done += r.offline_jobs_done / n;
    m.offline_jobs += r.offline_jobs / n;
    m.evictions += r.evictions / n;
    m.executions += r.executions / n;
    m.lost_iterations += r.lost_iterations / n;
    for (size_t b = 0; b < m.timeline.size() && b < r.timeline.size(); ++b) {
      m.timeline[b].latency_ms += r.timeline[b].latency_ms / n;
      m.timeline[b].gpu_util += r.timeline[b].gpu_util / n;
      m.timeline[b].sm_activity += r.timeline[b].sm_activity / n;
    }
  }
  return m;
}

}  // namespace tessera::sim
