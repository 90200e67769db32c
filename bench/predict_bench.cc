// Prediction costs (docs/prediction.md): completing a large profile matrix, the cached lookup a
// policy makes per (application, configuration) it scores, and one online observation on a
// matrix the size of the MIGProfiler data. Synthetic data from a seeded Rng: log-throughput
// = application level + configuration level + a rank-5 interaction + noise.
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "predict/features.h"
#include "predict/predictor.h"
#include "predict/registry.h"

namespace tessera::predict {
namespace {

// The documented size is 1000 x 500; sanitizer builds only smoke-run the code (scripts/test.sh),
// on a matrix small enough to finish in seconds. (The test build defines NDEBUG, so that is no
// sign of one: testing it here made the smoke run the full size, 4-7 min under ASan.)
#if defined(__SANITIZE_ADDRESS__)
constexpr int kRows = 200, kCols = 100;
#else
constexpr int kRows = 1000, kCols = 500;
#endif

Eigen::MatrixXd SyntheticLogProfile(int m, int n, double missing, uint64_t seed) {
  Rng rng(seed);
  constexpr int kRank = 5;
  Eigen::MatrixXd u(m, kRank), v(n, kRank);
  for (Eigen::Index i = 0; i < u.size(); ++i) u.data()[i] = rng.Normal(0, 0.3);
  for (Eigen::Index i = 0; i < v.size(); ++i) v.data()[i] = rng.Normal(0, 0.3);
  Eigen::MatrixXd x = u * v.transpose();
  for (int i = 0; i < m; ++i) x.row(i).array() += rng.Uniform(1, 9);
  for (int j = 0; j < n; ++j) x.col(j).array() += rng.Uniform(0, 2);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    x.data()[i] = rng.Uniform() < missing ? kMissing : x.data()[i] + rng.Normal(0, 0.02);
  }
  return x;
}

ProfileMatrix ToProfile(const Eigen::MatrixXd& log_values) {
  ProfileMatrix p;
  for (Eigen::Index j = 0; j < log_values.cols(); ++j) p.AddCol(fmt::format("gpu/cfg{}/100", j));
  for (Eigen::Index i = 0; i < log_values.rows(); ++i) {
    const int r = p.AddRow(fmt::format("app{}/bs1", i));
    for (Eigen::Index j = 0; j < log_values.cols(); ++j) {
      if (!std::isnan(log_values(i, j)))
        p.Observe(r, static_cast<int>(j), std::exp(log_values(i, j)));
    }
  }
  return p;
}

// Completion of a 1000 x 500 matrix with 70% of the cells missing.
void BM_Complete(benchmark::State& state, const std::string& method) {
  const Eigen::MatrixXd x = SyntheticLogProfile(static_cast<int>(state.range(0)),
                                                static_cast<int>(state.range(1)), 0.7, 42);
  std::unique_ptr<Completer> completer = std::move(*MakeCompleter(method));
  for (auto _ : state) {
    Expected<Eigen::MatrixXd> out = completer->Complete(x);
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(fmt::format("{} {}x{} 70% missing", method, state.range(0), state.range(1)));
}
BENCHMARK_CAPTURE(BM_Complete, svd, std::string("svd"))
    ->Args({kRows, kCols})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Complete, baseline, std::string("baseline"))
    ->Args({kRows, kCols})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Complete, imputer, std::string("imputer"))
    ->Args({kRows, kCols})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Complete, hybrid, std::string("hybrid"))
    ->Args({kRows, kCols})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Complete, knn, std::string("knn"))
    ->Args({kRows, kCols})
    ->Unit(benchmark::kMillisecond);

// Features that half explain the synthetic rows: two noisy readings of the first latent
// factors' row means and a family of 20 levels.
FeatureTable SyntheticFeatures(int m, uint64_t seed) {
  Rng rng(seed);
  FeatureTable t;
  for (int i = 0; i < m; ++i) {
    (void)t.Set(fmt::format("app{}", i), {{"size", rng.Uniform(1, 100)},
                                          {"batch", std::pow(2.0, static_cast<double>(i % 9))},
                                          {"family", fmt::format("f{}", i % 20)}});
  }
  return t;
}

// Completion with side information (`features`), same matrix.
void BM_CompleteWithFeatures(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  const Eigen::MatrixXd x = SyntheticLogProfile(m, n, 0.7, 42);
  std::vector<std::string> rows;
  for (int i = 0; i < m; ++i) rows.push_back(fmt::format("app{}", i));
  // Columns named as configurations of ten GPU models (MIG slices of 1-7 units at MPS 100, 98,
  // ... %), so that the roofline prior (one fit per GPU model, and its blend's validation) is
  // part of the cost.
  std::vector<std::string> cols;
  for (int j = 0; j < n; ++j)
    cols.push_back(fmt::format("gpu{}/{}g.x/{}", j % 10, 1 + (j / 10) % 7, 100 - 2 * (j / 70)));
  const EncodedFeatures f = Encode(SyntheticFeatures(m, 5), rows, cols);
  std::unique_ptr<Completer> completer = std::move(*MakeCompleter("features"));
  for (auto _ : state) {
    Expected<Eigen::MatrixXd> out = completer->CompleteWith(x, f);
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(fmt::format("features {}x{} 70% missing", m, n));
}
BENCHMARK(BM_CompleteWithFeatures)->Args({kRows, kCols})->Unit(benchmark::kMillisecond);

// A predictor over the synthetic 1000 x 500 profile (the lookup cost does not depend on the
// method; `baseline` sets up fast) and 4096 seeded (app, config) handles to read.
struct LookupSetup {
  Predictor predictor;
  std::vector<std::pair<AppId, ConfigId>> queries;
};
LookupSetup MakeLookupSetup() {
  PredictorOptions options;
  options.method = "baseline";
  Expected<Predictor> p =
      Predictor::Create(ToProfile(SyntheticLogProfile(kRows, kCols, 0.7, 7)), {}, options);
  Rng rng(1);
  std::vector<std::pair<AppId, ConfigId>> queries(4096);
  for (auto& q : queries) {
    q = {static_cast<AppId>(rng.Below(kRows)), static_cast<ConfigId>(rng.Below(kCols))};
  }
  return {std::move(*p), std::move(queries)};
}

// A cached prediction with its 90% interval (two array reads, two exp). The predictor
// calibrates on the first σ read; that is setup, not the lookup.
void BM_CachedInterval(benchmark::State& state) {
  const LookupSetup s = MakeLookupSetup();
  benchmark::DoNotOptimize(s.predictor.SigmaAt(0, 0));
  size_t i = 0;
  for (auto _ : state) {
    const auto [a, c] = s.queries[i++ & 4095];
    benchmark::DoNotOptimize(s.predictor.IntervalAt(a, c));
  }
}
BENCHMARK(BM_CachedInterval);

// The hot path: a policy holding integer handles reads one cached cell.
void BM_CachedLookup(benchmark::State& state) {
  const LookupSetup s = MakeLookupSetup();
  size_t i = 0;
  for (auto _ : state) {
    const auto [a, c] = s.queries[i++ & 4095];
    benchmark::DoNotOptimize(s.predictor.IsolatedAt(a, c));
  }
}
BENCHMARK(BM_CachedLookup);

// The same lookup by string keys (two hash lookups).
void BM_LookupByKey(benchmark::State& state) {
  PredictorOptions options;
  options.method = "baseline";
  Expected<Predictor> p =
      Predictor::Create(ToProfile(SyntheticLogProfile(kRows, kCols, 0.7, 7)), {}, options);
  Rng rng(1);
  std::vector<std::pair<std::string, std::string>> queries(1024);
  for (auto& q : queries) {
    q = {fmt::format("app{}/bs1", rng.Below(kRows)),
         fmt::format("gpu/cfg{}/100", rng.Below(kCols))};
  }
  size_t i = 0;
  for (auto _ : state) {
    const auto& [a, c] = queries[i++ & 1023];
    benchmark::DoNotOptimize(p->Isolated(a, c));
  }
}
BENCHMARK(BM_LookupByKey);

// One live measurement folded in with a full re-completion (refit_every = 1), on a matrix the
// size of the MIGProfiler data (74 applications x 8 configurations, half observed).
void BM_ObserveAndRefit(benchmark::State& state, const std::string& method) {
  PredictorOptions options;
  options.method = method;
  Expected<Predictor> p =
      Predictor::Create(ToProfile(SyntheticLogProfile(74, 8, 0.5, 3)), {}, options);
  Rng rng(2);
  for (auto _ : state) {
    Expected<void> ok =
        p->Observe(fmt::format("app{}/bs1", rng.Below(74)),
                   fmt::format("gpu/cfg{}/100", rng.Below(8)), std::exp(rng.Uniform(1, 9)));
    benchmark::DoNotOptimize(ok);
  }
}
BENCHMARK_CAPTURE(BM_ObserveAndRefit, hybrid, std::string("hybrid"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ObserveAndRefit, svd, std::string("svd"))->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera::predict

BENCHMARK_MAIN();
