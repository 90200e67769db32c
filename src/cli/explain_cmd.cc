// `tessera explain`: one scheduling decision, with the policy's breakdown (DESIGN §3, issue
// "thesis scheduler" §5). The built-in scenario is the thesis's cluster (Ch. 9): a V100-32GB
// node already running two pods under MPS at 25 % each, an idle A30-24GB node (MIG off), and a
// CPU node. The predictor is built from the Profiler's samples of the simulator's physics (as
// in `tessera simulate`), util(p) from what those two pods keep busy. Then one pod arrives
// and the policy says how it judges every partition it could take.
#include <fmt/core.h>

#include <cstdio>

#include "cli/commands.h"
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

int RunExplain(const ExplainFlags& f) {
  Expected<sim::AppCatalog> catalog =
      sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  if (!catalog) {
    std::fprintf(stderr, "tessera explain: %s\n", catalog.error().message.c_str());
    return 1;
  }
  sim::Physics physics(*catalog, f.seed);
  const sim::AppSpec* app = physics.catalog().Find(f.app);
  if (!app) {
    std::fprintf(stderr, "tessera explain: unknown application '%s'\n", f.app.c_str());
    return 1;
  }
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(f.policy);
  if (!spec) {
    std::fprintf(stderr, "tessera explain: %s\n", spec.error().message.c_str());
    return 1;
  }
  Expected<sim::ProfileSamples> samples =
      sim::Profiler(physics).Sample({"V100-32GB", "A30-24GB"}, f.seed);
  if (!samples) {
    std::fprintf(stderr, "tessera explain: %s\n", samples.error().message.c_str());
    return 1;
  }
  Expected<predict::Predictor> predictor =
      predict::Predictor::Create(samples->TakeProfile(), samples->TakeInterference());
  if (!predictor) {
    std::fprintf(stderr, "tessera explain: %s\n", predictor.error().message.c_str());
    return 1;
  }

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
      std::fprintf(stderr, "tessera explain: %s\n", ok.error().message.c_str());
      return 1;
    }
    busy += physics.Rate(*cluster.Find(w.id), cluster).gpu_busy;
  }
  telemetry.SetUtilization(cluster.partition(v100).uuid, std::min(1.0, busy));
  telemetry.SetUtilization(cluster.partition(model::ClusterState::PartitionOf(1, 0)).uuid, 0);

  Rng rng(f.seed);
  auto policy =
      policy::MakePolicy(spec->name, {&rng, nullptr, &*predictor, &telemetry}, spec->options);
  if (!policy) {
    std::fprintf(stderr, "tessera explain: %s\n", policy.error().message.c_str());
    return 1;
  }
  model::Workload x;
  x.id = 3;
  x.name = fmt::format("{}-3", app->key);
  x.app = app->key;
  x.slo_qps = f.slo > 0
                  ? f.slo
                  : (physics.IsolatedQps(*app, v100_model, -1, 250) +
                     physics.IsolatedQps(
                         *app, cluster.gpu(1).model,
                         *model::GetGpuModel(cluster.gpu(1).model).FindProfile("1g.6gb"), 1000)) /
                        2;
  x.cpu_milli = 1000;
  x.memory_mib = 4096;
  x.gpu.count = 1;
  x.gpu.memory_mib = (app->footprint_mib + 255) / 256 * 256;
  std::printf(
      "scenario: thesis cluster (Ch. 9) — v100 runs %s and %s at 25%% MPS each (util %.2f), "
      "a30 is idle with MIG off, cpu has no GPU\n\n",
      running[0], running[1], std::min(1.0, busy));
  std::fputs((*policy)->Explain(x, cluster).c_str(), stdout);
  return 0;
}

}  // namespace

void AddExplain(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ExplainFlags>();
  CLI::App* sub = app.add_subcommand(
      "explain", "Print the score breakdown of one scheduling decision on a built-in scenario");
  sub->add_option("--policy", flags->policy,
                  "Policy, optionally with options: name or name{json} (default predictive)");
  sub->add_option("--app", flags->app, "Application of the arriving pod (default onnx/resnet50)");
  sub->add_option("--slo", flags->slo, "Its SLO in QPS (default: SLO_4, the thesis's low SLO)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", flags->seed, "Seed of the physics and the profiling (default 1)");
  sub->callback([flags, exit_code] { *exit_code = RunExplain(*flags); });
}

}  // namespace tessera::cli
