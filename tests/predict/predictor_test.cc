#include "predict/predictor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <tuple>
#include <vector>

#include "predict/registry.h"

namespace tessera::predict {
namespace {

const std::string kSmall = "A100-40GB/1g.5gb/100";
const std::string kMedium = "A100-40GB/3g.20gb/100";
const std::string kLarge = "A100-40GB/7g.40gb/100";

// Two applications whose throughput doubles from each configuration to the next: in log space
// x = a_u + b_c exactly, b = (0, ln 2, ln 4).
ProfileMatrix Doubling() {
  ProfileMatrix m;
  const double a[] = {100, 50};
  const std::string apps[] = {"a/bs1", "b/bs1"};
  const std::string configs[] = {kSmall, kMedium, kLarge};
  for (int u = 0; u < 2; ++u) {
    for (int c = 0; c < 3; ++c) m.Observe(m.AddRow(apps[u]), m.AddCol(configs[c]), a[u] * (1 << c));
  }
  return m;
}

TEST(PredictorTest, ObservedCellsReadBackAndHandlesMatchStrings) {
  Expected<Predictor> p = Predictor::Create(Doubling());
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(p->num_apps(), 2);
  EXPECT_EQ(p->num_configs(), 3);
  const AppId b = *p->FindApp("b/bs1");
  const ConfigId large = *p->FindConfig(kLarge);
  EXPECT_TRUE(p->IsObserved(b, large));
  EXPECT_NEAR(p->IsolatedAt(b, large), 200.0, 1e-9);
  EXPECT_NEAR(*p->Isolated("b/bs1", kLarge), 200.0, 1e-9);
  EXPECT_FALSE(p->Isolated("unknown", kLarge).has_value());
  EXPECT_FALSE(p->Isolated("b/bs1", "H100-80GB/whole/100").has_value());
}

TEST(PredictorTest, ColdStartFromOneObservationFillsTheRow) {
  // Bias model on the doubling matrix: a new app seen at 300 QPS on the small configuration is
  // predicted at 300 * 2 = 600 and 300 * 4 = 1200 (up to the bias model's slight shrinkage).
  PredictorOptions options;
  options.method = "baseline";
  Expected<Predictor> p = Predictor::Create(Doubling(), {}, options);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->Observe("c/bs8", kSmall, 300).has_value());
  ASSERT_TRUE(p->FindApp("c/bs8").has_value());
  EXPECT_NEAR(*p->Isolated("c/bs8", kSmall), 300.0, 1e-9);
  EXPECT_NEAR(*p->Isolated("c/bs8", kMedium), 600.0, 0.03 * 600);
  EXPECT_NEAR(*p->Isolated("c/bs8", kLarge), 1200.0, 0.03 * 1200);
}

TEST(PredictorTest, EveryMethodGivesANewApplicationAFullRow) {
  for (const std::string method : {"svd", "imputer", "knn", "hybrid", "baseline"}) {
    PredictorOptions options;
    options.method = method;
    Expected<Predictor> p = Predictor::Create(Doubling(), {}, options);
    ASSERT_TRUE(p.has_value()) << method;
    ASSERT_TRUE(p->Observe("c/bs8", kSmall, 300).has_value());
    ASSERT_TRUE(p->Observe("c/bs8", kMedium, 600).has_value());
    const std::optional<double> large = p->Isolated("c/bs8", kLarge);
    ASSERT_TRUE(large.has_value()) << method;
    // Both neighbours double from medium to large, so every method should land near 1200.
    EXPECT_NEAR(*large, 1200.0, 0.1 * 1200) << method;
  }
}

TEST(PredictorTest, SupportMarksCellsNoMeasurementConnects) {
  // Two GPUs that share no application: a/b on the 40 GB profiles, x on the 80 GB ones.
  ProfileMatrix m = Doubling();
  const int x = m.AddRow("x/bs1");
  m.Observe(x, m.AddCol("A100-80GB/1g.10gb/100"), 20);
  m.Observe(x, m.AddCol("A100-80GB/7g.80gb/100"), 90);
  Expected<Predictor> p = Predictor::Create(std::move(m));
  ASSERT_TRUE(p.has_value()) << p.error().message;
  const ConfigId big80 = *p->FindConfig("A100-80GB/7g.80gb/100");
  EXPECT_TRUE(p->Supported(*p->FindApp("a/bs1"), *p->FindConfig(kLarge)));  // observed
  EXPECT_FALSE(p->Supported(*p->FindApp("a/bs1"), big80));                  // other GPU
  EXPECT_TRUE(p->Isolated("a/bs1", "A100-80GB/7g.80gb/100").has_value());   // still a value
  // A new app measured on one 40 GB profile is supported on the other 40 GB ones only.
  ASSERT_TRUE(p->Observe("c/bs8", kSmall, 300).has_value());
  EXPECT_TRUE(p->Supported(*p->FindApp("c/bs8"), *p->FindConfig(kLarge)));
  EXPECT_FALSE(p->Supported(*p->FindApp("c/bs8"), big80));
}

TEST(PredictorTest, RefitEveryBatchesRecompletion) {
  PredictorOptions options;
  options.method = "baseline";
  options.refit_every = 3;
  Expected<Predictor> p = Predictor::Create(Doubling(), {}, options);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->Observe("c/bs8", kSmall, 300).has_value());
  // Not refitted yet: the observation itself reads back, the rest of the new row does not.
  EXPECT_NEAR(*p->Isolated("c/bs8", kSmall), 300.0, 1e-9);
  EXPECT_FALSE(p->Isolated("c/bs8", kLarge).has_value());
  EXPECT_TRUE(std::isnan(p->IsolatedAt(*p->FindApp("c/bs8"), *p->FindConfig(kLarge))));
  ASSERT_TRUE(p->Observe("a/bs1", kSmall, 100).has_value());
  ASSERT_TRUE(p->Observe("b/bs1", kSmall, 50).has_value());  // third: refit
  EXPECT_TRUE(p->Isolated("c/bs8", kLarge).has_value());
  // Refit by hand also works.
  ASSERT_TRUE(p->Observe("d/bs1", "A100-40GB/2g.10gb/100", 70).has_value());
  ASSERT_TRUE(p->Refit().has_value());
  EXPECT_TRUE(p->Isolated("d/bs1", kLarge).has_value());
  EXPECT_TRUE(p->Isolated("a/bs1", "A100-40GB/2g.10gb/100").has_value());
}

TEST(PredictorTest, RejectsBadInput) {
  EXPECT_FALSE(Predictor::Create(Doubling(), {}, PredictorOptions{"magic"}).has_value());
  PredictorOptions zero;
  zero.refit_every = 0;
  EXPECT_FALSE(Predictor::Create(Doubling(), {}, zero).has_value());
  ProfileMatrix negative = Doubling();
  negative.Set(0, 0, -1.0);
  EXPECT_FALSE(Predictor::Create(negative).has_value());
  Expected<Predictor> p = Predictor::Create(Doubling());
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->Observe("a/bs1", kSmall, 0.0).has_value());
  EXPECT_FALSE(p->Observe("a/bs1", kSmall, NAN).has_value());
  EXPECT_FALSE(p->Observe("", kSmall, 10).has_value());
  EXPECT_FALSE(p->ObserveInterference("mps", "a", "b", -0.1).has_value());
}

TEST(PredictorTest, EmptyPredictorLearnsOnline) {
  Expected<Predictor> p = Predictor::Create(ProfileMatrix{});
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->Isolated("a", kSmall).has_value());
  ASSERT_TRUE(p->Observe("a", kSmall, 10).has_value());
  EXPECT_NEAR(*p->Isolated("a", kSmall), 10.0, 1e-9);
}

TEST(PredictorTest, InterferenceIsCompletedPerKind) {
  // Rank-one losses: victim sensitivity (0.2, 0.4, 0.6) times aggressor pressure (0.5, 1.0).
  // The unobserved pair (v3, a2) should be 0.6 * 1.0 = 0.6 on "mps"; "mig" is a separate matrix.
  InterferenceMatrices im;
  const double s[] = {0.2, 0.4, 0.6}, q[] = {0.5, 1.0};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      if (i == 2 && j == 1) continue;
      ASSERT_TRUE(
          im.Observe("mps", fmt::format("v{}", i + 1), fmt::format("a{}", j + 1), s[i] * q[j])
              .has_value());
    }
  }
  ASSERT_TRUE(im.Observe("mig", "v1", "a1", 0.0).has_value());
  PredictorOptions options;
  options.interference_method = "baseline";
  Expected<Predictor> p = Predictor::Create(Doubling(), std::move(im), options);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_NEAR(*p->Interference("v1", "a2", "mps"), 0.2, 1e-12);  // observed
  // The additive bias model gives 0.3 + (0.6 - 0.3)... worked: a2 - a1 differs by 0.1, 0.2 on
  // rows 1, 2 (mean 0.15), so v3 a2 ≈ 0.3 + 0.15 = 0.45; any CF method lands in [0.3, 0.6].
  const double predicted = *p->Interference("v3", "a2", "mps");
  EXPECT_GE(predicted, 0.3 - 0.02);
  EXPECT_LE(predicted, 0.6 + 0.02);
  EXPECT_NEAR(*p->Interference("v1", "a1", "mig"), 0.0, 1e-12);
  EXPECT_FALSE(p->Interference("v1", "a1", "timeslice").has_value());
  EXPECT_FALSE(p->Interference("v9", "a1", "mps").has_value());
  // Online: a new observation is visible at once and predictions stay fractions.
  ASSERT_TRUE(p->ObserveInterference("mps", "v3", "a2", 0.58).has_value());
  EXPECT_NEAR(*p->Interference("v3", "a2", "mps"), 0.58, 1e-12);
}

TEST(PredictorTest, InterferenceByHandleMatchesTheStringPath) {
  // Profile rows a/bs1, b/bs1; "mps" observes a<-b = 0.3 and b<-a = 0.1 (and nothing on the
  // diagonal). By handle: the observed means; an application with no interference row reads
  // NaN; the kind's prior is the mean of what was observed, (0.3 + 0.1) / 2 = 0.2.
  InterferenceMatrices im;
  ASSERT_TRUE(im.Observe("mps", "a/bs1", "b/bs1", 0.3).has_value());
  ASSERT_TRUE(im.Observe("mps", "b/bs1", "a/bs1", 0.1).has_value());
  PredictorOptions options;
  options.interference_method = "baseline";
  Expected<Predictor> p = Predictor::Create(Doubling(), std::move(im), options);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  const int mps = *p->FindKind("mps");
  EXPECT_FALSE(p->FindKind("mig").has_value());
  const AppId a = *p->FindApp("a/bs1"), b = *p->FindApp("b/bs1");
  EXPECT_NEAR(p->InterferenceAt(mps, a, b), 0.3, 1e-12);
  EXPECT_NEAR(p->InterferenceAt(mps, b, a), 0.1, 1e-12);
  EXPECT_NEAR(p->InterferenceAt(mps, a, b), *p->Interference("a/bs1", "b/bs1", "mps"), 1e-12);
  EXPECT_NEAR(p->InterferenceMean(mps), 0.2, 1e-12);
  // A brand-new application (added by an observation, after its refit) has no interference row.
  ASSERT_TRUE(p->Observe("c/bs1", kSmall, 10).has_value());
  const AppId c = *p->FindApp("c/bs1");
  EXPECT_TRUE(std::isnan(p->InterferenceAt(mps, c, a)));
  EXPECT_TRUE(std::isnan(p->InterferenceAt(mps, a, c)));
}

TEST(PredictorFeaturesTest, DeclaringANewApplicationGivesItARowAndAnInterval) {
  ProfileMatrix profile;
  const int c0 = profile.AddCol("gpu/a/100"), c1 = profile.AddCol("gpu/b/100");
  // Throughput 100·batch on a, 150·batch on b, for batches 1, 2, 4, 8.
  FeatureTable features;
  for (int b : {1, 2, 4, 8}) {
    const std::string app = "m/bs" + std::to_string(b);
    const int r = profile.AddRow(app);
    profile.Observe(r, c0, 100.0 * b);
    profile.Observe(r, c1, 150.0 * b);
    ASSERT_TRUE(features.Set(app, {{"batch", static_cast<double>(b)}}).has_value());
  }
  Expected<Predictor> p = Predictor::Create(profile, {}, {}, features);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(p->options().method, "features");
  // A measured cell: one run, the floor σ; its interval is q·exp(±z90·σ).
  const Interval measured = p->IntervalAt(0, c0);
  EXPECT_NEAR(measured.low, 100 * std::exp(-p->uncertainty().z90 * 0.01), 1e-9);
  EXPECT_NEAR(measured.high, 100 * std::exp(p->uncertainty().z90 * 0.01), 1e-9);
  // A new application: a row, unchanged twice, a kind conflict refused with nothing changed.
  Expected<bool> added = p->SetFeatures("m/bs3", {{"batch", 3.0}});
  ASSERT_TRUE(added.has_value());
  EXPECT_TRUE(*added);
  EXPECT_FALSE(*p->SetFeatures("m/bs3", {{"batch", 3.0}}));
  EXPECT_FALSE(p->SetFeatures("m/bs5", {{"batch", std::string("five")}}).has_value());
  EXPECT_FALSE(p->FindApp("m/bs5").has_value());
  const AppId app = *p->FindApp("m/bs3");
  EXPECT_TRUE(std::isnan(p->IsolatedAt(app, c0)));  // until the refit
  ASSERT_TRUE(p->Refit().has_value());
  // From its features alone: between batch 2 and batch 4 on both configurations, b above a.
  EXPECT_GT(p->IsolatedAt(app, c0), 200);
  EXPECT_LT(p->IsolatedAt(app, c0), 400);
  EXPECT_GT(p->IsolatedAt(app, c1), p->IsolatedAt(app, c0));
  const Interval completed = p->IntervalAt(app, c0);
  EXPECT_LT(completed.low, p->IsolatedAt(app, c0));
  EXPECT_GT(completed.high, p->IsolatedAt(app, c0));
  EXPECT_GT(p->SigmaAt(app, c0), 0.01);  // less sure than a measured cell
}

// Twelve batch sizes of one model on four A100 slices, throughput 10·b·slices^0.8, with every
// fourth cell (by r + c) unmeasured: enough held-out cells for a real calibration.
struct Batches {
  ProfileMatrix profile;
  FeatureTable features;
};
Batches TwelveBatches() {
  Batches out;
  const std::pair<std::string, int> configs[] = {
      {kSmall, 1}, {"A100-40GB/2g.10gb/100", 2}, {kMedium, 3}, {kLarge, 7}};
  for (int b = 1; b <= 12; ++b) {
    const std::string app = "m/bs" + std::to_string(b);
    const int r = out.profile.AddRow(app);
    EXPECT_TRUE(out.features.Set(app, {{"batch", static_cast<double>(b)}}).has_value());
    for (int c = 0; c < 4; ++c) {
      const int col = out.profile.AddCol(configs[c].first);
      if ((r + c) % 4 == 0) continue;
      out.profile.Observe(r, col, 10.0 * b * std::pow(configs[c].second, 0.8));
    }
  }
  return out;
}

// What calibrating eagerly on `calibrate_on` gives every cell of `now` (log values) with the
// predictor's default method: the σ a lazy predictor must read back.
struct Eager {
  UncertaintyModel model;
  Eigen::MatrixXd sigma;
};
Eager EagerSigma(const ProfileMatrix& calibrate_on, const ProfileMatrix& now,
                 const FeatureTable& features) {
  std::unique_ptr<Completer> method = std::move(*MakeCompleter("features"));
  const Eigen::MatrixXd at_due = calibrate_on.ToDense().array().log();
  Expected<UncertaintyModel> model = Calibrate(
      *method, at_due, Encode(features, calibrate_on.row_keys(), calibrate_on.col_keys()));
  EXPECT_TRUE(model.has_value());
  const Eigen::MatrixXd log_now = now.ToDense().array().log();
  Expected<Eigen::MatrixXd> completed =
      method->CompleteWith(log_now, Encode(features, now.row_keys(), now.col_keys()));
  EXPECT_TRUE(completed.has_value());
  return {*model, CellSigmas(*model, log_now, *completed)};
}

TEST(PredictorSigmaTest, CalibratesOnTheFirstReadAndGivesWhatEagerCalibrationGave) {
  const Batches data = TwelveBatches();
  Expected<Predictor> p = Predictor::Create(data.profile, {}, {}, data.features);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  EXPECT_EQ(p->calibrations(), 0);  // nobody has read σ yet
  const Eager eager = EagerSigma(data.profile, data.profile, data.features);
  ASSERT_GT(eager.model.held_cells, 0);  // a real calibration, not the defaults
  int completed = 0;
  for (int r = 0; r < p->num_apps(); ++r) {
    for (int c = 0; c < p->num_configs(); ++c) {
      if (p->IsObserved(r, c)) {
        EXPECT_EQ(p->SigmaAt(r, c), 0.01) << r << "," << c;  // one run: the floor
      } else {
        EXPECT_EQ(p->SigmaAt(r, c), eager.sigma(r, c)) << r << "," << c;
        ++completed;
      }
    }
  }
  EXPECT_EQ(completed, 12);
  EXPECT_EQ(p->calibrations(), 1);  // once, however many reads
  EXPECT_EQ(p->uncertainty().scale, eager.model.scale);
  EXPECT_EQ(p->uncertainty().z90, eager.model.z90);
  const Interval i = p->IntervalAt(0, 0);  // (0, 0) is unmeasured
  EXPECT_DOUBLE_EQ(i.high, p->IsolatedAt(0, 0) * std::exp(eager.model.z90 * eager.sigma(0, 0)));
  EXPECT_EQ(p->calibrations(), 1);
}

TEST(PredictorSigmaTest, ReadsAfterRefitsUseTheMatrixOfTheLastCalibrationDue) {
  const Batches data = TwelveBatches();
  ProfileMatrix later = data.profile;
  // Calibration due at Create only: observations after it re-complete, but σ reads the model
  // calibrated on the Create matrix, however late it is first read.
  Expected<Predictor> p =
      Predictor::Create(data.profile, {}, {.calibrate_every = 0}, data.features);
  ASSERT_TRUE(p.has_value());
  // Two cells that were completed: (0, 0) and (3, 1).
  const std::string two_slices = "A100-40GB/2g.10gb/100";
  ASSERT_TRUE(p->Observe("m/bs1", kSmall, 12).has_value());
  later.Observe(*later.FindRow("m/bs1"), *later.FindCol(kSmall), 12);
  ASSERT_TRUE(p->Observe("m/bs4", two_slices, 70).has_value());
  later.Observe(*later.FindRow("m/bs4"), *later.FindCol(two_slices), 70);
  const Eager eager = EagerSigma(data.profile, later, data.features);
  for (int r = 0; r < p->num_apps(); ++r) {
    for (int c = 0; c < p->num_configs(); ++c) {
      if (!p->IsObserved(r, c)) {
        EXPECT_EQ(p->SigmaAt(r, c), eager.sigma(r, c)) << r << "," << c;
      }
    }
  }
  EXPECT_EQ(p->calibrations(), 1);

  // calibrate_every = 2: due at Create and at the second refit; the read after both runs one
  // calibration, on the second refit's matrix (the first one was never needed).
  Expected<Predictor> q =
      Predictor::Create(data.profile, {}, {.calibrate_every = 2}, data.features);
  ASSERT_TRUE(q.has_value());
  ASSERT_TRUE(q->Observe("m/bs1", kSmall, 12).has_value());
  ASSERT_TRUE(q->Observe("m/bs4", two_slices, 70).has_value());
  const Eager at_second = EagerSigma(later, later, data.features);
  EXPECT_EQ(q->uncertainty().scale, at_second.model.scale);
  EXPECT_EQ(q->uncertainty().z90, at_second.model.z90);
  EXPECT_EQ(q->calibrations(), 1);
}

TEST(PredictorSigmaTest, ACellObservedSinceTheRefitKeepsItsMeasuredSigma) {
  const Batches data = TwelveBatches();
  PredictorOptions options;
  options.refit_every = 5;  // the observations below do not refit
  Expected<Predictor> p = Predictor::Create(data.profile, {}, options, data.features);
  ASSERT_TRUE(p.has_value());
  const AppId app = *p->FindApp("m/bs1");
  const ConfigId small = *p->FindConfig(kSmall);  // (0, 0): completed at Create
  ASSERT_FALSE(p->IsObserved(app, small));
  ASSERT_TRUE(p->Observe("m/bs1", kSmall, 10).has_value());
  ASSERT_TRUE(p->Observe("m/bs1", kSmall, 12).has_value());
  ASSERT_TRUE(p->Observe("new/bs1", kSmall, 5).has_value());
  const Eager eager = EagerSigma(data.profile, data.profile, data.features);
  // Two runs, 10 and 12: sd √2 over the mean 11, × √(1 + 1/2).
  EXPECT_NEAR(p->SigmaAt(app, small), std::sqrt(2.0) / 11 * std::sqrt(1.5), 1e-12);
  EXPECT_EQ(p->SigmaAt(app, *p->FindConfig(kLarge)), eager.sigma(0, 3));  // still completed
  // A row added since the refit: its measured cell the floor, the rest NaN until the next.
  const AppId added = *p->FindApp("new/bs1");
  EXPECT_EQ(p->SigmaAt(added, small), 0.01);
  EXPECT_TRUE(std::isnan(p->SigmaAt(added, *p->FindConfig(kLarge))));
}

TEST(PredictorSigmaTest, ConcurrentFirstReadsCalibrateOnceAndAgree) {
  const Batches data = TwelveBatches();
  Expected<Predictor> p = Predictor::Create(data.profile, {}, {}, data.features);
  ASSERT_TRUE(p.has_value());
  const Predictor& shared = *p;
  std::vector<std::vector<double>> seen(4);
  std::vector<std::thread> readers;
  for (auto& out : seen) {
    readers.emplace_back([&shared, &out] {
      for (int r = 0; r < shared.num_apps(); ++r) {
        for (int c = 0; c < shared.num_configs(); ++c) out.push_back(shared.SigmaAt(r, c));
      }
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(shared.calibrations(), 1);
  for (const auto& out : seen) EXPECT_EQ(out, seen[0]);
}

TEST(PredictorTest, InterferenceCompletionFollowsInterferenceObservationsOnly) {
  // The bias model of "mps": a profile observation refits, yet the completed pair is the same
  // number; an interference observation that raises v3's row raises it.
  InterferenceMatrices im;
  for (const auto& [v, a, f] : {std::tuple{"v1", "a1", 0.1},
                                {"v1", "a2", 0.2},
                                {"v2", "a1", 0.2},
                                {"v2", "a2", 0.4},
                                {"v3", "a1", 0.3}}) {
    ASSERT_TRUE(im.Observe("mps", v, a, f).has_value());
  }
  PredictorOptions options;
  options.method = "baseline";
  options.interference_method = "baseline";
  Expected<Predictor> p = Predictor::Create(Doubling(), std::move(im), options);
  ASSERT_TRUE(p.has_value());
  const double before = *p->Interference("v3", "a2", "mps");
  ASSERT_TRUE(p->Observe("a/bs1", kSmall, 101).has_value());
  EXPECT_EQ(*p->Interference("v3", "a2", "mps"), before);
  ASSERT_TRUE(p->ObserveInterference("mps", "v3", "a1", 0.9).has_value());
  EXPECT_GT(*p->Interference("v3", "a2", "mps"), before);
}

}  // namespace
}  // namespace tessera::predict
