// `tessera explain`: one scheduling decision, with the policy's breakdown (DESIGN §3, issue
// "thesis scheduler" §5). The built-in scenario is the thesis's cluster (Ch. 9): a V100-32GB
// node already running two pods under MPS at 25 % each, an idle A30-24GB node (MIG off), and a
// CPU node. The predictor is built from the Profiler's samples of the simulator's physics (as
// in `tessera simulate`), util(p) from what those two pods keep busy. Then one pod arrives
// and the policy says how it judges every partition it could take.
#include <fmt/core.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/policy_flags.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "sim/embedded_apps.h"
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
};

Status RunExplain(const ExplainFlags& f) {
  Expected<sim::AppCatalog> catalog =
      sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  if (!catalog) return Failed(catalog.error());
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
  sub->add_option("--app", flags->app, "Application of the arriving pod (default onnx/resnet50)");
  sub->add_option("--slo", flags->slo, "Its SLO in QPS (default: SLO_4, the thesis's low SLO)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", flags->seed,
                  "Seed of the physics and the profiling, 0..2^64-1 (default 1)")
      ->check(SeedCheck());
  sub->callback([flags, status] { *status = RunExplain(*flags); });
}

}  // namespace tessera::cli
