#include "predict/feature_kernel.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "predict/baseline.h"
#include "predict/matrix.h"
#include "predict/uncertainty.h"

namespace tessera::predict {
namespace {

// A roofline in log space: application b (batch 2^b) on configuration c of speed 2^c runs
// min(batch, 4 · 2^c) samples/s — small batches do not gain from a bigger slice, large ones
// gain 2x per step. Its row's shape depends on the batch, which one cell cannot tell; the
// feature `batch` can.
struct Roofline {
  Eigen::MatrixXd truth;
  FeatureTable features;
  std::vector<std::string> rows;
};
Roofline MakeRoofline(int apps, int configs) {
  Roofline r;
  r.truth.resize(apps, configs);
  for (int a = 0; a < apps; ++a) {
    const double batch = std::pow(2.0, a % 10);
    r.rows.push_back(fmt::format("app{}", a));
    EXPECT_TRUE(r.features.Set(r.rows.back(), {{"batch", batch}}).has_value());
    for (int c = 0; c < configs; ++c)
      r.truth(a, c) = std::log(std::min(batch, 4 * std::pow(2.0, c)) * (1 + 0.1 * (a / 10)));
  }
  return r;
}

TEST(FeatureKernelTest, OneCellPerNewRowIsEnoughWhenTheFeaturesTellTheShape) {
  const Roofline r = MakeRoofline(30, 5);
  // Rows 0-19 fully measured; rows 20-29 (the same ten batch sizes, 20% faster) keep only
  // their first configuration: the cold start.
  Eigen::MatrixXd observed = r.truth;
  for (int a = 20; a < 30; ++a)
    for (int c = 1; c < 5; ++c) observed(a, c) = kMissing;
  const EncodedFeatures f = Encode(r.features, r.rows);
  Expected<Eigen::MatrixXd> with = FeatureKernelCompleter().CompleteWith(observed, f);
  ASSERT_TRUE(with.has_value()) << with.error().message;
  Expected<Eigen::MatrixXd> bias = BaselineCompleter().Complete(observed);
  double err = 0, bias_err = 0;
  for (int a = 20; a < 30; ++a) {
    for (int c = 1; c < 5; ++c) {
      err = std::max(err, std::abs((*with)(a, c) - r.truth(a, c)));
      bias_err = std::max(bias_err, std::abs((*bias)(a, c) - r.truth(a, c)));
    }
  }
  // Same batch, same shape: the level from the one cell, the shape from the neighbours (within
  // 10% in log units: the kernel also weighs the next batch sizes a little); the bias model,
  // which gives every row the average shape, is off by more than a factor 2 somewhere.
  EXPECT_LT(err, 0.1);
  EXPECT_GT(bias_err, std::log(2.0));
  // Observed cells are returned unchanged.
  EXPECT_EQ((*with)(3, 2), observed(3, 2));
}

TEST(FeatureKernelTest, RowsWithoutFeaturesAndCallsWithoutFeaturesStillComplete) {
  const Roofline r = MakeRoofline(20, 4);
  Eigen::MatrixXd observed = r.truth;
  observed(5, 1) = kMissing;
  observed(15, 2) = kMissing;
  FeatureTable partial = r.features;
  ASSERT_TRUE(partial.Set("app5", {}).has_value());  // declares nothing
  const EncodedFeatures f = Encode(partial, r.rows);
  Expected<Eigen::MatrixXd> done = FeatureKernelCompleter().CompleteWith(observed, f);
  ASSERT_TRUE(done.has_value());
  EXPECT_TRUE(std::isfinite((*done)(5, 1)));
  EXPECT_TRUE(std::isfinite((*done)(15, 2)));
  Expected<Eigen::MatrixXd> plain = FeatureKernelCompleter().Complete(observed);
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(std::isfinite((*plain)(5, 1)));
  // Nothing observed at all: nothing to learn from.
  EXPECT_FALSE(FeatureKernelCompleter()
                   .CompleteWith(Eigen::MatrixXd::Constant(3, 3, kMissing), EncodedFeatures{})
                   .has_value());
}

TEST(FeatureKernelTest, TheRooflineCarriesABatchSizeNoNeighbourHas) {
  // Measured: batches 1, 4, 16, 64, 256 (rows 0, 2, 4, 6, 8 of the roofline), twice; new: batches
  // 2, 8, 32, 128 with one cell each, on the largest slice. Their neighbours' shapes bend at other
  // points, so the kernel alone must average two wrong knees; the columns' keys say the slices
  // have 1, 2, 4, 8 and 16 compute units (the truth's 2^c), and the roofline's knee is linear in
  // log batch, which its regression recovers.
  const Roofline r = MakeRoofline(20, 5);
  Eigen::MatrixXd observed = r.truth;
  std::vector<int> fresh;
  for (int a = 0; a < 20; ++a) {
    if (a % 2 == 0) continue;
    if (a < 10 && a != 9) {
      fresh.push_back(a);
      for (int c = 0; c < 4; ++c) observed(a, c) = kMissing;
    } else {
      observed.row(a).setConstant(kMissing);  // not in this matrix at all
    }
  }
  const std::vector<std::string> keys = {"G/1g.a/100", "G/2g.b/100", "G/4g.c/100", "G/8g.d/100",
                                         "G/16g.e/100"};
  const auto worst = [&](const EncodedFeatures& f) {
    Expected<Eigen::MatrixXd> done = FeatureKernelCompleter().CompleteWith(observed, f);
    EXPECT_TRUE(done.has_value());
    double err = 0;
    for (int a : fresh)
      for (int c = 0; c < 4; ++c) err = std::max(err, std::abs((*done)(a, c) - r.truth(a, c)));
    return err;
  };
  const double kernel_only = worst(Encode(r.features, r.rows));
  const double with_roofline = worst(Encode(r.features, r.rows, keys));
  EXPECT_GT(kernel_only, 0.2);
  EXPECT_LT(with_roofline, 0.05);
}

TEST(FeatureKernelTest, AnApplicationWithNoMeasurementIsPredictedFromItsFeatures) {
  const Roofline r = MakeRoofline(20, 4);
  Eigen::MatrixXd observed = r.truth;
  observed.row(13).setConstant(kMissing);  // batch 8, never measured
  Expected<Eigen::MatrixXd> done =
      FeatureKernelCompleter().CompleteWith(observed, Encode(r.features, r.rows));
  ASSERT_TRUE(done.has_value());
  // Its twin row 3 (batch 8, 10% slower) is measured: the shape is its twins', the level the
  // neighbours' average, so within 25% (log units) of the truth everywhere, where the bias
  // model can only give it the mean row.
  for (int c = 0; c < 4; ++c) EXPECT_NEAR((*done)(13, c), r.truth(13, c), 0.25) << c;
}

TEST(UncertaintyTest, ZScalesLikeAGaussianAndMeasuredCellsUseTheirRuns) {
  UncertaintyModel m;
  m.z90 = 2.0;
  EXPECT_NEAR(m.Z(0.9), 2.0, 1e-6);
  // Φ⁻¹(0.975) / Φ⁻¹(0.95) = 1.959964 / 1.644854.
  EXPECT_NEAR(m.Z(0.95), 2.0 * 1.959964 / 1.644854, 1e-4);
  // Ten runs with sd 5 around 100: 0.05 × √1.1 = 0.05244; one run: the floor.
  EXPECT_NEAR(m.Measured(100, 25, 10), 0.05 * std::sqrt(1.1), 1e-9);
  EXPECT_EQ(m.Measured(100, 0, 1), m.measured_floor);
  m.scale = {0.4, 0.2, 0.1, 0.05};
  m.disagreement = 1.0;
  EXPECT_NEAR(m.Completed(1, 0.5), 0.6, 1e-12);
  EXPECT_NEAR(m.Completed(9, 0.0), 0.05, 1e-12);
}

TEST(UncertaintyTest, CalibratedIntervalsCoverHiddenCellsOfANoisyMatrix) {
  // Bias model truth plus Gaussian noise of σ = 0.2: a calibrated 90% interval of the bias
  // model's completion should cover about 90% of fresh hidden cells.
  Rng rng(3);
  const int m = 60, n = 8;
  Eigen::MatrixXd truth(m, n);
  Eigen::VectorXd a(m), b(n);
  for (int i = 0; i < m; ++i) a(i) = rng.Uniform(0, 3);
  for (int j = 0; j < n; ++j) b(j) = rng.Uniform(0, 2);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) truth(i, j) = a(i) + b(j) + rng.Normal(0, 0.2);
  Eigen::MatrixXd observed = truth;
  std::vector<std::pair<int, int>> hidden;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      if (j > 0 && rng.Uniform(0, 1) < 0.5) {
        observed(i, j) = kMissing;
        hidden.emplace_back(i, j);
      }
    }
  }
  const BaselineCompleter method;
  Expected<UncertaintyModel> model = Calibrate(method, observed, EncodedFeatures{});
  ASSERT_TRUE(model.has_value());
  EXPECT_GT(model->held_cells, 20);
  const Eigen::MatrixXd completed = *method.Complete(observed);
  const Eigen::MatrixXd sigma = CellSigmas(*model, observed, completed);
  int covered = 0;
  for (const auto& [i, j] : hidden)
    covered += std::abs(completed(i, j) - truth(i, j)) <= model->z90 * sigma(i, j);
  const double share = static_cast<double>(covered) / static_cast<double>(hidden.size());
  EXPECT_GT(share, 0.82);
  EXPECT_LT(share, 0.97);
  EXPECT_EQ(sigma(0, 0), model->measured_floor);  // an observed cell
}

}  // namespace
}  // namespace tessera::predict
