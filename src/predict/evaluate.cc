#include "predict/evaluate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "base/rng.h"
#include "base/stats.h"
#include "predict/registry.h"
#include "predict/uncertainty.h"

namespace tessera::predict {
namespace {

std::vector<SparsityBucket> ByKnown(const std::vector<HiddenCell>& cells) {
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const HiddenCell& cell : cells) {
    auto& [truth, predicted] = groups[cell.known];
    truth.push_back(cell.truth);
    predicted.push_back(cell.predicted);
  }
  std::vector<SparsityBucket> buckets;
  for (const auto& [known, cells] : groups)
    buckets.push_back({known, SummariseErrors(cells.first, cells.second)});
  return buckets;
}

// Completes `log_values` with the hidden cells set to NaN, calibrates the uncertainty on what is
// left, and records every hidden cell; `kept[row]` is the number of cells that row kept.
Expected<void> Score(const Completer& method, const ProfileMatrix& matrix,
                     const Eigen::MatrixXd& log_values, const EncodedFeatures& features,
                     const std::vector<CellIndex>& hidden, const std::vector<int>& kept,
                     bool intervals, std::vector<HiddenCell>* cells) {
  Eigen::MatrixXd input = log_values;
  for (const CellIndex& h : hidden) input(h.row, h.col) = kMissing;
  Expected<Eigen::MatrixXd> completed = method.CompleteWith(input, features);
  if (!completed) return std::unexpected(completed.error());
  Expected<UncertaintyModel> uncertainty =
      intervals ? Calibrate(method, input, features) : Expected<UncertaintyModel>();
  if (!uncertainty) return std::unexpected(uncertainty.error());
  const Eigen::MatrixXd sigma = CellSigmas(*uncertainty, input, *completed);
  for (const CellIndex& h : hidden) {
    const double x = (*completed)(h.row, h.col);
    const double half = uncertainty->z90 * sigma(h.row, h.col);
    cells->push_back({matrix.row_keys()[static_cast<size_t>(h.row)],
                      matrix.col_keys()[static_cast<size_t>(h.col)],
                      std::exp(log_values(h.row, h.col)), std::exp(x), std::exp(x - half),
                      std::exp(x + half), kept[static_cast<size_t>(h.row)]});
  }
  return {};
}

// Refuses an unknown protocol and a --missing or --keep out of range.
Expected<void> CheckOptions(const EvalOptions& options) {
  if (options.protocol != "random" && options.protocol != "leave-one-row-out") {
    return Fail("unknown protocol '{}' (known: random, leave-one-row-out)", options.protocol);
  }
  if (!(options.missing > 0 && options.missing < 1)) {
    return Fail("--missing must lie strictly between 0 and 1, got {}", options.missing);
  }
  if (options.keep < 1) return Fail("--keep must be at least 1, got {}", options.keep);
  return {};
}

// Per row, whether the hiding may touch it: its key matches --rows (every row without one).
Expected<std::vector<char>> ChosenRows(const ProfileMatrix& matrix, const EvalOptions& options) {
  std::regex rows_pattern;
  if (!options.rows.empty()) {
    try {
      rows_pattern = std::regex(options.rows, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Fail("--rows '{}' is not a regular expression: {}", options.rows, e.what());
    }
  }
  std::vector<char> chosen(static_cast<size_t>(matrix.rows()));
  for (int r = 0; r < matrix.rows(); ++r) {
    chosen[static_cast<size_t>(r)] =
        options.rows.empty() ||
        std::regex_match(matrix.row_keys()[static_cast<size_t>(r)], rows_pattern);
  }
  return chosen;
}

// The matrix in logs, and the observed cells of the chosen rows that the hiding may take.
struct KnownCells {
  Eigen::MatrixXd log_values;
  std::vector<std::vector<CellIndex>> by_row;
  std::vector<CellIndex> cells;  // every row's, in row order
};

// The matrix's known cells; refuses a throughput that is not positive, and no cell to hide.
Expected<KnownCells> KnownCellsOf(const ProfileMatrix& matrix, const std::vector<char>& chosen,
                                  const EvalOptions& options) {
  KnownCells out{matrix.ToDense(),
                 std::vector<std::vector<CellIndex>>(static_cast<size_t>(matrix.rows())),
                 {}};
  for (int r = 0; r < matrix.rows(); ++r) {
    for (int c = 0; c < matrix.cols(); ++c) {
      if (!matrix.Has(r, c)) continue;
      if (!(matrix.Mean(r, c) > 0)) {
        return Fail("cell ({}, {}) = {} is not a positive throughput", matrix.row_keys()[r],
                    matrix.col_keys()[c], matrix.Mean(r, c));
      }
      out.log_values(r, c) = std::log(matrix.Mean(r, c));
      if (!chosen[static_cast<size_t>(r)]) continue;
      out.cells.push_back({r, c});
      out.by_row[static_cast<size_t>(r)].push_back({r, c});
    }
  }
  if (out.cells.empty()) {
    return options.rows.empty()
               ? Fail("the matrix has no observed cell")
               : Fail("--rows '{}' matches no application with an observed cell", options.rows);
  }
  return out;
}

// Hides cells as the protocol says (random: a share of all; leave-one-row-out: all but
// --keep of each row, a row at a time) and scores each completion.
Expected<std::vector<HiddenCell>> HideAndScore(const Completer& method, const ProfileMatrix& matrix,
                                               const std::vector<char>& chosen, KnownCells& known,
                                               const EncodedFeatures& encoded,
                                               const EvalOptions& options) {
  Rng rng(options.seed);
  std::vector<HiddenCell> cells;
  if (options.protocol == "random") {
    std::vector<int> kept(static_cast<size_t>(matrix.rows()), 0);
    for (int r = 0; r < matrix.rows(); ++r) {
      if (chosen[static_cast<size_t>(r)]) continue;
      for (int c = 0; c < matrix.cols(); ++c) kept[static_cast<size_t>(r)] += matrix.Has(r, c);
    }
    const std::vector<CellIndex> hidden =
        HideAtRandom(known.cells, options.missing, options.seed, kept);
    if (Expected<void> ok = Score(method, matrix, known.log_values, encoded, hidden, kept,
                                  options.intervals, &cells);
        !ok) {
      return std::unexpected(ok.error());
    }
  } else {
    const std::vector<int> kept(static_cast<size_t>(matrix.rows()), options.keep);
    for (std::vector<CellIndex>& row : known.by_row) {
      if (static_cast<int>(row.size()) <= options.keep) continue;
      rng.Shuffle(row);
      const std::vector<CellIndex> hidden(row.begin() + options.keep, row.end());
      if (Expected<void> ok = Score(method, matrix, known.log_values, encoded, hidden, kept,
                                    options.intervals, &cells);
          !ok) {
        return std::unexpected(ok.error());
      }
    }
  }
  return cells;
}

// The errors and interval coverage over every hidden cell; refuses an evaluation that hid none.
Expected<EvalResult> Summarise(const EvalOptions& options, std::vector<HiddenCell> cells) {
  std::vector<double> truth, predicted;
  int covered = 0;
  for (const HiddenCell& cell : cells) {
    truth.push_back(cell.truth);
    predicted.push_back(cell.predicted);
    covered += cell.low <= cell.truth && cell.truth <= cell.high;
  }
  EvalResult result;
  result.errors = SummariseErrors(truth, predicted);
  if (result.errors.n == 0) {
    return Fail("no cell could be hidden under protocol {}", options.protocol);
  }
  result.method = options.method;
  result.protocol = options.protocol;
  result.missing = options.protocol == "random" ? options.missing : 0.0;
  result.seed = options.seed;
  result.coverage90 = options.intervals ? static_cast<double>(covered) / result.errors.n : kMissing;
  result.by_known = ByKnown(cells);
  result.cells = std::move(cells);
  return result;
}

}  // namespace

std::vector<CellIndex> HideAtRandom(std::vector<CellIndex> cells, double missing, uint64_t seed,
                                    std::vector<int>& kept) {
  Rng rng(seed);
  rng.Shuffle(cells);
  const size_t count =
      static_cast<size_t>(std::llround(missing * static_cast<double>(cells.size())));
  for (size_t i = count; i < cells.size(); ++i) ++kept[static_cast<size_t>(cells[i].row)];
  std::vector<CellIndex> hidden;
  for (size_t i = count; i-- > 0;) {
    int& k = kept[static_cast<size_t>(cells[i].row)];
    if (k == 0) {
      k = 1;
      continue;
    }
    hidden.push_back(cells[i]);
  }
  return hidden;
}

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
  s.mape = 100.0 * sum / s.n;
  s.median_ape = 100.0 * Median(ape);
  s.p90_ape = 100.0 * Quantile(ape, 0.9);
  s.rmse_log = std::sqrt(sq_log / s.n);
  return s;
}

Expected<EvalResult> Evaluate(const ProfileMatrix& matrix, const EvalOptions& options,
                              const FeatureTable* features) {
  Expected<std::unique_ptr<Completer>> method = MakeCompleter(options.method);
  if (!method) return std::unexpected(method.error());
  if (Expected<void> ok = CheckOptions(options); !ok) return std::unexpected(ok.error());
  Expected<std::vector<char>> chosen = ChosenRows(matrix, options);
  if (!chosen) return std::unexpected(chosen.error());
  Expected<KnownCells> known = KnownCellsOf(matrix, *chosen, options);
  if (!known) return std::unexpected(known.error());
  const EncodedFeatures encoded = features != nullptr
                                      ? Encode(*features, matrix.row_keys(), matrix.col_keys())
                                      : EncodedFeatures{};
  Expected<std::vector<HiddenCell>> cells =
      HideAndScore(**method, matrix, *chosen, *known, encoded, options);
  if (!cells) return std::unexpected(cells.error());
  return Summarise(options, std::move(*cells));
}

}  // namespace tessera::predict
