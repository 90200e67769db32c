#include "predict/evaluate.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/rng.h"
#include "predict/registry.h"

namespace tessera::predict {
namespace {

struct Cell {
  int row, col;
};

struct Errors {
  std::vector<double> truth, predicted;
  std::vector<int> known;  // cells the hidden cell's row kept
  void Add(double t, double p, int k) {
    truth.push_back(t);
    predicted.push_back(p);
    known.push_back(k);
  }
};

std::vector<SparsityBucket> ByKnown(const Errors& errors) {
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (size_t i = 0; i < errors.truth.size(); ++i) {
    auto& [truth, predicted] = groups[errors.known[i]];
    truth.push_back(errors.truth[i]);
    predicted.push_back(errors.predicted[i]);
  }
  std::vector<SparsityBucket> buckets;
  for (const auto& [known, cells] : groups)
    buckets.push_back({known, SummariseErrors(cells.first, cells.second)});
  return buckets;
}

// Completes `log_values` with the hidden cells set to NaN and scores them; `kept[row]` is the
// number of cells that row kept.
Expected<void> Score(const Completer& method, const Eigen::MatrixXd& log_values,
                     const std::vector<Cell>& hidden, const std::vector<int>& kept,
                     Errors* errors) {
  Eigen::MatrixXd input = log_values;
  for (const Cell& h : hidden) input(h.row, h.col) = kMissing;
  Expected<Eigen::MatrixXd> completed = method.Complete(input);
  if (!completed) return std::unexpected(completed.error());
  for (const Cell& h : hidden) {
    errors->Add(std::exp(log_values(h.row, h.col)), std::exp((*completed)(h.row, h.col)),
                kept[static_cast<size_t>(h.row)]);
  }
  return {};
}

}  // namespace

ErrorSummary SummariseErrors(const std::vector<double>& truth,
                             const std::vector<double>& predicted) {
  TESSERA_CHECK(truth.size() == predicted.size());
  ErrorSummary s;
  s.n = static_cast<int>(truth.size());
  if (s.n == 0) return s;
  std::vector<double> ape(truth.size());
  double sum = 0, sq_log = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    ape[i] = std::abs(predicted[i] - truth[i]) / truth[i];
    sum += ape[i];
    const double d = std::log(predicted[i]) - std::log(truth[i]);
    sq_log += d * d;
  }
  std::sort(ape.begin(), ape.end());
  const size_t mid = ape.size() / 2;
  s.mape = 100.0 * sum / s.n;
  s.median_ape = 100.0 * (ape.size() % 2 ? ape[mid] : 0.5 * (ape[mid - 1] + ape[mid]));
  s.rmse_log = std::sqrt(sq_log / s.n);
  return s;
}

Expected<EvalResult> Evaluate(const ProfileMatrix& matrix, const EvalOptions& options) {
  Expected<std::unique_ptr<Completer>> method = MakeCompleter(options.method);
  if (!method) return std::unexpected(method.error());
  if (options.protocol != "random" && options.protocol != "leave-one-row-out") {
    return Fail("unknown protocol '{}' (known: random, leave-one-row-out)", options.protocol);
  }
  if (!(options.missing > 0 && options.missing < 1)) {
    return Fail("--missing must lie strictly between 0 and 1, got {}", options.missing);
  }
  if (options.keep < 1) return Fail("--keep must be at least 1, got {}", options.keep);

  Eigen::MatrixXd log_values = matrix.ToDense();
  std::vector<std::vector<Cell>> by_row(static_cast<size_t>(matrix.rows()));
  std::vector<Cell> known;
  for (int r = 0; r < matrix.rows(); ++r) {
    for (int c = 0; c < matrix.cols(); ++c) {
      if (!matrix.Has(r, c)) continue;
      if (!(matrix.Mean(r, c) > 0)) {
        return Fail("cell ({}, {}) = {} is not a positive throughput", matrix.row_keys()[r],
                    matrix.col_keys()[c], matrix.Mean(r, c));
      }
      log_values(r, c) = std::log(matrix.Mean(r, c));
      known.push_back({r, c});
      by_row[static_cast<size_t>(r)].push_back({r, c});
    }
  }
  if (known.empty()) return Fail("the matrix has no observed cell");

  Rng rng(options.seed);
  Errors errors;
  if (options.protocol == "random") {
    rng.Shuffle(known);
    const size_t count = static_cast<size_t>(std::llround(options.missing * known.size()));
    std::vector<int> kept(static_cast<size_t>(matrix.rows()), 0);
    for (size_t i = count; i < known.size(); ++i) ++kept[static_cast<size_t>(known[i].row)];
    std::vector<Cell> hidden;
    // Walking the hidden cells from the last, a row with nothing kept keeps that cell instead.
    for (size_t i = count; i-- > 0;) {
      int& k = kept[static_cast<size_t>(known[i].row)];
      if (k == 0) {
        k = 1;
        continue;
      }
      hidden.push_back(known[i]);
    }
    if (Expected<void> ok = Score(**method, log_values, hidden, kept, &errors); !ok) {
      return std::unexpected(ok.error());
    }
  } else {
    const std::vector<int> kept(static_cast<size_t>(matrix.rows()), options.keep);
    for (std::vector<Cell>& row : by_row) {
      if (static_cast<int>(row.size()) <= options.keep) continue;
      rng.Shuffle(row);
      const std::vector<Cell> hidden(row.begin() + options.keep, row.end());
      if (Expected<void> ok = Score(**method, log_values, hidden, kept, &errors); !ok) {
        return std::unexpected(ok.error());
      }
    }
  }
  const ErrorSummary summary = SummariseErrors(errors.truth, errors.predicted);
  if (summary.n == 0) return Fail("no cell could be hidden under protocol {}", options.protocol);
  EvalResult result{
      options.method,   options.protocol, options.protocol == "random" ? options.missing : 0.0,
      summary.n,        summary.mape,     summary.median_ape,
      summary.rmse_log, ByKnown(errors)};
  return result;
}

}  // namespace tessera::predict
