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
  // p90 of the sorted APEs (0, 10, 10)%: position 0.9 × 2 = 1.8, between 10 and 10.
  EXPECT_NEAR(s.p90_ape, 10.0, 1e-9);
  // Ten APEs 1..10 %: position 8.1 -> 9 + 0.1 × (10 - 9) = 9.1.
  std::vector<double> truth(10, 100), predicted;
  for (int i = 1; i <= 10; ++i) predicted.push_back(100 + i);
  EXPECT_NEAR(SummariseErrors(truth, predicted).p90_ape, 9.1, 1e-9);
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
  EXPECT_LE(r->errors.n, 60);
  EXPECT_GE(r->errors.n, 55);
  EXPECT_LT(r->errors.median_ape, 1.0);  // the bias model is the truth here (percent)
  // At 99% nearly everything is drawn, yet each of the 20 rows keeps one cell.
  Expected<EvalResult> most = Evaluate(m, {"baseline", "random", 0.99, 2, 7});
  ASSERT_TRUE(most.has_value());
  EXPECT_EQ(most->errors.n, 120 - 20);
}

TEST(EvaluateTest, LeaveOneRowOutHidesAllButKeep) {
  const ProfileMatrix m = Multiplicative(10, 6, 2);
  Expected<EvalResult> r = Evaluate(m, {"svd", "leave-one-row-out", 0.5, 2, 3});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->errors.n, 10 * (6 - 2));
  EXPECT_EQ(r->protocol, "leave-one-row-out");
  EXPECT_LT(r->errors.median_ape, 2.0);
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
  EXPECT_EQ(n, r->errors.n);
  EXPECT_NEAR(weighted / n, r->errors.mape, 1e-9);
  // Leave-one-row-out with K = 2: one bucket, the whole result.
  Expected<EvalResult> cold = Evaluate(m, {"baseline", "leave-one-row-out", 0.5, 2, 4});
  ASSERT_TRUE(cold.has_value());
  ASSERT_EQ(cold->by_known.size(), 1u);
  EXPECT_EQ(cold->by_known[0].known, 2);
  EXPECT_EQ(cold->by_known[0].errors.n, 12 * 4);
  EXPECT_DOUBLE_EQ(cold->by_known[0].errors.median_ape, cold->errors.median_ape);
}

TEST(EvaluateTest, SameSeedSameResult) {
  const ProfileMatrix m = Multiplicative(15, 5, 3);
  const EvalResult a = *Evaluate(m, {"hybrid", "random", 0.4, 2, 11});
  const EvalResult b = *Evaluate(m, {"hybrid", "random", 0.4, 2, 11});
  EXPECT_EQ(a.errors.n, b.errors.n);
  EXPECT_EQ(a.errors.mape, b.errors.mape);
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

TEST(EvaluateTest, RowsLimitTheHidingAndEveryHiddenCellIsRecorded) {
  const ProfileMatrix m = Multiplicative(20, 6, 8);  // rows app0..app19
  EvalOptions o{"baseline", "leave-one-row-out", 0.5, 2, 3};
  o.rows = "app1[0-9]";  // app10..app19
  Expected<EvalResult> r = Evaluate(m, o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->errors.n, 10 * 4);
  ASSERT_EQ(r->cells.size(), 40u);
  for (const HiddenCell& c : r->cells) {
    EXPECT_TRUE(c.app.starts_with("app1") && c.app.size() == 5) << c.app;
    EXPECT_LE(c.low, c.predicted);
    EXPECT_LE(c.predicted, c.high);
    EXPECT_EQ(c.known, 2);
    // The truth is what the matrix holds.
    EXPECT_DOUBLE_EQ(c.truth, m.Mean(*m.FindRow(c.app), *m.FindCol(c.config)));
  }
  // The random protocol hides round(0.5 × 60) = 30 of the 60 cells of the matching rows.
  o.protocol = "random";
  o.rows = "app[0-9]";  // app0..app9
  Expected<EvalResult> random = Evaluate(m, o);
  ASSERT_TRUE(random.has_value()) << random.error().message;
  EXPECT_LE(random->errors.n, 30);
  EXPECT_GE(random->errors.n, 25);
  for (const HiddenCell& c : random->cells) EXPECT_EQ(c.app.size(), 4u) << c.app;
  o.rows = "(";
  Expected<EvalResult> bad = Evaluate(m, o);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("regular expression"), std::string::npos);
  o.rows = "nothing";
  bad = Evaluate(m, o);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("matches no application"), std::string::npos);
}

TEST(EvaluateTest, RealDataFeaturesMeetTheIssueTargets) {
  const std::string dir = TESSERA_SHARED_DIR "/data/migprofiler";
  TESSERA_NEED_DATA(dir);
  MigProfilerExtras extras;
  Expected<ProfileMatrix> m = LoadMigProfiler(dir, &extras);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  // Seeds 1-3 of docs/prediction.md's protocol (which runs 1-10 and 101-110): at 50% missing
  // the feature method's median APE stays near 10% and its MAPE at most half the bias model's;
  // the 90% intervals cover 80-97% of the hidden cells; the one-cell cold start's p90 stays
  // under 35%.
  double mape = 0, baseline_mape = 0, median = 0, covered = 0, cold_p90 = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const EvalResult r = *Evaluate(*m, {"features", "random", 0.5, 2, seed}, &extras.features);
    mape += r.errors.mape / 3;
    median += r.errors.median_ape / 3;
    covered += r.coverage90 / 3;
    EvalOptions b{"baseline", "random", 0.5, 2, seed};
    b.intervals = false;
    baseline_mape += Evaluate(*m, b)->errors.mape / 3;
    EvalOptions cold{"features", "leave-one-row-out", 0.5, 1, seed};
    cold.rows = "paraphrase-multilingual-MiniLM.*";  // 13 of the 74 rows: a test-sized run
    cold_p90 += Evaluate(*m, cold, &extras.features)->errors.p90_ape / 3;
  }
  EXPECT_LT(median, 10.0);
  EXPECT_LT(2 * mape, baseline_mape);
  EXPECT_GT(covered, 0.80);
  EXPECT_LT(covered, 0.97);
  EXPECT_LT(cold_p90, 35.0);
}

TEST(EvaluateTest, RealDataCollaborativeFilteringBeatsTheBiasModel) {
  const std::string dir = TESSERA_SHARED_DIR "/data/migprofiler";
  TESSERA_NEED_DATA(dir);
  Expected<ProfileMatrix> m = LoadMigProfiler(dir);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  // Behaviour, not a recorded figure: over three seeds the neighbour-aware methods beat the
  // bias model on its own ground (median error at 50% missing), and in the cold start.
  double baseline = 0, hybrid = 0, cold_baseline = 0, cold_hybrid = 0;
  const auto median = [&](const char* method, const char* protocol, uint64_t seed) {
    EvalOptions o{method, protocol, 0.5, 2, seed};
    o.intervals = false;
    return Evaluate(*m, o)->errors.median_ape;
  };
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    baseline += median("baseline", "random", seed);
    hybrid += median("hybrid", "random", seed);
    cold_baseline += median("baseline", "leave-one-row-out", seed);
    cold_hybrid += median("hybrid", "leave-one-row-out", seed);
  }
  EXPECT_LT(hybrid, 0.5 * baseline);
  EXPECT_LT(cold_hybrid, 0.5 * cold_baseline);
}

}  // namespace
}  // namespace tessera::predict
