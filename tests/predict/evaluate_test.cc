#include "predict/evaluate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "base/rng.h"
#include "predict/migprofiler.h"
#include "shared_data.h"

namespace tessera::predict {
namespace {

TEST(EvaluateTest, SummariseErrorsByHand) {
  // truth (100, 200, 400), predicted (110, 180, 400): APE 10%, 10%, 0% -> MAPE 20/3, median 10;
  // log errors ln 1.1 = 0.0953102, ln 0.9 = -0.1053605, 0 -> RMSE sqrt((0.0090840 + 0.0111008)
  // / 3) = 0.0820260.
  const ErrorSummary s = SummariseErrors({100, 200, 400}, {110, 180, 400});
  EXPECT_EQ(s.n, 3);
  EXPECT_NEAR(s.mape, 20.0 / 3, 1e-9);
  EXPECT_NEAR(s.median_ape, 10.0, 1e-9);
  EXPECT_NEAR(s.rmse_log, 0.0820260, 1e-6);
  // Even count: the median averages the two middle values, (5 + 10) / 2.
  EXPECT_NEAR(SummariseErrors({100, 100, 100, 100}, {100, 105, 110, 80}).median_ape,
              12.5 / 1.0 - 5.0, 1e-9);
}

// Throughput exp(a_u + b_c): exactly the bias model in log space.
ProfileMatrix Multiplicative(int apps, int configs, uint64_t seed) {
  Rng rng(seed);
  ProfileMatrix m;
  std::vector<double> b(static_cast<size_t>(configs));
  for (double& x : b) x = rng.Uniform(0, 2);
  for (int u = 0; u < apps; ++u) {
    const double a = rng.Uniform(2, 8);
    const int r = m.AddRow(fmt::format("app{}", u));
    for (int c = 0; c < configs; ++c)
      m.Observe(r, m.AddCol(fmt::format("cfg{}", c)), std::exp(a + b[c]));
  }
  return m;
}

TEST(EvaluateTest, RandomProtocolHidesTheRequestedShareAndKeepsOnePerRow) {
  const ProfileMatrix m = Multiplicative(20, 6, 1);
  Expected<EvalResult> r = Evaluate(m, {"baseline", "random", 0.5, 2, 7});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  // 120 known cells, round(0.5 * 120) = 60 drawn; a row that lost all 6 keeps one back.
  EXPECT_LE(r->n, 60);
  EXPECT_GE(r->n, 55);
  EXPECT_LT(r->median_ape, 1.0);  // the bias model is the truth here (percent)
  // At 99% nearly everything is drawn, yet each of the 20 rows keeps one cell.
  Expected<EvalResult> most = Evaluate(m, {"baseline", "random", 0.99, 2, 7});
  ASSERT_TRUE(most.has_value());
  EXPECT_EQ(most->n, 120 - 20);
}

TEST(EvaluateTest, LeaveOneRowOutHidesAllButKeep) {
  const ProfileMatrix m = Multiplicative(10, 6, 2);
  Expected<EvalResult> r = Evaluate(m, {"svd", "leave-one-row-out", 0.5, 2, 3});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->n, 10 * (6 - 2));
  EXPECT_EQ(r->protocol, "leave-one-row-out");
  EXPECT_LT(r->median_ape, 2.0);
}

TEST(EvaluateTest, ErrorBySparsityPartitionsTheHiddenCells) {
  // Throughput exp(a_u + b_c) times a per-cell wobble, so the bias model is not exact and the
  // buckets carry different errors.
  ProfileMatrix m = Multiplicative(12, 6, 5);
  Rng rng(9);
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) m.Observe(r, c, m.Mean(r, c) * rng.Uniform(0.6, 1.6));
  Expected<EvalResult> r = Evaluate(m, {"baseline", "random", 0.6, 2, 4});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  // Every hidden cell lies in exactly one bucket; a row keeps between 1 and 5 of its 6 cells;
  // MAPE is a mean, so the buckets' MAPEs weighted by their counts give the overall one.
  ASSERT_GE(r->by_known.size(), 2u);
  int n = 0;
  double weighted = 0;
  for (size_t i = 0; i < r->by_known.size(); ++i) {
    const SparsityBucket& b = r->by_known[i];
    EXPECT_GE(b.known, 1);
    EXPECT_LE(b.known, 5);
    if (i > 0) {
      EXPECT_GT(b.known, r->by_known[i - 1].known);
    }
    EXPECT_GT(b.errors.n, 0);
    n += b.errors.n;
    weighted += b.errors.n * b.errors.mape;
  }
  EXPECT_EQ(n, r->n);
  EXPECT_NEAR(weighted / n, r->mape, 1e-9);
  // Leave-one-row-out with K = 2: one bucket, the whole result.
  Expected<EvalResult> cold = Evaluate(m, {"baseline", "leave-one-row-out", 0.5, 2, 4});
  ASSERT_TRUE(cold.has_value());
  ASSERT_EQ(cold->by_known.size(), 1u);
  EXPECT_EQ(cold->by_known[0].known, 2);
  EXPECT_EQ(cold->by_known[0].errors.n, 12 * 4);
  EXPECT_DOUBLE_EQ(cold->by_known[0].errors.median_ape, cold->median_ape);
}

TEST(EvaluateTest, SameSeedSameResult) {
  const ProfileMatrix m = Multiplicative(15, 5, 3);
  const EvalResult a = *Evaluate(m, {"hybrid", "random", 0.4, 2, 11});
  const EvalResult b = *Evaluate(m, {"hybrid", "random", 0.4, 2, 11});
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.mape, b.mape);
}

TEST(EvaluateTest, BadOptionsAreErrors) {
  const ProfileMatrix m = Multiplicative(5, 3, 4);
  EXPECT_FALSE(Evaluate(m, {"magic", "random", 0.5, 2, 1}).has_value());
  EXPECT_FALSE(Evaluate(m, {"svd", "sideways", 0.5, 2, 1}).has_value());
  EXPECT_FALSE(Evaluate(m, {"svd", "random", 1.5, 2, 1}).has_value());
  EXPECT_FALSE(Evaluate(m, {"svd", "leave-one-row-out", 0.5, 0, 1}).has_value());
  EXPECT_FALSE(Evaluate(m, {"svd", "leave-one-row-out", 0.5, 3, 1}).has_value());  // none hidden
  EXPECT_FALSE(Evaluate(ProfileMatrix{}, {"svd", "random", 0.5, 2, 1}).has_value());
}

TEST(EvaluateTest, RealDataCollaborativeFilteringBeatsTheBiasModel) {
  const std::string dir = TESSERA_SHARED_DIR "/data/migprofiler";
  TESSERA_NEED_DATA(dir);
  Expected<ProfileMatrix> m = LoadMigProfiler(dir);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  // Behaviour, not a recorded figure: over three seeds the neighbour-aware methods beat the
  // bias model on its own ground (median error at 50% missing), and in the cold start.
  double baseline = 0, hybrid = 0, cold_baseline = 0, cold_hybrid = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    baseline += Evaluate(*m, {"baseline", "random", 0.5, 2, seed})->median_ape;
    hybrid += Evaluate(*m, {"hybrid", "random", 0.5, 2, seed})->median_ape;
    cold_baseline += Evaluate(*m, {"baseline", "leave-one-row-out", 0.5, 2, seed})->median_ape;
    cold_hybrid += Evaluate(*m, {"hybrid", "leave-one-row-out", 0.5, 2, seed})->median_ape;
  }
  EXPECT_LT(hybrid, 0.5 * baseline);
  EXPECT_LT(cold_hybrid, 0.5 * cold_baseline);
}

}  // namespace
}  // namespace tessera::predict
