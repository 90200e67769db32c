#include "plan/planner.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "base/rng.h"
#include "model/gpu_model.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "sim/thesis.h"

namespace tessera::plan {

Expected<predict::Predictor> ProfiledPredictor(const PlanInput& input,
                                               const sim::AppCatalog& catalog, uint64_t seed) {
  sim::ProfilerOptions options;
  std::set<std::string> full;
  for (const ServiceSpec& s : input.services) {
    if (catalog.Find(s.app) != nullptr && full.insert(s.app).second) {
      options.full_apps.push_back(s.app);
    }
  }
  std::vector<std::string> models;
  for (const GpuOffer& g : input.gpus) models.push_back(model::GetGpuModel(g.model).name);
  const sim::Physics physics(catalog, seed);
  auto samples = sim::Profiler(physics, options).Sample(models, seed);
  if (!samples) return std::unexpected(samples.error());
  auto predictor = predict::Predictor::Create(samples->TakeProfile(), samples->TakeInterference(),
                                              {}, sim::CatalogFeatures(catalog));
  if (!predictor) return std::unexpected(predictor.error());
  bool declared = false;
  for (const ServiceSpec& s : input.services) {
    if (!s.features.empty() && !predictor->FindApp(s.AppKey())) {
      auto ok = predictor->SetFeatures(s.AppKey(), s.features);
      if (!ok) {
        return FailAt(input.file, s.line,
                      fmt::format("service {}: {}", s.name, ok.error().message));
      }
      declared = true;
    }
  }
  if (declared) {
    if (auto ok = predictor->Refit(); !ok) return std::unexpected(ok.error());
  }
  return predictor;
}

Expected<PlanRun> RunPlanner(PlanInput input, const sim::AppCatalog& catalog,
                             const PlannerOptions& options) {
  if (options.solver != "auto" && options.solver != "exact" && options.solver != "heuristic") {
    return Fail("plan: unknown solver '{}' (auto, exact, heuristic)", options.solver);
  }
  auto predictor = ProfiledPredictor(input, catalog, options.profile_seed);
  if (!predictor) return std::unexpected(predictor.error());
  auto problem = BuildProblem(input, *predictor, catalog, options.plan);
  if (!problem) return std::unexpected(problem.error());
  PlanRun run{std::move(input), std::move(*problem), {}, {}, {}, {}, {}};
  const bool exact = options.solver == "exact" ||
                     (options.solver == "auto" &&
                      static_cast<int>(run.problem.services.size()) <= options.exact_max_services);
  if (exact) {
    auto plan = SolveExact(run.problem);
    if (!plan) return std::unexpected(plan.error());
    run.shared = std::move(*plan);
  } else {
    run.shared = SolveHeuristic(run.problem);
  }
  run.whole_problem = WholeGpusOnly(run.problem);
  const Problem& whole = run.whole_problem;
  for (size_t s = 0; s < whole.services.size(); ++s) {
    if (whole.services[s].options.empty()) {
      return FailAt(run.input.file, run.input.services[s].line,
                    fmt::format("service {}: no whole GPU of the menu holds it, so there is no "
                                "whole-GPU plan to compare with",
                                run.input.services[s].name));
    }
  }
  run.whole = SolveHeuristic(whole);  // one kind per model: each service alone is optimal
  run.whole.solver = "whole-gpus";
  auto shared_twin = RunTwin(run.input, run.problem, run.shared, catalog, options.twin);
  if (!shared_twin) return std::unexpected(shared_twin.error());
  auto whole_twin = RunTwin(run.input, whole, run.whole, catalog, options.twin);
  if (!whole_twin) return std::unexpected(whole_twin.error());
  run.shared_twin = std::move(*shared_twin);
  run.whole_twin = std::move(*whole_twin);
  return run;
}

namespace {

Expected<Example> ThesisExample(bool high, const sim::AppCatalog& base) {
  Example ex{{}, sim::ThesisCatalog(base)};
  const sim::Physics physics(ex.catalog, 1);
  ex.input.file = high ? "thesis-slo1" : "thesis-slo4";
  for (const char* name : {"V100-32GB", "A30-24GB"}) {
    ex.input.gpus.push_back({*model::FindGpuModel(name), 1});
  }
  for (const char* key : {"onnx/resnet50", "onnx/mobilenet", "onnx/ssd-mobilenet", "tf/resnet50",
                          "tf/mobilenet", "tf/ssd-mobilenet"}) {
    const sim::AppSpec* app = ex.catalog.Find(key);
    if (app == nullptr) return Fail("plan: the catalogue has no thesis engine '{}'", key);
    ServiceSpec s;
    s.name = key;
    s.app = key;
    s.slo_qps = sim::ThesisSloBase(*app, high, physics);
    s.memory_mib = (app->footprint_mib + 255) / 256 * 256;  // as the thesis's pods declare
    ex.input.services.push_back(std::move(s));
  }
  return ex;
}

Expected<Example> MigProfilerExample(const sim::AppCatalog& catalog) {
  Example ex{{}, catalog};
  ex.input.file = "migprofiler-50";
  const model::GpuModelId a100 = *model::FindGpuModel("A100-40GB");
  ex.input.gpus = {{a100, 1}, {*model::FindGpuModel("A100-80GB"), 1}};
  std::vector<const sim::AppSpec*> apps;
  for (const sim::AppSpec& a : catalog.apps) {
    if (a.measured.contains("A100-40GB/7g.40gb/100")) apps.push_back(&a);
  }
  if (apps.empty()) return Fail("plan: the catalogue has no MIGProfiler application");
  const sim::Physics physics(catalog, 1);
  Rng rng(1);
  for (int i = 0; i < 50; ++i) {
    const sim::AppSpec& a = *apps[rng.Below(apps.size())];
    ServiceSpec s;
    s.name = fmt::format("svc-{:02}", i);
    s.app = a.key;
    s.slo_qps = rng.Uniform(0.25, 2.0) * physics.IsolatedQps(a, a100, -1, 1000);
    s.load = sim::DailyLoad{.trough_qps = 0.3 * s.slo_qps, .peak_qps = s.slo_qps, .peak_hour = 20};
    ex.input.services.push_back(std::move(s));
  }
  return ex;
}

}  // namespace

std::string ExampleNames() { return "thesis-slo4, thesis-slo1, migprofiler-50"; }

Expected<Example> BuiltInExample(const std::string& name, const sim::AppCatalog& catalog) {
  if (name == "thesis-slo4") return ThesisExample(false, catalog);
  if (name == "thesis-slo1") return ThesisExample(true, catalog);
  if (name == "migprofiler-50") return MigProfilerExample(catalog);
  return Fail("plan: unknown example '{}' ({})", name, ExampleNames());
}

}  // namespace tessera::plan
