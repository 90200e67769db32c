#include "sim/calibrate.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>

#include "predict/migprofiler.h"

namespace tessera::sim {
namespace {

// The roofline's regressors for one measurement: t = a·x1 + b·x2 + c.
Eigen::Vector3d Regressors(const Measurement& m, model::GpuModelId reference) {
  const model::GpuModel& g = model::GetGpuModel(m.gpu);
  const model::GpuModel& ref = model::GetGpuModel(reference);
  double compute = m.milli / 1000.0, bandwidth = 1;
  if (m.profile >= 0) {
    const model::MigProfile& p = g.mig_profiles[m.profile];
    compute *= static_cast<double>(p.compute_slices) / g.mig_compute_slices;
    bandwidth = static_cast<double>(p.memory_slices) / g.mig_memory_slices;
  }
  const double rc = g.opaque ? 1 : g.fp16_tflops / ref.fp16_tflops;
  const double rb = g.opaque ? 1 : g.bandwidth_gbs / ref.bandwidth_gbs;
  return {1 / (compute * rc), 1 / (bandwidth * rb), 1};
}

}  // namespace

Expected<Measurement> ParseConfigKey(const std::string& key) {
  const size_t a = key.find('/'), b = key.rfind('/');
  if (a == std::string::npos || a == b)
    return Fail("config '{}': expected GPU/profile/percent", key);
  const std::optional<model::GpuModelId> gpu = model::FindGpuModel(key.substr(0, a));
  if (!gpu) return Fail("config '{}': unknown GPU model", key);
  Measurement m;
  m.gpu = *gpu;
  const std::string profile = key.substr(a + 1, b - a - 1);
  if (profile != "whole") {
    const std::optional<int> p = model::GetGpuModel(*gpu).FindProfile(profile);
    if (!p) return Fail("config '{}': no MIG profile {}", key, profile);
    m.profile = *p;
  }
  try {
    const int pct = std::stoi(key.substr(b + 1));
    if (pct < 1 || pct > 100) return Fail("config '{}': MPS percent outside 1..100", key);
    m.milli = pct * 10;
  } catch (const std::exception&) {
    return Fail("config '{}': bad MPS percent", key);
  }
  return m;
}

Expected<RooflineFit> FitRoofline(const std::vector<Measurement>& points,
                                  model::GpuModelId reference) {
  if (points.empty()) return Fail("no measurements to fit");
  const int n = static_cast<int>(points.size());
  Eigen::MatrixXd x(n, 3);
  for (int i = 0; i < n; ++i) {
    if (!(points[i].qps > 0)) return Fail("measurement {} is not a positive throughput", i);
    // Relative error: divide each row by the measured time, target 1.
    x.row(i) = Regressors(points[i], reference).transpose() * points[i].qps;
  }
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
  RooflineFit best;
  double best_sse = INFINITY;
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<int> cols;
    for (int j = 0; j < 3; ++j) {
      if (mask & (1 << j)) cols.push_back(j);
    }
    Eigen::MatrixXd sub(n, cols.size());
    for (size_t k = 0; k < cols.size(); ++k) sub.col(k) = x.col(cols[k]);
    const Eigen::VectorXd coef = sub.colPivHouseholderQr().solve(ones);
    if ((coef.array() < 0).any() || !coef.allFinite()) continue;
    const double sse = (sub * coef - ones).squaredNorm();
    if (sse >= best_sse) continue;
    best_sse = sse;
    double c[3] = {0, 0, 0};
    for (size_t k = 0; k < cols.size(); ++k) c[cols[k]] = coef[k];
    best = {c[0], c[1], c[2], (sub * coef - ones).cwiseAbs().maxCoeff()};
  }
  if (!std::isfinite(best_sse)) return Fail("no non-negative roofline fits the measurements");
  return best;
}

Expected<CalibrationReport> CalibrateMigProfiler(const std::string& dir,
                                                 const std::string& reference_gpu) {
  const std::optional<model::GpuModelId> reference = model::FindGpuModel(reference_gpu);
  if (!reference) return Fail("unknown reference GPU {}", reference_gpu);
  predict::MigProfilerExtras extras;
  auto matrix = predict::LoadMigProfiler(dir, &extras);
  if (!matrix) return std::unexpected(matrix.error());
  std::map<std::string, double>& least_memory = extras.min_memory_mib;
  CalibrationReport report;
  report.catalog.reference_gpu = reference_gpu;
  for (int r = 0; r < matrix->rows(); ++r) {
    AppSpec app;
    app.key = matrix->row_keys()[r];
    app.description = "MIGProfiler measurement (A100), fitted roofline";
    if (const predict::AppFeatures* f = extras.features.Find(app.key)) app.features = *f;
    std::vector<Measurement> points;
    for (int c = 0; c < matrix->cols(); ++c) {
      if (!matrix->Has(r, c)) continue;
      auto m = ParseConfigKey(matrix->col_keys()[c]);
      if (!m) return std::unexpected(m.error());
      m->qps = matrix->Mean(r, c);
      points.push_back(*m);
      app.measured[matrix->col_keys()[c]] = m->qps;
    }
    auto fit = FitRoofline(points, *reference);
    if (!fit) return Fail("app {}: {}", app.key, fit.error().message);
    app.compute_s = fit->compute_s;
    app.memory_s = fit->memory_s;
    app.fixed_s = fit->fixed_s;
    // The least framebuffer it ran in (CUDA context included), in whole MiB.
    app.footprint_mib = static_cast<int64_t>(std::ceil(least_memory[app.key]));
    app.sensitivity = 1;
    app.queries_min = 1000;
    app.queries_max = 20000;
    report.measurements += static_cast<int>(points.size());
    report.roofline_error.emplace_back(app.key, fit->max_relative_error);
    report.catalog.apps.push_back(std::move(app));
  }
  return report;
}

Expected<void> CheckCalibrateArgs(const ExperimentArgs& args) {
  if (args.data.empty()) return Fail("--experiment calibrate needs --data DIR");
  return {};
}

Expected<ExperimentOutput> RunCalibrateExperiment(const ExperimentArgs& args, const Experiment&) {
  Expected<AppCatalog> catalog = CatalogOf(args);
  if (!catalog) return std::unexpected(catalog.error());
  auto report = CalibrateMigProfiler(args.data, catalog->reference_gpu);
  if (!report) return std::unexpected(report.error());
  std::vector<double> errors;
  for (const auto& [app, e] : report->roofline_error) errors.push_back(e);
  if (errors.empty()) return Fail("{}: no MIGProfiler application to calibrate", args.data);
  std::sort(errors.begin(), errors.end());
  const auto over = std::count_if(errors.begin(), errors.end(), [](double e) { return e > 0.05; });
  ExperimentOutput out;
  out.table = fmt::format("calibrated {} applications from {} measurements ({})\n", errors.size(),
                          report->measurements, args.data);
  out.table += fmt::format(
      "roofline alone, max relative error per application: median {:.1f}%, worst {:.1f}%, "
      "{} of {} above 5% (the measured points themselves override it)\n",
      100 * errors[errors.size() / 2], 100 * errors.back(), over, errors.size());
  for (AppSpec& app : report->catalog.apps) {
    auto it = std::find_if(catalog->apps.begin(), catalog->apps.end(),
                           [&](const AppSpec& a) { return a.key == app.key; });
    if (it != catalog->apps.end()) {
      *it = std::move(app);
    } else {
      catalog->apps.push_back(std::move(app));
    }
  }
  if (!args.out.empty()) {
    if (auto ok = SaveAppCatalog(*catalog, args.out); !ok) return std::unexpected(ok.error());
    out.table += fmt::format("wrote {} applications to {}\n", catalog->apps.size(), args.out);
  }
  return out;
}

}  // namespace tessera::sim
