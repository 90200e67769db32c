// `tessera predict interference`: how well a completion method fills an interference matrix
// (seed 000 Ch. 6.4 / 7; docs/prediction.md). For each seed s the simulator's
// Profiler characterises the thesis scenario as `tessera explain` does (Physics and profiling
// seeded with s, the V100-32GB and A30-24GB models; pairs at 50 % MPS on a V100-32GB), then
// predict/interference_eval.h hides a share of the observed (victim, aggressor) cells of one
// kind's matrix and scores the method against the mean of the kept cells. Errors are absolute,
// in percentage points of the victim's lost QPS. With --data, the matrix is a measured one
// instead (an interference CSV, e.g. tools/characterise's), the same for every seed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "predict/interference_eval.h"
#include "predict/registry.h"
#include "sim/embedded_apps.h"
#include "sim/physics.h"
#include "sim/profiler.h"
#include "sim/thesis.h"

namespace tessera::cli {
namespace {

struct InterferenceFlags {
  std::string kind = "mps";
  std::string method = "svd";
  double missing = 0.5;
  std::string seeds = "1";  // "N" (1..N) or "A-B"
  std::string data;         // an interference CSV; empty: the simulator's profiling
  bool json = false;
};

// One seed's evaluation and the shape of the matrix it ran on.
struct SeedRun {
  predict::InterferenceEvalResult result;
  int victims = 0, aggressors = 0;
};

nlohmann::json Metrics(const predict::AbsErrorSummary& e) {
  return {{"n", e.n},
          {"mae_pp", e.mae},
          {"median_ae_pp", e.median_ae},
          {"p90_ae_pp", e.p90_ae},
          {"rmse_pp", e.rmse}};
}

void PrintRow(const std::string& label, const predict::InterferenceEvalResult& r) {
  std::printf("%-8s %8d %7d | %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %7.2f\n", label.c_str(),
              r.observed, r.errors.n, r.errors.mae, r.errors.median_ae, r.errors.p90_ae,
              r.errors.rmse, r.mean_errors.mae, r.mean_errors.median_ae, r.mean_errors.p90_ae,
              r.mean_errors.rmse);
}

Status RunInterference(const InterferenceFlags& f) {
  if (!(f.missing > 0 && f.missing < 1)) {
    return Usage("--missing must lie strictly between 0 and 1, got {}", f.missing);
  }
  Expected<std::vector<uint64_t>> seeds = ParseSeedRange(f.seeds);
  if (!seeds) return Usage(seeds.error());
  Expected<sim::AppCatalog> catalog =
      sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  if (!catalog) return Failed(catalog.error());

  std::optional<predict::InterferenceMatrices> measured;
  if (!f.data.empty()) {
    auto loaded = predict::InterferenceMatrices::LoadCsv(f.data);
    if (!loaded) return Failed(loaded.error());
    measured = std::move(*loaded);
  }
  std::vector<SeedRun> runs;
  for (const uint64_t seed : *seeds) {
    std::optional<sim::ProfileSamples> samples;
    if (!measured) {
      sim::Physics physics(*catalog, seed);
      auto sampled = sim::Profiler(physics, sim::ThesisProfiling({}, seed))
                         .Sample({"V100-32GB", "A30-24GB"}, seed);
      if (!sampled) return Failed(sampled.error());
      samples = std::move(*sampled);
    }
    const predict::InterferenceMatrices& matrices = measured ? *measured : samples->interference();
    const predict::SparseMatrix* m = matrices.Find(f.kind);
    if (!m) {
      std::vector<std::string> kinds;
      for (const auto& [kind, matrix] : matrices.by_kind()) kinds.push_back(kind);
      return Usage("--kind '{}': {} has no such interference (it has: {})", f.kind,
                   measured ? f.data : std::string("the profiling"), fmt::join(kinds, ", "));
    }
    Expected<predict::InterferenceEvalResult> r =
        predict::EvaluateInterference(*m, {f.method, f.missing, seed});
    if (!r) return Failed(r.error());
    runs.push_back({std::move(*r), m->rows(), m->cols()});
  }
  std::vector<predict::InterferenceEvalResult> results;
  for (const SeedRun& run : runs) results.push_back(run.result);
  const predict::InterferenceEvalResult median = predict::MedianOverSeeds(results);

  if (f.json) {
    nlohmann::json j = {{"kind", f.kind},
                        {"method", f.method},
                        {"missing", f.missing},
                        {"seeds", nlohmann::json::array()},
                        {"median_over_seeds",
                         {{"observed", median.observed},
                          {"errors", Metrics(median.errors)},
                          {"mean_errors", Metrics(median.mean_errors)}}}};
    for (const SeedRun& run : runs) {
      const predict::InterferenceEvalResult& r = run.result;
      j["seeds"].push_back({{"seed", r.seed},
                            {"victims", run.victims},
                            {"aggressors", run.aggressors},
                            {"observed", r.observed},
                            {"kept_mean", r.kept_mean},
                            {"errors", Metrics(r.errors)},
                            {"mean_errors", Metrics(r.mean_errors)}});
    }
    std::printf("%s\n", j.dump().c_str());
    return {};
  }
  std::printf(
      "interference kind %s, method %s vs the mean of the kept cells, missing %.2f: absolute "
      "error on the hidden cells, percentage points of the victim's QPS\n",
      f.kind.c_str(), f.method.c_str(), f.missing);
  std::printf("%-8s %8s %7s | %-31s | %s\n", "", "", "", f.method.c_str(),
              "mean of the kept cells");
  std::printf("%-8s %8s %7s | %7s %7s %7s %7s | %7s %7s %7s %7s\n", "seed", "observed", "hidden",
              "MAE", "median", "p90", "RMSE", "MAE", "median", "p90", "RMSE");
  for (const SeedRun& run : runs) PrintRow(std::to_string(run.result.seed), run.result);
  PrintRow("median", median);
  return {};
}

}  // namespace

void AddPredictInterference(CLI::App* predict, Status* status) {
  auto flags = std::make_shared<InterferenceFlags>();
  CLI::App* sub = predict->add_subcommand(
      "interference",
      "Hide cells of an interference matrix (the simulator's, or --data), complete them, report "
      "the error");
  sub->add_option("--data", flags->data,
                  "Interference CSV (kind,victim,aggressor,value,count,variance) to evaluate, "
                  "e.g. a measured one (tools/characterise); default: the simulator's profiling")
      ->check(CLI::ExistingFile);
  sub->add_option("--kind", flags->kind, "Partition kind of the matrix (mps, mig, timeslice)")
      ->capture_default_str();
  sub->add_option("--method", flags->method,
                  fmt::format("Completion method: {}", fmt::join(predict::CompleterNames(), ", ")))
      ->check(CLI::IsMember(predict::CompleterNames()))
      ->capture_default_str();
  sub->add_option("--missing", flags->missing, "Fraction of the observed cells to hide, in (0, 1)")
      ->check(FiniteRange(0.0, 1.0))
      ->capture_default_str();
  sub->add_option("--seeds", flags->seeds,
                  "Seeds of the profiling and the hiding, N (1..N) or A-B, at most 10,000: one "
                  "row each and their median")
      ->check(SeedsCheck())
      ->capture_default_str();
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->callback([flags, status] { *status = RunInterference(*flags); });
}

}  // namespace tessera::cli
