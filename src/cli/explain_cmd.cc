// `tessera explain`: one scheduling decision, with the policy's breakdown (DESIGN §3, issue
// "thesis scheduler" §5). The built-in scenario is the thesis's cluster (Ch. 9): a V100-32GB
// node already running two pods under MPS at 25 % each, an idle A30-24GB node (MIG off), and a
// CPU node. The predictor is built from the Profiler's samples of the simulator's physics (as
// in `tessera simulate`), util(p) from what those two pods keep busy. Then one pod arrives
// and the policy says how it judges every partition it could take.
//
// muxflow (issue #17) gets the online-offline experiment's world instead: one node of four T4s
// at the evening peak (20:00), each held by a replica of the experiment's services with its SM
// activity and utilisation published, GPU 3 already sharing with a VGG16 training job; an
// offline training job (--app, default train/resnet50) arrives, a matching round places it, and
// the policy explains each GPU's SysMonitor state and why the job went where it did.
//
// The policies that share GPUs by memory (gpushare, resource-aware, knots-*; issue #16) get a
// V100-32GB node with 30 s of memory, SM and bandwidth series, as DCGM and the agent publish
// them: GPU 0 holds two TF SSD-MobileNet engines that asked for 14,336 MiB each (100 %
// over-provisioned) and use about 7,000 each, steadily; GPU 1 one that asked for 24,576 MiB and
// is still growing. One more engine asks for 14,336 MiB, and the policy says which check let it
// in where, with what percentile, correlation or forecast.
//
// drmaestro (issue #18) gets the disaggregation experiment's world, small: three nodes of two
// K80s, node k80-0's CPU held by the warm-up, an NW job already running on k80-1 with its GPU
// on k80-0 (loading both nodes' network), and five Rodinia-like jobs pending. Two cycles run;
// after each the policy prints its two flow networks (arcs per kind, costs) and each job's fate.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/policy_flags.h"
#include "policy/drmaestro.h"
#include "policy/muxflow.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "sim/disaggregation.h"
#include "sim/embedded_apps.h"
#include "sim/online_offline.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "sim/thesis.h"
#include "telemetry/telemetry.h"

namespace tessera::cli {
namespace {

struct ExplainFlags {
  std::string policy = "predictive";
  std::string app = "onnx/resnet50";
  double slo = 0;  // 0: the app's SLO_4 (isolated on a quarter of the GPU), as in the thesis
  uint64_t seed = 1;
  bool app_set = false;  // --app given (muxflow's default is a training job)
};

Status RunMuxflowExplain(const ExplainFlags& f, const policy::PolicySpec& spec,
                         const sim::AppCatalog& full) {
  constexpr int kGpus = 4;
  constexpr double kEvening = 20 * 3600.0;
  const std::vector<sim::OnlineService> services = sim::DefaultServices(kGpus);
  Expected<sim::AppCatalog> catalog = sim::OnlineOfflineCatalog(full, services);
  if (!catalog) return Failed(catalog.error());
  sim::Physics physics(*catalog, f.seed);
  const std::string app_key = f.app_set ? f.app : "train/resnet50";
  const sim::AppSpec* app = physics.catalog().Find(app_key);
  if (!app || std::none_of(full.training.begin(), full.training.end(),
                           [&](const sim::AppSpec& t) { return t.key == app_key; })) {
    return Usage(
        "--app: muxflow explains an offline training job; '{}' is not one of the "
        "catalogue's `training` apps",
        app_key);
  }
  Expected<predict::Predictor> predictor = sim::OnlineOfflinePredictor(physics, "T4", f.seed);
  if (!predictor) return Failed(predictor.error());

  model::ClusterState cluster;
  const model::GpuModelId t4 = *model::FindGpuModel("T4");
  if (auto ok = cluster.AddNode(model::UniformNode("t4-00", t4, kGpus, 64000, 128 << 10)); !ok) {
    return Failed(ok.error());
  }
  physics.SetTime(kEvening);
  auto job = [&](model::WorkloadId id, const sim::AppSpec& a) {
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
  std::vector<std::string> lines;
  for (int g = 0; g < kGpus; ++g) {
    const sim::OnlineService& s = services[static_cast<size_t>(g) % services.size()];
    const model::PartitionIndex p = model::ClusterState::PartitionOf(g, 0);
    model::Workload w;
    w.id = id++;
    w.name = fmt::format("{}-{}", s.name, g);
    w.app = s.app;
    w.gpu = {.count = 1, .milli = 1000, .models = {t4}};
    const int64_t memory = cluster.partition(p).memory_mib -
                           policy::OfflineMemoryCap(cluster.partition(p).memory_mib, 0.4);
    if (auto ok = cluster.Place(w, {w.id, 0, {{p, 1000, memory}}}); !ok) {
      return Failed(ok.error());
    }
    physics.SetOfferedLoad(w.id, s.load);
    lines.push_back(fmt::format("{} ({}, {:.0f} QPS now)", w.name, s.app, s.load.QpsAt(kEvening)));
  }
  const model::Workload vgg = job(id++, *physics.catalog().Find("train/vgg16"));
  const model::PartitionIndex shared = model::ClusterState::PartitionOf(kGpus - 1, 0);
  if (auto ok = cluster.Place(vgg, {vgg.id, 0, {{shared, 700, 6000, /*best_effort=*/true}}}); !ok) {
    return Failed(ok.error());
  }
  // What DCGM and NVML would publish: each service's SM activity, each GPU's total and its
  // engine utilisation.
  telemetry::StaticTelemetry telemetry;
  for (int g = 0; g < kGpus; ++g) {
    double busy = 0, sm = 0;
    for (const model::Client& c :
         cluster.partition(model::ClusterState::PartitionOf(g, 0)).clients) {
      const model::PlacedWorkload& pw = *cluster.Find(c.workload);
      const sim::RunRate r = physics.Rate(pw, cluster);
      busy += r.gpu_busy;
      sm += r.sm_load;
      if (!c.best_effort) telemetry.SetSmActivity(pw.workload.name, r.sm_load);
    }
    telemetry.SetSmActivity(cluster.gpu(g).uuid, std::min(1.0, sm));
    telemetry.SetUtilization(cluster.gpu(g).uuid, std::min(1.0, busy));
  }
  Rng rng(f.seed);
  ManualClock clock;
  clock.Set(kEvening);
  auto policy = policy::MakePolicy(
      spec.name, {.rng = &rng, .clock = &clock, .predictor = &*predictor, .telemetry = &telemetry},
      spec.options);
  if (!policy) return Failed(policy.error());
  const model::Workload x = job(id++, *app);
  (*policy)->Evict(cluster);  // the first telemetry sample: Init → Healthy
  const model::Workload* pending[] = {&x};
  std::printf(
      "scenario: online-offline (issue #17) at 20:00 — one node of %d T4s, each held by a "
      "service replica:\n",
      kGpus);
  for (const std::string& l : lines) std::printf("  %s\n", l.c_str());
  std::printf("  GPU %d also runs %s (train/vgg16) at 70 %% SM, best effort\n", kGpus - 1,
              vgg.name.c_str());
  auto batch = (*policy)->PlaceBatch(pending, cluster);
  if (batch && !batch->empty()) {
    if (auto ok = cluster.Place(x, batch->front().placement); !ok) return Failed(ok.error());
    std::printf("%s arrives (%s); a matching round places it.\n\n", x.name.c_str(), x.app.c_str());
  } else {
    std::printf("%s arrives (%s); no round placed it.\n\n", x.name.c_str(), x.app.c_str());
  }
  std::fputs((*policy)->Explain(x, cluster).c_str(), stdout);
  return {};
}

Status RunMemoryShareExplain(const ExplainFlags& f, const policy::PolicySpec& spec) {
  constexpr int64_t kRequest = 14336;
  const std::string app = f.app_set ? f.app : "tf/ssd-mobilenet";
  model::ClusterState cluster;
  const model::GpuModelId v100 = *model::FindGpuModel("V100-32GB");
  if (auto ok = cluster.AddNode(model::UniformNode("v100-0", v100, 2, 64000, 128 << 10)); !ok) {
    return Failed(ok.error());
  }
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
  telemetry::StaticTelemetry telemetry;
  Rng jitter(f.seed);
  std::vector<double> gpu0(30, 0), gpu0_sm(30, 0), gpu0_bw(30, 0);
  for (model::WorkloadId id : {1, 2}) {
    const model::Workload w = engine(id, kRequest);
    if (auto ok = cluster.Place(w, {w.id, 0, {{0, 1000, 0, /*best_effort=*/true}}}); !ok) {
      return Failed(ok.error());
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
    return Failed(ok.error());
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
  Rng rng(f.seed);
  ManualClock clock(29.5);
  auto policy = policy::MakePolicy(
      spec.name, {.rng = &rng, .clock = &clock, .telemetry = &telemetry}, spec.options);
  if (!policy) return Failed(policy.error());
  (*policy)->Evict(cluster);  // the policies read the telemetry as they would each cycle
  const model::Workload x = engine(4, kRequest);
  std::printf(
      "scenario: one V100-32GB node (issue #16), 30 s of memory, SM and bandwidth series.\n"
      "  GPU 0: engine-1 and engine-2 (%s), each asked for %lld MiB and uses about 7000\n"
      "  GPU 1: engine-3 asked for 24576 MiB; its use grows 4000 -> 15600 MiB (still loading)\n"
      "%s arrives asking for %lld MiB.\n\n",
      app.c_str(), static_cast<long long>(kRequest), x.name.c_str(),
      static_cast<long long>(kRequest));
  std::fputs((*policy)->Explain(x, cluster).c_str(), stdout);
  return {};
}

Status RunDrmaestroExplain(const ExplainFlags& f, const policy::PolicySpec& spec,
                           const sim::AppCatalog& full_catalog) {
  const sim::AppCatalog catalog = sim::SharingCatalog(full_catalog);
  const model::GpuModelId k80 = *model::FindGpuModel("K80");
  const std::vector<std::string> apps = {"rodinia/nw", "rodinia/hotspot", "rodinia/lavamd",
                                         "rodinia/btree", "rodinia/srad"};
  const policy::JobProfiles profiles = sim::ProfileJobs(catalog, apps, k80);
  model::ClusterState cluster;
  for (int n = 0; n < 3; ++n) {
    if (auto ok = cluster.AddNode(
            model::UniformNode(fmt::format("k80-{}", n), k80, 2, 160'000, 512 << 10));
        !ok) {
      return Failed(ok.error());
    }
  }
  model::Workload warmup;
  warmup.id = 1;
  warmup.name = "warmup";
  warmup.cpu_milli = 160'000;
  if (auto ok = cluster.Place(warmup, {.workload = 1, .node = 0}); !ok) return Failed(ok.error());
  const auto job = [&](model::WorkloadId id, const std::string& app, double slack, int z) {
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
  };
  const model::Workload running = job(2, "rodinia/nw", 0.5, 5);
  if (auto ok = cluster.Place(
          running, {.workload = 2,
                    .node = 1,
                    .slices = {{model::ClusterState::PartitionOf(0, 0), 1000, 0, false, true}}});
      !ok) {
    return Failed(ok.error());
  }
  std::vector<model::Workload> jobs;
  jobs.push_back(job(3, "rodinia/nw", 0.1, 1));
  jobs.push_back(job(4, "rodinia/hotspot", 0.1, 5));
  jobs.push_back(job(5, "rodinia/lavamd", 0.3, 5));
  jobs.push_back(job(6, "rodinia/btree", 0.5, 9));
  jobs.push_back(job(7, "rodinia/srad", 0.2, 3));
  Rng rng(f.seed);
  ManualClock clock;
  auto policy = policy::MakePolicy(
      spec.name, {.rng = &rng, .clock = &clock, .job_profiles = &profiles}, spec.options);
  if (!policy) return Failed(policy.error());
  std::vector<const model::Workload*> pending;
  for (const model::Workload& w : jobs) pending.push_back(&w);
  std::printf(
      "scenario: disaggregation (issue #18) — 3 nodes of 2 K80s; k80-0's CPU held by the "
      "warm-up; job 2 (rodinia/nw) runs on k80-1 with its GPU on k80-0 (remote); jobs 3-7 "
      "pending (nw, hotspot, lavamd, btree, srad; goals 10-50 %% above their run alone)\n\n");
  // Two cycles: what the first leaves waiting has W = 1 in the second.
  for (int cycle = 1; cycle <= 2; ++cycle) {
    (*policy)->Order(pending);
    auto batch = (*policy)->PlaceBatch(pending, cluster);
    if (!batch) return Failed("{}: no batch placement", spec.name);
    std::printf("cycle %d: ", cycle);
    std::fputs((*policy)->Explain(*pending.front(), cluster).c_str(), stdout);
    for (const policy::Candidate& c : *batch) {
      const auto it = std::find_if(jobs.begin(), jobs.end(), [&](const model::Workload& w) {
        return w.id == c.placement.workload;
      });
      if (it == jobs.end()) continue;
      if (auto ok = cluster.Place(*it, c.placement); !ok) return Failed(ok.error());
      std::erase(pending, &*it);
    }
    if (pending.empty()) break;
    std::printf("\n");
  }
  return {};
}

Status RunExplain(const ExplainFlags& f) {
  Expected<sim::AppCatalog> catalog =
      sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  if (!catalog) return Failed(catalog.error());
  if (Expected<policy::PolicySpec> spec = ParseRegisteredPolicy(f.policy); spec) {
    if (spec->name == "muxflow") return RunMuxflowExplain(f, *spec, *catalog);
    if (spec->name == "drmaestro") return RunDrmaestroExplain(f, *spec, *catalog);
    // The policies that share GPUs by memory are those that allocate no compute.
    const std::optional<policy::PolicyInfo> info = policy::FindPolicy(spec->name);
    if (info && !info->allocates_compute) return RunMemoryShareExplain(f, *spec);
  }
  sim::Physics physics(*catalog, f.seed);
  const sim::AppSpec* app = physics.catalog().Find(f.app);
  if (!app) return Usage("--app: unknown application '{}'", f.app);
  Expected<policy::PolicySpec> spec = ParseRegisteredPolicy(f.policy);
  if (!spec) return Usage(spec.error());
  // Profiled as a run of the thesis experiment is (its engines on every configuration, ten runs
  // each), so the explanation shows the predictions and margins that experiment decides on.
  Expected<sim::ProfileSamples> samples = sim::Profiler(physics, sim::ThesisProfiling({}, f.seed))
                                              .Sample({"V100-32GB", "A30-24GB"}, f.seed);
  if (!samples) return Failed(samples.error());
  Expected<predict::Predictor> predictor = predict::Predictor::Create(
      samples->TakeProfile(), samples->TakeInterference(), {}, sim::CatalogFeatures(*catalog));
  if (!predictor) return Failed(predictor.error());

  model::ClusterState cluster = sim::ThesisCluster();
  telemetry::StaticTelemetry telemetry;
  const model::PartitionIndex v100 = model::ClusterState::PartitionOf(0, 0);
  const int64_t quarter = cluster.partition(v100).memory_mib / 4;
  const char* running[] = {"tf/mobilenet", "onnx/ssd-mobilenet"};
  const model::GpuModelId v100_model = cluster.gpu(0).model;
  double busy = 0;
  for (int i = 0; i < 2; ++i) {
    const sim::AppSpec* r = physics.catalog().Find(running[i]);
    model::Workload w;
    w.id = i + 1;
    w.name = fmt::format("{}-{}", r->key, w.id);
    w.app = r->key;
    w.slo_qps = physics.IsolatedQps(*r, v100_model, -1, 250);
    w.gpu.count = 1;
    if (auto ok = cluster.Place(w, {w.id, 0, {{v100, 250, quarter}}}); !ok) {
      return Failed(ok.error());
    }
    busy += physics.Rate(*cluster.Find(w.id), cluster).gpu_busy;
  }
  telemetry.SetUtilization(cluster.partition(v100).uuid, std::min(1.0, busy));
  telemetry.SetUtilization(cluster.partition(model::ClusterState::PartitionOf(1, 0)).uuid, 0);

  Rng rng(f.seed);
  ManualClock clock;
  auto policy =
      policy::MakePolicy(spec->name, {&rng, &clock, &*predictor, &telemetry}, spec->options);
  if (!policy) return Failed(policy.error());
  model::Workload x = sim::ThesisPod(*app, 3);
  x.slo_qps = f.slo > 0 ? f.slo : sim::ThesisSloBase(*app, /*high_slo=*/false, physics);
  std::printf(
      "scenario: thesis cluster (Ch. 9) — v100 runs %s and %s at 25%% MPS each (util %.2f), "
      "a30 is idle with MIG off, cpu has no GPU\n\n",
      running[0], running[1], std::min(1.0, busy));
  std::fputs((*policy)->Explain(x, cluster).c_str(), stdout);
  return {};
}

}  // namespace

void AddExplain(CLI::App& app, Status* status) {
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* sub = app.add_subcommand(
      "explain", "Print the score breakdown of one scheduling decision on a built-in scenario");
  sub->add_option("--policy", flags->policy,
                  "Policy, optionally with options: name or name{json} (default predictive)");
  sub->add_option("--app", flags->app,
                  "Application of the arriving pod (default onnx/resnet50; muxflow: a training "
                  "job, default train/resnet50)")
      ->each([flags](const std::string&) { flags->app_set = true; });
  sub->add_option("--slo", flags->slo, "Its SLO in QPS (default: SLO_4, the thesis's low SLO)")
      ->check(FiniteRange(0.0, 1e9));
  sub->add_option("--seed", flags->seed,
                  "Seed of the physics and the profiling, 0..2^64-1 (default 1)")
      ->check(SeedCheck());
  sub->callback([flags, status] { *status = RunExplain(*flags); });
}

}  // namespace tessera::cli
