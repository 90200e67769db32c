#include "predict/interference_eval.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/rng.h"

namespace tessera::predict {
namespace {

TEST(InterferenceEvalTest, SummariseAbsErrorsByHand) {
  // truth (0, 0.1, 0.5), predicted (0.02, 0.1, 0.4): errors 2, 0, 10 pp -> MAE 4, median 2;
  // p90 of the sorted (0, 2, 10): position 1.8 -> 2 + 0.8 × 8 = 8.4; RMSE sqrt(104 / 3).
  const AbsErrorSummary s = SummariseAbsErrors({0, 0.1, 0.5}, {0.02, 0.1, 0.4});
  EXPECT_EQ(s.n, 3);
  EXPECT_NEAR(s.mae, 4.0, 1e-9);
  EXPECT_NEAR(s.median_ae, 2.0, 1e-9);
  EXPECT_NEAR(s.p90_ae, 8.4, 1e-9);
  EXPECT_NEAR(s.rmse, std::sqrt(104.0 / 3), 1e-9);
  EXPECT_EQ(SummariseAbsErrors({}, {}).n, 0);
}

// lost(v, a) = s_v × p_a: how sensitive the victim is times how pressing the aggressor is.
SparseMatrix RankOne(int victims, int aggressors, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> press(static_cast<size_t>(aggressors));
  for (double& p : press) p = rng.Uniform(0.1, 1.0);
  SparseMatrix m;
  for (int v = 0; v < victims; ++v) {
    const double sensitivity = rng.Uniform(0.05, 0.9);
    const int r = m.AddRow(fmt::format("victim{}", v));
    for (int a = 0; a < aggressors; ++a)
      m.Set(r, m.AddCol(fmt::format("aggressor{}", a)), sensitivity * press[a]);
  }
  return m;
}

TEST(InterferenceEvalTest, SvdCompletesARankOneMatrixAndBeatsTheMean) {
  const SparseMatrix m = RankOne(40, 30, 3);
  Expected<InterferenceEvalResult> r = EvaluateInterference(m, {"svd", 0.5, 7});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->method, "svd");
  EXPECT_EQ(r->seed, 7u);
  EXPECT_EQ(r->observed, 40 * 30);
  EXPECT_EQ(r->errors.n, 600);  // round(0.5 × 1200); no row lost all of its 30 cells
  EXPECT_EQ(r->mean_errors.n, r->errors.n);
  // Not exact (the filter shrinks towards its bias model, and the product is not additive) but
  // within about 1 pp, where the mean is off by about 15 pp (0.82 and 14.6 measured).
  EXPECT_LT(r->errors.mae, 1.5);
  EXPECT_LT(r->errors.p90_ae, 3.0);
  EXPECT_GT(r->mean_errors.mae, 10 * r->errors.mae);
  // The interaction s_v × p_a is what the low-rank term adds to the bias model (3.8 measured).
  Expected<InterferenceEvalResult> additive = EvaluateInterference(m, {"baseline", 0.5, 7});
  ASSERT_TRUE(additive.has_value());
  EXPECT_GT(additive->errors.mae, 2 * r->errors.mae);
  // The same seed hides the same cells; another seed other ones.
  Expected<InterferenceEvalResult> again = EvaluateInterference(m, {"svd", 0.5, 7});
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->errors.mae, r->errors.mae);
  Expected<InterferenceEvalResult> other = EvaluateInterference(m, {"svd", 0.5, 8});
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->mean_errors.mae, r->mean_errors.mae);
}

TEST(InterferenceEvalTest, EveryRowKeepsACell) {
  const SparseMatrix m = RankOne(20, 5, 4);
  Expected<InterferenceEvalResult> most = EvaluateInterference(m, {"baseline", 0.99, 7});
  ASSERT_TRUE(most.has_value()) << most.error().message;
  EXPECT_EQ(most->errors.n, 100 - 20);
}

TEST(InterferenceEvalTest, TheMeanPredictorByHand) {
  // Three victims measured beside one aggressor each (0.1, 0.2, 0.3: a row's only cell is never
  // hidden) and one measured beside two, both 0.5. Of 5 cells round(0.5 × 5) = 3 are drawn; when
  // a cell is hidden it is one of the 0.5s, and the kept mean is (0.1 + 0.2 + 0.3 + 0.5) / 4.
  SparseMatrix m;
  m.Set(m.AddRow("a"), m.AddCol("x"), 0.1);
  m.Set(m.AddRow("b"), m.AddCol("y"), 0.2);
  m.Set(m.AddRow("c"), m.AddCol("z"), 0.3);
  const int d = m.AddRow("d");
  m.Set(d, *m.FindCol("x"), 0.5);
  m.Set(d, *m.FindCol("y"), 0.5);
  int scored = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Expected<InterferenceEvalResult> r = EvaluateInterference(m, {"baseline", 0.5, seed});
    if (!r) {
      // Neither 0.5 was drawn: nothing left to score.
      EXPECT_NE(r.error().message.find("no cell could be hidden"), std::string::npos);
      continue;
    }
    ++scored;
    EXPECT_EQ(r->observed, 5);
    EXPECT_EQ(r->mean_errors.n, 1);
    EXPECT_NEAR(r->kept_mean, 0.275, 1e-12);
    EXPECT_NEAR(r->mean_errors.mae, 22.5, 1e-9);
    EXPECT_NEAR(r->mean_errors.p90_ae, 22.5, 1e-9);
    EXPECT_NEAR(r->mean_errors.rmse, 22.5, 1e-9);
    EXPECT_GE(r->errors.mae, 0);
    EXPECT_LE(r->errors.mae, 100);
  }
  EXPECT_GT(scored, 0);
}

TEST(InterferenceEvalTest, PredictionsAreClampedToTheUnitInterval) {
  // Two victims starve beside two aggressors (a 2 × 2 block of ones), every other pair is free
  // (0). The bias model mu + b_v + b_a puts the free 8 × 8 block below 0 (mu - |b_v| - |b_a|,
  // about 0.04 - 0.04 - 0.04 on the full matrix); clamped to 0 it is exact, so more than half
  // the hidden cells (the free block holds 64 % of them) score 0. Unclamped the median is 8.8 pp.
  SparseMatrix m;
  for (int v = 0; v < 10; ++v)
    for (int a = 0; a < 10; ++a)
      m.Set(m.AddRow(fmt::format("v{}", v)), m.AddCol(fmt::format("a{}", a)),
            v < 2 && a < 2 ? 1.0 : 0.0);
  Expected<InterferenceEvalResult> r = EvaluateInterference(m, {"baseline", 0.5, 2});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->errors.median_ae, 0.0);
  EXPECT_LE(r->errors.p90_ae, 100.0);
}

TEST(InterferenceEvalTest, BadOptionsAndMatricesAreErrors) {
  const SparseMatrix m = RankOne(4, 4, 1);
  for (const double missing : {0.0, 1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    Expected<InterferenceEvalResult> r = EvaluateInterference(m, {"svd", missing, 1});
    ASSERT_FALSE(r.has_value()) << missing;
    EXPECT_NE(r.error().message.find("--missing"), std::string::npos);
  }
  Expected<InterferenceEvalResult> unknown = EvaluateInterference(m, {"nope", 0.5, 1});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("unknown completion method 'nope'"), std::string::npos);

  EXPECT_FALSE(EvaluateInterference(SparseMatrix{}, {}).has_value());
  SparseMatrix keys_only;
  keys_only.AddRow("v");
  keys_only.AddCol("a");
  Expected<InterferenceEvalResult> empty = EvaluateInterference(keys_only, {});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("no observed cell"), std::string::npos);

  SparseMatrix out_of_range = RankOne(3, 3, 1);
  out_of_range.Set(1, 2, 1.5);
  Expected<InterferenceEvalResult> bad = EvaluateInterference(out_of_range, {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("(victim1, aggressor2) = 1.5"), std::string::npos);

  // One cell per victim: every row keeps its only cell, nothing is left to score.
  SparseMatrix diagonal;
  for (int i = 0; i < 4; ++i)
    diagonal.Set(diagonal.AddRow(fmt::format("v{}", i)), diagonal.AddCol(fmt::format("a{}", i)),
                 0.1 * i);
  Expected<InterferenceEvalResult> none = EvaluateInterference(diagonal, {"svd", 0.9, 1});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("no cell could be hidden"), std::string::npos);
}

TEST(InterferenceEvalTest, MedianOverSeedsTakesEachFieldsMedian) {
  std::vector<InterferenceEvalResult> runs(3);
  const double mae[] = {1, 5, 3}, p90[] = {9, 2, 4};
  const int n[] = {10, 30, 20};
  for (int i = 0; i < 3; ++i) {
    runs[i].method = "svd";
    runs[i].missing = 0.25;
    runs[i].seed = static_cast<uint64_t>(i + 1);
    runs[i].observed = 2 * n[i];
    runs[i].errors = {n[i], mae[i], 0, p90[i], 0};
    runs[i].mean_errors = {n[i], 10 * mae[i], 0, 10 * p90[i], 0};
  }
  const InterferenceEvalResult median = MedianOverSeeds(runs);
  EXPECT_EQ(median.method, "svd");
  EXPECT_EQ(median.missing, 0.25);
  EXPECT_EQ(median.observed, 40);
  EXPECT_EQ(median.errors.n, 20);
  EXPECT_EQ(median.errors.mae, 3);
  EXPECT_EQ(median.errors.p90_ae, 4);
  EXPECT_EQ(median.mean_errors.mae, 30);
  EXPECT_EQ(median.mean_errors.p90_ae, 40);
  // An even count averages the middle two.
  runs.pop_back();
  EXPECT_EQ(MedianOverSeeds(runs).errors.mae, 3);
  EXPECT_EQ(MedianOverSeeds({}).errors.n, 0);
}

}  // namespace
}  // namespace tessera::predict
