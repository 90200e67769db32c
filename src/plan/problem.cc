#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "plan/plan.h"
#include "predict/config_key.h"

namespace tessera::plan {
namespace {

constexpr int kMpsPercents[] = {100, 50, 25};

// The kinds of one menu entry and its maximal MIG layouts as profile counts.
void AddKinds(Problem& p, int gpu) {
  const model::GpuModel& m = model::GetGpuModel(p.gpus[static_cast<size_t>(gpu)].model);
  for (int q : kMpsPercents) {
    p.kinds.push_back({.gpu = gpu,
                       .profile = -1,
                       .mps_percent = q,
                       .config = predict::ConfigKey(m.name, predict::kWholeGpu, q),
                       .memory_mib = m.memory_mib * q / 100,
                       .units = q / 25,
                       .units_per_gpu = 4,
                       .share = q / 100.0});
  }
  std::vector<std::vector<int>> counts;
  std::vector<model::MigLayout> shapes = model::DistinctByProfiles(model::ValidLayouts(m));
  std::vector<bool> used(m.mig_profiles.size(), false);
  for (const model::MigLayout& l : shapes) {
    std::vector<int> c(m.mig_profiles.size(), 0);
    for (const model::MigInstance& i : l.instances) {
      ++c[static_cast<size_t>(i.profile)];
      used[static_cast<size_t>(i.profile)] = true;
    }
    counts.push_back(std::move(c));
  }
  for (size_t prof = 0; prof < m.mig_profiles.size(); ++prof) {
    if (!used[prof]) continue;
    const model::MigProfile& mp = m.mig_profiles[prof];
    p.kinds.push_back(
        {.gpu = gpu,
         .profile = static_cast<int>(prof),
         .mps_percent = 100,
         .config = predict::ConfigKey(m.name, mp.name, 100),
         .memory_mib = mp.memory_mib,
         .units = mp.compute_slices,
         .units_per_gpu = m.mig_compute_slices,
         .share = std::max(static_cast<double>(mp.compute_slices) / m.mig_compute_slices,
                           static_cast<double>(mp.memory_slices) / m.mig_memory_slices)});
  }
  p.layouts.push_back(std::move(counts));
  p.layout_shapes.push_back(std::move(shapes));
}

// The most any service of the input takes from `victim` beside it at 50 % MPS; NaN when the
// predictor knows no MPS interference.
double WorstNeighbour(const predict::Predictor& predictor, predict::AppId victim,
                      const std::vector<predict::AppId>& apps) {
  const std::optional<int> kind = predictor.FindKind("mps");
  if (!kind) return std::numeric_limits<double>::quiet_NaN();
  double worst = 0;
  for (predict::AppId a : apps) {
    double lost = predictor.InterferenceAt(*kind, victim, a);
    if (std::isnan(lost)) lost = predictor.InterferenceMean(*kind);
    worst = std::max(worst, lost);
  }
  return worst;
}

bool HasMeasuredCell(const predict::Predictor& predictor, predict::AppId app) {
  for (int c = 0; c < predictor.num_configs(); ++c) {
    if (predictor.IsObserved(app, c)) return true;
  }
  return false;
}

Expected<ServiceNeed> NeedOf(const Problem& p, const ServiceSpec& s, predict::AppId app,
                             int64_t memory, double worst, const predict::Predictor& predictor) {
  ServiceNeed need{.demand = s.slo_qps, .min_replicas = s.min_replicas, .options = {}};
  const bool measured = HasMeasuredCell(predictor, app);
  const double coverage = 2 * p.options.confidence - 1;
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    const SliceKind& kind = p.kinds[k];
    const std::optional<predict::ConfigId> config = predictor.FindConfig(kind.config);
    if (!config || memory > kind.memory_mib) continue;
    if (measured && !predictor.Supported(app, *config)) continue;
    const double predicted = predictor.IsolatedAt(app, *config);
    if (!(predicted > 0)) continue;
    double lost = 0;
    if (kind.mps_percent == 50) lost = worst;
    if (kind.mps_percent == 25) lost = std::min(1.0, 3 * worst);
    if (std::isnan(lost) || lost >= 1) continue;
    const double low = predictor.IntervalAt(app, *config, coverage).low;
    const double rate = low * (1 - lost);
    if (!(rate > 0)) continue;
    need.options.push_back({.kind = static_cast<int>(k),
                            .rate = rate,
                            .predicted = predicted,
                            .sigma = predictor.SigmaAt(app, *config),
                            .interference = lost});
  }
  if (need.options.empty()) {
    return Fail("service {}: no slice of the menu holds it ({} MiB) with a prediction for '{}'",
                s.name, memory, s.AppKey());
  }
  const auto best = std::max_element(
      need.options.begin(), need.options.end(),
      [](const ServiceOption& a, const ServiceOption& b) { return a.rate < b.rate; });
  if (s.slo_qps / best->rate > p.options.max_replicas) {
    return Fail(
        "service {}: no GPU model on the menu can serve {:.4g} QPS: the best replica "
        "({}) is counted on {:.4g} QPS, more than {} replicas",
        s.name, s.slo_qps, p.kinds[static_cast<size_t>(best->kind)].Label(), best->rate,
        p.options.max_replicas);
  }
  return need;
}

}  // namespace

std::string SliceKind::Label() const {
  const size_t a = config.find('/');
  const size_t b = config.rfind('/');
  const std::string gpu_name = config.substr(0, a);
  if (profile >= 0) return gpu_name + " " + config.substr(a + 1, b - a - 1);
  return mps_percent == 100 ? gpu_name + " whole"
                            : fmt::format("{} {} % MPS", gpu_name, mps_percent);
}

Expected<Problem> BuildProblem(const PlanInput& input, const predict::Predictor& predictor,
                               const sim::AppCatalog& catalog, const PlanOptions& options) {
  if (!(options.confidence >= 0.5 && options.confidence <= 0.999)) {
    return Fail("plan: confidence {} is outside [0.5, 0.999]", options.confidence);
  }
  Problem p = MenuProblem(input.gpus, options);
  std::vector<predict::AppId> apps;
  for (const ServiceSpec& s : input.services) {
    const std::optional<predict::AppId> app = predictor.FindApp(s.AppKey());
    if (!app) {
      return FailAt(input.file, s.line,
                    fmt::format("service {}: application '{}' is unknown and the service "
                                "declares no features",
                                s.name, s.AppKey()));
    }
    apps.push_back(*app);
  }
  for (size_t i = 0; i < input.services.size(); ++i) {
    const ServiceSpec& s = input.services[i];
    int64_t memory = s.memory_mib;
    if (memory == 0) {
      if (const sim::AppSpec* spec = catalog.Find(s.app)) memory = spec->footprint_mib;
    }
    auto need = NeedOf(p, s, apps[i], memory, WorstNeighbour(predictor, apps[i], apps), predictor);
    if (!need) return FailAt(input.file, s.line, need.error().message);
    p.services.push_back(std::move(*need));
  }
  return p;
}

Problem MenuProblem(const std::vector<GpuOffer>& gpus, const PlanOptions& options) {
  Problem p;
  p.options = options;
  p.gpus = gpus;
  for (size_t g = 0; g < p.gpus.size(); ++g) AddKinds(p, static_cast<int>(g));
  return p;
}

Problem WholeGpusOnly(const Problem& problem) {
  Problem p = problem;
  p.kinds.clear();
  std::vector<int> remap(problem.kinds.size(), -1);
  for (size_t k = 0; k < problem.kinds.size(); ++k) {
    const SliceKind& kind = problem.kinds[k];
    if (kind.profile >= 0 || kind.mps_percent != 100) continue;
    remap[k] = static_cast<int>(p.kinds.size());
    p.kinds.push_back(kind);
  }
  for (ServiceNeed& need : p.services) {
    std::erase_if(need.options, [&](const ServiceOption& o) { return remap[o.kind] < 0; });
    for (ServiceOption& o : need.options) o.kind = remap[static_cast<size_t>(o.kind)];
  }
  for (auto& l : p.layouts) l.clear();
  for (auto& l : p.layout_shapes) l.clear();
  return p;
}

}  // namespace tessera::plan
