#include "predict/interference_eval.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "base/stats.h"
#include "predict/evaluate.h"
#include "predict/registry.h"

namespace tessera::predict {
namespace {

using Cell = CellIndex;

AbsErrorSummary MedianOf(const std::vector<AbsErrorSummary>& s) {
  const auto field = [&](auto member) {
    std::vector<double> v;
    for (const AbsErrorSummary& e : s) v.push_back(static_cast<double>(e.*member));
    return Median(std::move(v));
  };
  return {static_cast<int>(std::lround(field(&AbsErrorSummary::n))), field(&AbsErrorSummary::mae),
          field(&AbsErrorSummary::median_ae), field(&AbsErrorSummary::p90_ae),
          field(&AbsErrorSummary::rmse)};
}

}  // namespace

AbsErrorSummary SummariseAbsErrors(const std::vector<double>& truth,
                                   const std::vector<double>& predicted) {
  TESSERA_CHECK(truth.size() == predicted.size());
  AbsErrorSummary s;
  s.n = static_cast<int>(truth.size());
  if (s.n == 0) return s;
  std::vector<double> ae(truth.size());
  double sum = 0, sq = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    ae[i] = 100.0 * std::abs(predicted[i] - truth[i]);
    sum += ae[i];
    sq += ae[i] * ae[i];
  }
  s.mae = sum / s.n;
  s.median_ae = Median(ae);
  s.p90_ae = Quantile(ae, 0.9);
  s.rmse = std::sqrt(sq / s.n);
  return s;
}

Expected<InterferenceEvalResult> EvaluateInterference(const SparseMatrix& m,
                                                      const InterferenceEvalOptions& options) {
  if (!(options.missing > 0 && options.missing < 1)) {
    return Fail("--missing must lie strictly between 0 and 1, got {}", options.missing);
  }
  Expected<std::unique_ptr<Completer>> method = MakeCompleter(options.method);
  if (!method) return std::unexpected(method.error());

  std::vector<Cell> observed;
  for (int r = 0; r < m.rows(); ++r) {
    for (int c = 0; c < m.cols(); ++c) {
      if (!m.Has(r, c)) continue;
      if (!(m.Mean(r, c) >= 0 && m.Mean(r, c) <= 1)) {
        return Fail("cell ({}, {}) = {} is not a loss fraction in [0, 1]", m.row_keys()[r],
                    m.col_keys()[c], m.Mean(r, c));
      }
      observed.push_back({r, c});
    }
  }
  if (observed.empty()) return Fail("the interference matrix has no observed cell");

  std::vector<int> kept(static_cast<size_t>(m.rows()), 0);
  const std::vector<Cell> hidden = HideAtRandom(observed, options.missing, options.seed, kept);
  if (hidden.empty()) {
    return Fail("no cell could be hidden ({} observed, missing {})", observed.size(),
                options.missing);
  }

  Eigen::MatrixXd input = m.ToDense();
  for (const Cell& h : hidden) input(h.row, h.col) = kMissing;
  double kept_sum = 0;
  for (Eigen::Index c = 0; c < input.cols(); ++c)
    for (Eigen::Index r = 0; r < input.rows(); ++r)
      if (IsKnown(input(r, c))) kept_sum += input(r, c);
  const double kept_mean = kept_sum / static_cast<double>(observed.size() - hidden.size());

  Expected<Eigen::MatrixXd> completed = (*method)->Complete(input);
  if (!completed) return std::unexpected(completed.error());
  std::vector<double> truth, predicted, prior;
  for (const Cell& h : hidden) {
    truth.push_back(m.Mean(h.row, h.col));
    predicted.push_back(std::clamp((*completed)(h.row, h.col), 0.0, 1.0));
    prior.push_back(kept_mean);
  }
  InterferenceEvalResult result;
  result.method = options.method;
  result.missing = options.missing;
  result.seed = options.seed;
  result.observed = static_cast<int>(observed.size());
  result.kept_mean = kept_mean;
  result.errors = SummariseAbsErrors(truth, predicted);
  result.mean_errors = SummariseAbsErrors(truth, prior);
  return result;
}

InterferenceEvalResult MedianOverSeeds(const std::vector<InterferenceEvalResult>& results) {
  InterferenceEvalResult out;
  if (results.empty()) return out;
  out.method = results.front().method;
  out.missing = results.front().missing;
  std::vector<double> observed, kept_mean;
  std::vector<AbsErrorSummary> errors, mean_errors;
  for (const InterferenceEvalResult& r : results) {
    observed.push_back(r.observed);
    kept_mean.push_back(r.kept_mean);
    errors.push_back(r.errors);
    mean_errors.push_back(r.mean_errors);
  }
  out.observed = static_cast<int>(std::lround(Median(std::move(observed))));
  out.kept_mean = Median(std::move(kept_mean));
  out.errors = MedianOf(errors);
  out.mean_errors = MedianOf(mean_errors);
  return out;
}

}  // namespace tessera::predict
