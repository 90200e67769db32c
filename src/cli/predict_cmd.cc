// `tessera predict`: evaluate the completion methods on real measurements, or write a completed
// profile matrix (docs/prediction.md).
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "predict/evaluate.h"
#include "predict/matrix.h"
#include "predict/migprofiler.h"
#include "predict/registry.h"

namespace tessera::cli {
namespace {

struct PredictArgs {
  std::string data;
  std::string method = "svd";
  std::string protocol = "random";
  double missing = 0.5;
  int keep = 2;
  uint64_t seed = 1;
  bool json = false;
  std::string out;
};

// --data is either a MIGProfiler directory or a profile-matrix CSV (row,column,value,...).
Expected<predict::ProfileMatrix> LoadData(const std::string& path) {
  if (path.ends_with(".csv")) return predict::ProfileMatrix::LoadCsv(path);
  return predict::LoadMigProfiler(path);
}

Status RunEvaluate(const PredictArgs& args) {
  Expected<predict::ProfileMatrix> matrix = LoadData(args.data);
  if (!matrix) return Failed(matrix.error());
  const predict::EvalOptions options{args.method, args.protocol, args.missing, args.keep,
                                     args.seed};
  Expected<predict::EvalResult> result = predict::Evaluate(*matrix, options);
  if (!result) return Failed(result.error());
  if (args.json) {
    nlohmann::json j = {{"method", result->method},     {"protocol", result->protocol},
                        {"missing", result->missing},   {"n", result->n},
                        {"mape", result->mape},         {"median_ape", result->median_ape},
                        {"rmse_log", result->rmse_log}, {"seed", args.seed}};
    if (result->protocol == "leave-one-row-out") j["keep"] = args.keep;
    j["by_known"] = nlohmann::json::array();
    for (const predict::SparsityBucket& b : result->by_known) {
      j["by_known"].push_back({{"known", b.known},
                               {"n", b.errors.n},
                               {"mape", b.errors.mape},
                               {"median_ape", b.errors.median_ape},
                               {"rmse_log", b.errors.rmse_log}});
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("method %s, protocol %s", result->method.c_str(), result->protocol.c_str());
    if (result->protocol == "random")
      std::printf(", missing %.2f", result->missing);
    else
      std::printf(", keep %d", args.keep);
    std::printf(", seed %llu\n  n %d  MAPE %.2f%%  median APE %.2f%%  RMSE(log) %.4f\n",
                static_cast<unsigned long long>(args.seed), result->n, result->mape,
                result->median_ape, result->rmse_log);
    for (const predict::SparsityBucket& b : result->by_known) {
      std::printf("    row kept %d: n %d  MAPE %.2f%%  median APE %.2f%%  RMSE(log) %.4f\n",
                  b.known, b.errors.n, b.errors.mape, b.errors.median_ape, b.errors.rmse_log);
    }
  }
  return {};
}

Status RunComplete(const PredictArgs& args) {
  Expected<predict::ProfileMatrix> matrix = LoadData(args.data);
  if (!matrix) return Failed(matrix.error());
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
  Expected<Eigen::MatrixXd> completed = (*method)->Complete(values);
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

}  // namespace

void AddPredict(CLI::App& app, Status* status) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* predict =
      app.add_subcommand("predict", "Evaluate and run the throughput/interference predictor");
  predict->require_subcommand(1);

  CLI::App* evaluate = predict->add_subcommand(
      "evaluate", "Hide known cells of a profile matrix, predict them, report the error");
  evaluate->add_option("--data", args->data, "MIGProfiler directory or profile-matrix CSV")
      ->required();
  evaluate->add_option("--method", args->method, "Completion method")
      ->check(CLI::IsMember(predict::CompleterNames()));
  evaluate->add_option("--protocol", args->protocol, "random | leave-one-row-out")
      ->check(CLI::IsMember({"random", "leave-one-row-out"}));
  evaluate->add_option("--missing", args->missing, "Fraction of known cells to hide (random)")
      ->check(CLI::Range(0.0, 1.0));
  evaluate->add_option("--keep", args->keep, "Known cells kept per row (leave-one-row-out)")
      ->check(CLI::PositiveNumber);
  evaluate->add_option("--seed", args->seed, "Seed of the random hiding");
  evaluate->add_flag("--json", args->json, "Print one JSON object");
  evaluate->callback([args, status] { *status = RunEvaluate(*args); });

  CLI::App* complete =
      predict->add_subcommand("complete", "Write the completed profile matrix as a wide CSV");
  complete->add_option("--data", args->data, "MIGProfiler directory or profile-matrix CSV")
      ->required();
  complete->add_option("--method", args->method, "Completion method")
      ->check(CLI::IsMember(predict::CompleterNames()));
  complete->add_option("--out", args->out, "Output CSV (app, one column per configuration)")
      ->required();
  complete->callback([args, status] { *status = RunComplete(*args); });
}

}  // namespace tessera::cli
