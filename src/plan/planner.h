#pragma once
// `tessera plan` end to end (docs/planning.md): the predictor a plan reads, the shared plan and
// the whole-GPU baseline on the same menu and cost basis, both checked on the digital twin, and
// what a reader is shown (table, JSON, HTML page, --explain).

#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "plan/solve.h"
#include "plan/twin.h"
#include "predict/predictor.h"
#include "sim/apps.h"

namespace tessera::plan {

struct PlannerOptions {
  PlanOptions plan;
  TwinOptions twin;
  std::string solver = "auto";   // auto (exact up to exact_max_services), exact, heuristic
  int exact_max_services = 200;  // CBC proves 200 services × 8 models in ~2 s (docs/planning.md)
  uint64_t profile_seed = 1;     // the characterisation campaign's noise
};

// The predictor a plan reads: the simulator's characterisation campaign (sim::Profiler) on the
// menu's GPU models — the services' applications on every configuration, ten runs each, as the
// thesis characterised its engines (Ch. 6.1) and as a load-testing tool would; every other
// catalogue application on 40 % of them; interference of 30 % of pairs at 50 % MPS on a
// V100 — then completed. A service known by its features only is declared and predicted
// from them.
[[nodiscard]] Expected<predict::Predictor> ProfiledPredictor(const PlanInput& input,
                                                             const sim::AppCatalog& catalog,
                                                             uint64_t seed);

struct PlanRun {
  PlanInput input;
  Problem problem;
  Problem whole_problem;  // WholeGpusOnly(problem): what `whole`'s kinds index
  Plan shared, whole;
  TwinResult shared_twin, whole_twin;
};

[[nodiscard]] Expected<PlanRun> RunPlanner(PlanInput input, const sim::AppCatalog& catalog,
                                           const PlannerOptions& options = {});

// Built-in inputs for the docs and the tests: the thesis's six engines at SLO_4
// ("thesis-slo4") or SLO_1 ("thesis-slo1") on its menu (V100-32GB, A30-24GB), SLOs as the
// thesis experiment defines them (sim::ThesisSloBase); "migprofiler-50": 50 services drawn
// (seed 1) from the MIGProfiler applications, each an SLO uniform in [0.25, 2] × its rate on a
// whole A100-40GB, on their menu (A100-40GB, A100-80GB). The catalogue the twin must run is
// the one returned with it.
struct Example {
  PlanInput input;
  sim::AppCatalog catalog;
};
[[nodiscard]] Expected<Example> BuiltInExample(const std::string& name,
                                               const sim::AppCatalog& catalog);
std::string ExampleNames();  // "thesis-slo4, thesis-slo1, migprofiler-50"

std::string PlanTable(const PlanRun& run);
nlohmann::json PlanJson(const PlanRun& run);
std::string PlanHtml(const PlanRun& run);
// Why `service` got its slices, and for each cheaper choice (a kind and replica count that
// would cost less than what it got) the chance it would miss its SLO at peak, from the
// predictor's σ. An Error for an unknown service.
[[nodiscard]] Expected<std::string> ExplainService(const PlanRun& run, const std::string& service);

}  // namespace tessera::plan
