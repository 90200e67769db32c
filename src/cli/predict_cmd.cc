// `tessera predict`: evaluate the completion methods on real measurements, or write a completed
// profile matrix (docs/prediction.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/stats.h"
#include "cli/commands.h"
#include "cli/number_flags.h"
#include "predict/evaluate.h"
#include "predict/matrix.h"
#include "predict/migprofiler.h"
#include "predict/registry.h"
#include "report/html.h"
#include "report/sparsity_report.h"

namespace tessera::cli {
namespace {

struct PredictArgs {
  // The shared MIGProfiler data beside a checkout, so that `tessera predict sweep` runs as the
  // README writes it from the repository's root.
  std::string data = "../shared/data/migprofiler";
  std::string features;  // app,feature,value CSV; adds to (replaces) what --data declares
  std::string method = "features";
  std::string protocol = "random";
  double missing = 0.5;
  int keep = 2;
  uint64_t seed = 1;
  std::string seeds;  // "N" or "A-B"; overrides --seed
  std::string rows;
  bool json = false;
  std::string out;
  // sweep
  std::vector<std::string> methods = {"baseline", "svd", "imputer", "hybrid", "features"};
  std::vector<double> missings = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  std::string out_dir;
};

// --data is either a MIGProfiler directory (which declares features) or a profile-matrix CSV;
// --features adds a feature CSV on top.
struct Data {
  predict::ProfileMatrix matrix;
  predict::FeatureTable features;
};
Expected<Data> LoadData(const PredictArgs& args) {
  Data d;
  if (args.data.ends_with(".csv")) {
    Expected<predict::ProfileMatrix> m = predict::ProfileMatrix::LoadCsv(args.data);
    if (!m) return std::unexpected(m.error());
    d.matrix = std::move(*m);
  } else {
    predict::MigProfilerExtras extras;
    Expected<predict::ProfileMatrix> m = predict::LoadMigProfiler(args.data, &extras);
    if (!m) return std::unexpected(m.error());
    d.matrix = std::move(*m);
    d.features = std::move(extras.features);
  }
  if (!args.features.empty()) {
    Expected<predict::FeatureTable> extra = predict::FeatureTable::LoadCsv(args.features);
    if (!extra) return std::unexpected(extra.error());
    for (const auto& [app, f] : extra->apps()) {
      if (Expected<void> ok = d.features.Set(app, f); !ok) {
        return Fail("{}: {}", args.features, ok.error().message);
      }
    }
  }
  return d;
}

nlohmann::json Metrics(const predict::ErrorSummary& e) {
  return {{"n", e.n},
          {"mape", e.mape},
          {"median_ape", e.median_ape},
          {"p90_ape", e.p90_ape},
          {"rmse_log", e.rmse_log}};
}

nlohmann::json ResultJson(const predict::EvalResult& r, const PredictArgs& args) {
  nlohmann::json j = Metrics(r.errors);
  j["method"] = r.method;
  j["protocol"] = r.protocol;
  j["seed"] = r.seed;
  if (r.protocol == "random")
    j["missing"] = r.missing;
  else
    j["keep"] = args.keep;
  if (!std::isnan(r.coverage90)) j["coverage90"] = r.coverage90;
  j["by_known"] = nlohmann::json::array();
  for (const predict::SparsityBucket& b : r.by_known) {
    nlohmann::json bucket = Metrics(b.errors);
    bucket["known"] = b.known;
    j["by_known"].push_back(std::move(bucket));
  }
  return j;
}

Expected<std::vector<uint64_t>> Seeds(const PredictArgs& args) {
  if (args.seeds.empty()) return std::vector<uint64_t>{args.seed};
  return ParseSeedRange(args.seeds);
}

Status WriteCells(const std::string& path, const std::vector<predict::EvalResult>& results) {
  std::ofstream out(path);
  if (!out) return Failed("{}: cannot write", path);
  out << "seed,app,config,known,truth,predicted,low90,high90\n";
  for (const predict::EvalResult& r : results) {
    for (const predict::HiddenCell& c : r.cells) {
      out << fmt::format("{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g}\n", r.seed,
                         report::CsvField(c.app), report::CsvField(c.config), c.known, c.truth,
                         c.predicted, c.low, c.high);
    }
  }
  if (!out) return Failed("{}: write failed", path);
  return {};
}

Status RunEvaluate(const PredictArgs& args, bool missing_given, bool keep_given) {
  if (args.protocol == "leave-one-row-out" && missing_given) {
    return Usage(
        "--missing applies to --protocol random only (leave-one-row-out hides all "
        "but --keep cells of each row)");
  }
  if (args.protocol == "random" && keep_given) {
    return Usage("--keep applies to --protocol leave-one-row-out only");
  }
  Expected<std::vector<uint64_t>> seeds = Seeds(args);
  if (!seeds) return Usage(seeds.error());
  Expected<Data> data = LoadData(args);
  if (!data) return Failed(data.error());
  std::vector<predict::EvalResult> results;
  for (const uint64_t seed : *seeds) {
    predict::EvalOptions options{args.method, args.protocol, args.missing,
                                 args.keep,   seed,          args.rows};
    Expected<predict::EvalResult> r = predict::Evaluate(data->matrix, options, &data->features);
    if (!r) return Failed(r.error());
    results.push_back(std::move(*r));
  }
  if (!args.out.empty()) {
    if (Status ok = WriteCells(args.out, results); !ok) return ok;
  }
  std::vector<double> mape, median, p90, coverage;
  for (const predict::EvalResult& r : results) {
    mape.push_back(r.errors.mape);
    median.push_back(r.errors.median_ape);
    p90.push_back(r.errors.p90_ape);
    coverage.push_back(r.coverage90);
  }
  if (args.json) {
    if (results.size() == 1) {
      std::printf("%s\n", ResultJson(results.front(), args).dump().c_str());
      return {};
    }
    nlohmann::json j = {{"method", args.method},
                        {"protocol", args.protocol},
                        {"seeds", nlohmann::json::array()},
                        {"median_over_seeds",
                         {{"mape", Median(mape)},
                          {"median_ape", Median(median)},
                          {"p90_ape", Median(p90)},
                          {"coverage90", Median(coverage)}}}};
    for (const predict::EvalResult& r : results) j["seeds"].push_back(ResultJson(r, args));
    std::printf("%s\n", j.dump().c_str());
    return {};
  }
  for (const predict::EvalResult& r : results) {
    std::printf("method %s, protocol %s", r.method.c_str(), r.protocol.c_str());
    if (r.protocol == "random")
      std::printf(", missing %.2f", r.missing);
    else
      std::printf(", keep %d", args.keep);
    std::printf(
        ", seed %llu\n  n %d  MAPE %.2f%%  median APE %.2f%%  p90 APE %.2f%%  RMSE(log) %.4f  "
        "90%% interval coverage %.1f%%\n",
        static_cast<unsigned long long>(r.seed), r.errors.n, r.errors.mape, r.errors.median_ape,
        r.errors.p90_ape, r.errors.rmse_log, 100 * r.coverage90);
    for (const predict::SparsityBucket& b : r.by_known) {
      std::printf("    row kept %d: n %d  MAPE %.2f%%  median APE %.2f%%  p90 APE %.2f%%\n",
                  b.known, b.errors.n, b.errors.mape, b.errors.median_ape, b.errors.p90_ape);
    }
  }
  if (results.size() > 1) {
    std::printf(
        "median over %zu seeds: MAPE %.2f%%  median APE %.2f%%  p90 APE %.2f%%  coverage %.1f%%\n",
        results.size(), Median(mape), Median(median), Median(p90), 100 * Median(coverage));
  }
  return {};
}

Status RunComplete(const PredictArgs& args) {
  Expected<Data> data = LoadData(args);
  if (!data) return Failed(data.error());
  const predict::ProfileMatrix* matrix = &data->matrix;
  Expected<std::unique_ptr<predict::Completer>> method = predict::MakeCompleter(args.method);
  if (!method) return Usage(method.error());
  Eigen::MatrixXd values = matrix->ToDense();
  for (Eigen::Index c = 0; c < values.cols(); ++c) {
    for (Eigen::Index r = 0; r < values.rows(); ++r) {
      const double v = values(r, c);
      if (std::isnan(v)) continue;
      if (!(v > 0)) {
        return Failed("cell ({}, {}) = {} is not positive", matrix->row_keys()[r],
                      matrix->col_keys()[c], v);
      }
      values(r, c) = std::log(v);
    }
  }
  Expected<Eigen::MatrixXd> completed = (*method)->CompleteWith(
      values, predict::Encode(data->features, matrix->row_keys(), matrix->col_keys()));
  if (!completed) return Failed(completed.error());
  const Eigen::MatrixXd qps = completed->array().exp();
  if (Expected<void> ok =
          predict::SaveDenseCsv(args.out, matrix->row_keys(), matrix->col_keys(), qps);
      !ok) {
    return Failed(ok.error());
  }
  std::printf("wrote %s: %d applications x %d configurations (%d observed, %s)\n", args.out.c_str(),
              matrix->rows(), matrix->cols(), matrix->ObservedCount(), args.method.c_str());
  return {};
}

Status RunSweep(const PredictArgs& args) {
  Expected<std::vector<uint64_t>> seeds = ParseSeedRange(args.seeds.empty() ? "10" : args.seeds);
  if (!seeds) return Usage(seeds.error());
  for (const std::string& m : args.methods) {
    if (Expected<std::unique_ptr<predict::Completer>> ok = predict::MakeCompleter(m); !ok) {
      return Usage("--methods: {}", ok.error().message);
    }
  }
  for (const double missing : args.missings) {
    if (!(missing > 0 && missing < 1)) return Usage("--missing {} is not in (0, 1)", missing);
  }
  Expected<Data> data = LoadData(args);
  if (!data) return Failed(data.error());
  std::vector<report::SparsityPoint> points;
  for (const std::string& method : args.methods) {
    for (const double missing : args.missings) {
      report::SparsityPoint p{method, missing, {}, {}, {}};
      for (const uint64_t seed : *seeds) {
        predict::EvalOptions options{method, "random", missing, 1, seed, args.rows, false};
        Expected<predict::EvalResult> r = predict::Evaluate(data->matrix, options, &data->features);
        if (!r) return Failed(r.error());
        p.median_ape.push_back(r->errors.median_ape);
        p.mape.push_back(r->errors.mape);
        p.p90_ape.push_back(r->errors.p90_ape);
      }
      points.push_back(std::move(p));
    }
  }
  const nlohmann::json j = report::SparsityJson(*seeds, points);
  if (!args.out_dir.empty()) {
    Expected<std::vector<std::string>> written = report::WriteSparsityReport(
        args.out_dir, fmt::format("Prediction error against sparsity ({} seeds)", seeds->size()),
        *seeds, points);
    if (!written) return Failed(written.error());
    for (const std::string& path : *written) std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  if (args.json) {
    std::printf("%s\n", j.dump().c_str());
    return {};
  }
  std::printf("median APE %% (median over %zu seeds)\n%-10s", seeds->size(), "missing");
  for (const double missing : args.missings) std::printf("%7.0f%%", 100 * missing);
  std::printf("\n");
  for (size_t m = 0; m < args.methods.size(); ++m) {
    std::printf("%-10s", args.methods[m].c_str());
    for (size_t i = 0; i < args.missings.size(); ++i) {
      std::printf("%8.1f", j["points"][m * args.missings.size() + i]["median_ape"].get<double>());
    }
    std::printf("\n");
  }
  return {};
}

std::string MethodsHelp() {
  return fmt::format(
      "Completion method: {} (tessera predict methods; features falls back to hybrid for "
      "applications that declare nothing)",
      fmt::join(predict::CompleterNames(), ", "));
}

// `tessera predict methods`.
void AddMethods(CLI::App* predict, Status* status) {
  CLI::App* methods = predict->add_subcommand("methods", "List the completion methods, one a line");
  methods->callback([status] {
    for (const std::string& name : predict::CompleterNames()) std::printf("%s\n", name.c_str());
    *status = {};
  });
}

// `tessera predict evaluate` and its flags.
void AddEvaluate(CLI::App* predict, const std::shared_ptr<PredictArgs>& args, Status* status) {
  CLI::App* evaluate = predict->add_subcommand(
      "evaluate", "Hide known cells of a profile matrix, predict them, report the error");
  evaluate->add_option("--data", args->data, "MIGProfiler directory or profile-matrix CSV")
      ->capture_default_str();
  evaluate->add_option("--features", args->features,
                       "Feature CSV (app,feature,value) added to what --data declares");
  evaluate->add_option("--method", args->method, MethodsHelp())
      ->check(CLI::IsMember(predict::CompleterNames()))
      ->capture_default_str();
  evaluate->add_option("--protocol", args->protocol, "random | leave-one-row-out")
      ->check(CLI::IsMember({"random", "leave-one-row-out"}))
      ->capture_default_str();
  CLI::Option* missing =
      evaluate->add_option("--missing", args->missing, "Fraction of known cells to hide (random)")
          ->check(FiniteRange(0.0, 1.0))
          ->capture_default_str();
  CLI::Option* keep =
      evaluate->add_option("--keep", args->keep, "Known cells kept per row (leave-one-row-out)")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
  CLI::Option* seed =
      evaluate->add_option("--seed", args->seed, "Seed of the random hiding, 0..2^64-1")
          ->check(SeedCheck())
          ->capture_default_str();
  evaluate
      ->add_option("--seeds", args->seeds,
                   "Several seeds, N (1..N) or A-B, at most 10,000: per-seed results and their "
                   "median")
      ->check(SeedsCheck())
      ->excludes(seed);
  evaluate
      ->add_option("--rows", args->rows,
                   "Hide and score only applications whose key matches this regex (at most "
                   "1,000 bytes)")
      ->check(AtMost(1000));
  evaluate->add_option(
      "--out", args->out,
      "CSV of every hidden cell: seed,app,config,known,truth,predicted,low90,high90");
  evaluate->add_flag("--json", args->json, "Print one JSON object");
  evaluate->callback([args, status, missing, keep] {
    *status = RunEvaluate(*args, missing->count() > 0, keep->count() > 0);
  });
}

// `tessera predict sweep` and its flags.
void AddSweep(CLI::App* predict, const std::shared_ptr<PredictArgs>& args, Status* status) {
  CLI::App* sweep = predict->add_subcommand(
      "sweep", "Error against sparsity for several methods (the thesis's Fig. 7.1)");
  sweep->add_option("--data", args->data, "MIGProfiler directory or profile-matrix CSV")
      ->capture_default_str();
  sweep->add_option("--features", args->features, "Feature CSV (app,feature,value)");
  sweep->add_option("--methods", args->methods, "Methods to compare")->capture_default_str();
  sweep->add_option("--missing", args->missings, "Fractions of known cells to hide")
      ->capture_default_str();
  sweep->add_option("--seeds", args->seeds, "Seeds, N (1..N) or A-B, at most 10,000 [10]")
      ->check(SeedsCheck());
  sweep->add_option("--rows", args->rows, "Hide and score only rows matching this regex")
      ->check(AtMost(1000));
  sweep->add_option("--out", args->out_dir, "Directory for fig7_1.svg and fig7_1.json");
  sweep->add_flag("--json", args->json, "Print one JSON object");
  sweep->callback([args, status] { *status = RunSweep(*args); });
}

// `tessera predict complete` and its flags.
void AddComplete(CLI::App* predict, const std::shared_ptr<PredictArgs>& args, Status* status) {
  CLI::App* complete =
      predict->add_subcommand("complete", "Write the completed profile matrix as a wide CSV");
  complete->add_option("--data", args->data, "MIGProfiler directory or profile-matrix CSV")
      ->capture_default_str();
  complete->add_option("--features", args->features, "Feature CSV (app,feature,value)");
  complete->add_option("--method", args->method, MethodsHelp())
      ->check(CLI::IsMember(predict::CompleterNames()))
      ->capture_default_str();
  complete->add_option("--out", args->out, "Output CSV (app, one column per configuration)")
      ->required();
  complete->callback([args, status] { *status = RunComplete(*args); });
}

}  // namespace

void AddPredict(CLI::App& app, Status* status) {
  // One set of arguments: the subcommands share the flags they have in common.
  auto args = std::make_shared<PredictArgs>();
  CLI::App* predict =
      app.add_subcommand("predict", "Evaluate and run the throughput/interference predictor");
  predict->require_subcommand(1);
  AddMethods(predict, status);
  AddEvaluate(predict, args, status);
  AddSweep(predict, args, status);
  AddComplete(predict, args, status);
  AddPredictInterference(predict, status);
  AddPredictContention(predict, status);
}

}  // namespace tessera::cli
