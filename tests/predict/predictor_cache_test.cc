// PredictorCache: a Create with inputs equal to an earlier one returns a copy of that predictor —
// the same predictions and σ as a fresh Create — and never one a caller has changed since.
#include "predict/predictor_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace tessera::predict {
namespace {

// 4 apps × 3 configurations, 9 of 12 cells measured (twice each, so they carry a spread): enough
// for `features`-free completion to predict the other three.
ProfileMatrix Profile(double bump = 0) {
  ProfileMatrix p;
  const char* apps[] = {"a", "b", "c", "d"};
  const char* configs[] = {"V100-32GB/whole/100", "A30-24GB/1g.6gb/100", "A30-24GB/4g.24gb/100"};
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) {
      if ((r + c) % 4 == 3) continue;  // (0,3)… leaves (1,2), (2,1), (3,0) to predict
      const int row = p.AddRow(apps[r]), col = p.AddCol(configs[c]);
      const double qps = 100.0 * (r + 1) / (c + 1) + bump;
      p.Observe(row, col, qps * 0.98);
      p.Observe(row, col, qps * 1.02);
    }
  }
  return p;
}

bool SameBits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

// Every cell's prediction and σ, bit for bit.
void ExpectSamePredictions(const Predictor& a, const Predictor& b) {
  ASSERT_EQ(a.num_apps(), b.num_apps());
  ASSERT_EQ(a.num_configs(), b.num_configs());
  for (int r = 0; r < a.num_apps(); ++r) {
    for (int c = 0; c < a.num_configs(); ++c) {
      EXPECT_TRUE(SameBits(a.IsolatedAt(r, c), b.IsolatedAt(r, c))) << r << "," << c;
      EXPECT_TRUE(SameBits(a.SigmaAt(r, c), b.SigmaAt(r, c))) << r << "," << c;
    }
  }
}

TEST(SparseMatrixEquality, ComparesKeysCountsMeansAndSpreadBitForBit) {
  EXPECT_TRUE(Profile() == Profile());
  EXPECT_FALSE(Profile() == Profile(1e-9));  // 1e-9 QPS more in every cell
  ProfileMatrix once = Profile(), twice = Profile();
  once.Observe(0, 0, 98.0);  // the same cell seen a third time: count and spread differ
  EXPECT_FALSE(once == twice);
  ProfileMatrix reordered;  // the same cells, columns added in another order
  reordered.AddCol("A30-24GB/1g.6gb/100");
  reordered.AddRow("a");
  reordered.AddCol("V100-32GB/whole/100");
  ProfileMatrix ordered;
  ordered.AddCol("V100-32GB/whole/100");
  ordered.AddRow("a");
  ordered.AddCol("A30-24GB/1g.6gb/100");
  EXPECT_FALSE(reordered == ordered);
  ProfileMatrix empty_a, empty_b;  // missing cells (NaN means) compare equal
  empty_a.AddRow("x");
  empty_a.AddCol("y");
  empty_b.AddRow("x");
  empty_b.AddCol("y");
  EXPECT_TRUE(empty_a == empty_b);
}

TEST(PredictorCacheTest, EqualInputsGetACopyOfTheFirstCompletion) {
  PredictorOptions o;
  o.method = "svd";
  PredictorCache cache;
  Expected<Predictor> first = cache.Create(Profile(), {}, o);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  Expected<Predictor> second = cache.Create(Profile(), {}, o);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.hits(), 1);
  Expected<Predictor> fresh = Predictor::Create(Profile(), {}, o);
  ASSERT_TRUE(fresh.has_value());
  ExpectSamePredictions(*second, *fresh);
  ExpectSamePredictions(*first, *fresh);
}

TEST(PredictorCacheTest, DifferentSamplesOrOptionsAreCompletedAnew) {
  PredictorOptions svd;
  svd.method = "svd";
  PredictorOptions baseline;
  baseline.method = "baseline";
  PredictorCache cache;
  ASSERT_TRUE(cache.Create(Profile(), {}, svd).has_value());
  ASSERT_TRUE(cache.Create(Profile(0.5), {}, svd).has_value());
  ASSERT_TRUE(cache.Create(Profile(), {}, baseline).has_value());
  FeatureTable features;
  ASSERT_TRUE(features.Set("a", {{"batch", 1.0}}).has_value());
  ASSERT_TRUE(cache.Create(Profile(), {}, svd, features).has_value());
  InterferenceMatrices interference;
  ASSERT_TRUE(interference.Observe("mps", "a", "b", 0.2).has_value());
  ASSERT_TRUE(cache.Create(Profile(), interference, svd).has_value());
  EXPECT_EQ(cache.misses(), 5);
  EXPECT_EQ(cache.hits(), 0);
}

TEST(PredictorCacheTest, WhatACallerDoesToItsCopyNeverReachesTheNext) {
  PredictorOptions o;
  o.method = "svd";
  PredictorCache cache;
  Expected<Predictor> first = cache.Create(Profile(), {}, o);
  ASSERT_TRUE(first.has_value());
  const double before = first->IsolatedAt(1, 2);
  // The first run learns: a measurement far from the prediction, refitted at once.
  ASSERT_TRUE(first->Observe("b", "A30-24GB/4g.24gb/100", 5.0).has_value());
  ASSERT_NE(first->IsolatedAt(1, 2), before);
  Expected<Predictor> second = cache.Create(Profile(), {}, o);
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(SameBits(second->IsolatedAt(1, 2), before));
  EXPECT_FALSE(second->IsObserved(1, 2));
  EXPECT_EQ(cache.hits(), 1);
}

TEST(PredictorCacheTest, KeepsAtMostItsCapacityAndNeverAFailure) {
  PredictorOptions o;
  o.method = "svd";
  PredictorCache one(1);
  ASSERT_TRUE(one.Create(Profile(), {}, o).has_value());
  ASSERT_TRUE(one.Create(Profile(0.5), {}, o).has_value());  // drops Profile()
  ASSERT_TRUE(one.Create(Profile(), {}, o).has_value());
  EXPECT_EQ(one.misses(), 3);
  EXPECT_EQ(one.hits(), 0);

  ProfileMatrix bad = Profile();
  bad.Set(0, 0, -1.0);  // not a throughput: Create refuses it
  PredictorCache cache;
  EXPECT_FALSE(cache.Create(bad, {}, o).has_value());
  EXPECT_FALSE(cache.Create(bad, {}, o).has_value());
  EXPECT_EQ(cache.misses(), 2);
}

}  // namespace
}  // namespace tessera::predict
