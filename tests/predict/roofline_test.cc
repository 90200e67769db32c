#include "predict/roofline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "predict/config_key.h"
#include "predict/matrix.h"

namespace tessera::predict {
namespace {

TEST(ComputeShareTest, SlicesTimesMpsPerGpuModel) {
  const std::vector<ComputeShare> s = ComputeShares(
      {"A100-40GB/1g.5gb/100", "A100-40GB/7g.40gb/100", "A100-40GB/whole/50", "V100-32GB/whole/25",
       "A100-40GB/3g.20gb/0", "no-slashes", "A100-40GB/g.5gb/100"});
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[0].gpu, 0);
  EXPECT_DOUBLE_EQ(s[0].log_share, 0.0);            // 1 slice
  EXPECT_DOUBLE_EQ(s[1].log_share, std::log(7.0));  // 7 slices
  // "whole" = the GPU's largest MIG profile (7 slices), at 50 % MPS: 3.5 slices.
  EXPECT_EQ(s[2].gpu, 0);
  EXPECT_DOUBLE_EQ(s[2].log_share, std::log(3.5));
  // A GPU model with no MIG column: whole = 1, at 25 %.
  EXPECT_EQ(s[3].gpu, 1);
  EXPECT_DOUBLE_EQ(s[3].log_share, std::log(0.25));
  // MPS 0 %, no slashes, no slice count: not a share.
  for (size_t i = 4; i < 7; ++i) {
    EXPECT_EQ(s[i].gpu, -1) << i;
    EXPECT_TRUE(std::isnan(s[i].log_share)) << i;
  }
}

// One GPU with slices of 1, 2 and 4 compute units.
const std::vector<std::string> kColumns = {"G/1g.a/100", "G/2g.b/100", "G/4g.c/100"};

TEST(RooflineTest, OneCellAndTheKneeOfItsPeersGiveTheRow) {
  // Rows 0-2 measured everywhere, all with the knee at 2 units: x = b + min(log 2, l). Their
  // best knee is log 2 and, with slack 0.02, no other point of the grid (a knee d away from it
  // costs 2d²/3 > 3 · 0.02² for d ≥ one grid step, log 2 / 15): the interval is [log 2, log 2].
  // Row 3 has one cell, 30 on the 4-unit slice: level log 30 - log 2, so 15 on 1 unit and 30
  // on 2.
  Eigen::MatrixXd observed(4, 3);
  for (int r = 0; r < 3; ++r) {
    const double b = std::log(10.0 * (r + 1));
    observed.row(r) << b, b + std::log(2.0), b + std::log(2.0);
  }
  observed.row(3) << kMissing, kMissing, std::log(30.0);
  EncodedFeatures f;
  f.x.resize(4, 0);  // no features: the knee is the peers' mean
  f.columns = ComputeShares(kColumns);
  const Eigen::MatrixXd out = RooflineComplete(observed, f);
  EXPECT_NEAR(std::exp(out(3, 0)), 15.0, 1e-9);
  EXPECT_NEAR(std::exp(out(3, 1)), 30.0, 1e-9);
  EXPECT_NEAR(std::exp(out(3, 2)), 30.0, 1e-9);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(out(r, c), observed(r, c), 1e-9) << r << c;
}

TEST(RooflineTest, TheFeaturesSayWhetherARowIsFlatOrScales) {
  // Rows of kind "host" are flat (the knee at or below 1 unit), rows of kind "compute" scale with
  // the slice (the knee at or above 4). A new row of each kind with one cell: the compute one at
  // 5 on 1 unit is 10 and 20 on 2 and 4; the host one at 50 on 4 units is 50 everywhere.
  FeatureTable table;
  std::vector<std::string> rows;
  Eigen::MatrixXd observed(8, 3);
  for (int r = 0; r < 6; ++r) {
    const bool compute = r % 2 == 1;
    rows.push_back("app" + std::to_string(r));
    ASSERT_TRUE(table.Set(rows.back(), {{"kind", std::string(compute ? "compute" : "host")}}));
    const double b = std::log(3.0 + r);
    if (compute) {
      observed.row(r) << b, b + std::log(2.0), b + std::log(4.0);
    } else {
      observed.row(r) << b, b, b;
    }
  }
  rows.push_back("new-compute");
  ASSERT_TRUE(table.Set(rows.back(), {{"kind", std::string("compute")}}));
  observed.row(6) << std::log(5.0), kMissing, kMissing;
  rows.push_back("new-host");
  ASSERT_TRUE(table.Set(rows.back(), {{"kind", std::string("host")}}));
  observed.row(7) << kMissing, kMissing, std::log(50.0);
  const Eigen::MatrixXd out = RooflineComplete(observed, Encode(table, rows, kColumns));
  EXPECT_NEAR(std::exp(out(6, 1)), 10.0, 1e-6);
  EXPECT_NEAR(std::exp(out(6, 2)), 20.0, 1e-6);
  EXPECT_NEAR(std::exp(out(7, 0)), 50.0, 1e-6);
  EXPECT_NEAR(std::exp(out(7, 1)), 50.0, 1e-6);
}

TEST(RooflineTest, CellsWithoutAShareOrARowWithoutACellOnThatGpuStayNaN) {
  Eigen::MatrixXd observed(2, 3);
  observed << 1.0, 2.0, kMissing,  //
      kMissing, kMissing, kMissing;
  EncodedFeatures f;
  f.x.resize(2, 0);
  f.columns = ComputeShares({"G/1g.a/100", "G/2g.b/100", "not-a-key"});
  const Eigen::MatrixXd out = RooflineComplete(observed, f);
  EXPECT_FALSE(std::isnan(out(0, 0)));
  EXPECT_TRUE(std::isnan(out(0, 2)));  // no share
  EXPECT_TRUE(std::isnan(out(1, 0)));  // nothing measured on G
  // Without column shares nothing is predicted.
  EXPECT_TRUE(RooflineComplete(observed, EncodedFeatures{}).array().isNaN().all());
}

}  // namespace
}  // namespace tessera::predict
