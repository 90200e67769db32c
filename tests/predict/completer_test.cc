// Behaviour of every completion method: the contract (observed cells unchanged, every cell
// finite, fallbacks for empty rows/columns), structure each method must recover, and small
// cases worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "predict/baseline.h"
#include "predict/hybrid.h"
#include "predict/imputer.h"
#include "predict/matrix.h"
#include "predict/neighbours.h"
#include "predict/registry.h"
#include "predict/svd.h"

namespace tessera::predict {
namespace {

const double kNaN = kMissing;

TEST(RegistryTest, KnowsEveryMethodByName) {
  for (const std::string name : {"svd", "imputer", "knn", "hybrid", "baseline", "features"}) {
    Expected<std::unique_ptr<Completer>> m = MakeCompleter(name);
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_EQ((*m)->name(), name);
  }
  EXPECT_EQ(CompleterNames().size(), 6u);
  Expected<std::unique_ptr<Completer>> bad = MakeCompleter("magic");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("svd"), std::string::npos);  // lists the known names
}

class EveryMethodTest : public testing::TestWithParam<std::string> {};

TEST_P(EveryMethodTest, KeepsObservedCellsAndFillsEverything) {
  Rng rng(11);
  Eigen::MatrixXd x(12, 7);
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      x(r, c) = rng.Uniform() < 0.4 ? kNaN : rng.Uniform(1, 5);
    }
  }
  x.row(3).setConstant(kNaN);  // an application never measured
  x.col(5).setConstant(kNaN);  // a configuration never measured
  x(0, 0) = 2.0;
  std::unique_ptr<Completer> method = std::move(*MakeCompleter(GetParam()));
  Expected<Eigen::MatrixXd> out = method->Complete(x);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->rows(), x.rows());
  ASSERT_EQ(out->cols(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    for (Eigen::Index c = 0; c < x.cols(); ++c) {
      EXPECT_TRUE(std::isfinite((*out)(r, c))) << r << "," << c;
      if (!std::isnan(x(r, c))) {
        EXPECT_DOUBLE_EQ((*out)(r, c), x(r, c));
      }
    }
  }
}

TEST_P(EveryMethodTest, AllMissingIsAnError) {
  std::unique_ptr<Completer> method = std::move(*MakeCompleter(GetParam()));
  EXPECT_FALSE(method->Complete(Eigen::MatrixXd::Constant(3, 3, kNaN)).has_value());
}

TEST_P(EveryMethodTest, SingleCellMatrixWorks) {
  std::unique_ptr<Completer> method = std::move(*MakeCompleter(GetParam()));
  Eigen::MatrixXd x(2, 1);
  x << 3.0, kNaN;
  Expected<Eigen::MatrixXd> out = method->Complete(x);
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(std::isfinite((*out)(1, 0)));
}

INSTANTIATE_TEST_SUITE_P(Methods, EveryMethodTest,
                         testing::Values("svd", "imputer", "knn", "hybrid", "baseline"));

TEST(BaselineTest, RecoversAnAdditiveMatrix) {
  // x_uc = a_u + b_c with a = (0, 1, 3), b = (0, 2, 5): the missing (2, 2) is 3 + 5 = 8 and
  // (1, 0) is 1 + 0 = 1; the bias model is exact on such data, up to its small shrinkage.
  Eigen::MatrixXd x(3, 3);
  x << 0, 2, 5,    //
      kNaN, 3, 6,  //
      3, 5, kNaN;
  Expected<Eigen::MatrixXd> out = BaselineCompleter().Complete(x);
  ASSERT_TRUE(out.has_value());
  EXPECT_NEAR((*out)(2, 2), 8.0, 0.01);
  EXPECT_NEAR((*out)(1, 0), 1.0, 0.01);
}

// Log-throughput-like data: biases plus a rank-2 interaction, 40% of cells hidden.
struct Synthetic {
  Eigen::MatrixXd truth, observed;
};
Synthetic MakeLowRank(int m, int n, double missing, uint64_t seed, double noise = 0.0) {
  Rng rng(seed);
  Eigen::MatrixXd u(m, 2), v(n, 2);
  for (int i = 0; i < m; ++i) u.row(i) << rng.Normal(0, 1), rng.Normal(0, 1);
  for (int j = 0; j < n; ++j) v.row(j) << rng.Normal(0, 1), rng.Normal(0, 1);
  Synthetic s;
  s.truth = u * v.transpose();
  for (int i = 0; i < m; ++i) s.truth.row(i).array() += rng.Uniform(2, 8);
  for (int j = 0; j < n; ++j) s.truth.col(j).array() += rng.Uniform(0, 2);
  s.observed = s.truth;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      s.observed(i, j) += noise * rng.Normal(0, 1);
      if (rng.Uniform() < missing) s.observed(i, j) = kNaN;
    }
  }
  return s;
}

double HiddenRmse(const Synthetic& s, const Eigen::MatrixXd& completed) {
  double sq = 0;
  int n = 0;
  for (Eigen::Index i = 0; i < s.truth.rows(); ++i) {
    for (Eigen::Index j = 0; j < s.truth.cols(); ++j) {
      if (!std::isnan(s.observed(i, j))) continue;
      sq += std::pow(completed(i, j) - s.truth(i, j), 2);
      ++n;
    }
  }
  return std::sqrt(sq / n);
}

TEST(SvdTest, RecoversLowRankStructureTheBiasModelCannot) {
  const Synthetic s = MakeLowRank(60, 20, 0.4, 5);
  const double baseline = HiddenRmse(s, *BaselineCompleter().Complete(s.observed));
  const double svd = HiddenRmse(s, *SvdCompleter().Complete(s.observed));
  // The interaction u·v has unit-variance factors, so the bias model's error is about
  // sqrt(2) ≈ 1.4; a rank-2 fit of noiseless data should remove most of it.
  EXPECT_GT(baseline, 0.8);
  EXPECT_LT(svd, 0.25 * baseline) << "svd " << svd << " baseline " << baseline;
}

TEST(SvdTest, RankRuleSeesTheInteraction) {
  // A rank-2 interaction on top of biases: after the bias fit on incomplete data the residual
  // holds the 2 interaction directions plus at most the 2 bias directions the fit blurred, so
  // validation must pick a rank in [2, 4], never 1 and never the cap of 10.
  const Synthetic s = MakeLowRank(60, 20, 0.3, 9);
  const int rank = SvdCompleter().ChooseRank(s.observed);
  EXPECT_GE(rank, 2);
  EXPECT_LE(rank, 4);
  SvdOptions fixed;
  fixed.rank = 3;
  EXPECT_EQ(SvdCompleter(fixed).ChooseRank(s.observed), 3);
}

TEST(SvdTest, RandomisedTruncatedSvdMatchesExactSingularValues) {
  Rng rng(3);
  Eigen::MatrixXd a(300, 120);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = rng.Normal(0, 1);
  // Make a clear rank-3 signal on top of small noise.
  Eigen::MatrixXd u = Eigen::MatrixXd::Zero(300, 3), v = Eigen::MatrixXd::Zero(120, 3);
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 300; ++i) u(i, k) = rng.Normal(0, 1);
    for (int j = 0; j < 120; ++j) v(j, k) = rng.Normal(0, 1);
  }
  a = 0.01 * a + u * v.transpose();
  const TruncatedSvd approx = ComputeTruncatedSvd(a, 3);  // randomised path (min dim 120 > 64)
  Eigen::BDCSVD<Eigen::MatrixXd> exact(a);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(approx.s(k), exact.singularValues()(k), 1e-6 * exact.singularValues()(k));
  }
  const Eigen::MatrixXd recon = approx.u * approx.s.asDiagonal() * approx.v.transpose();
  EXPECT_LT((recon - a).norm() / a.norm(), 0.01);
}

TEST(ImputerTest, RecoversAnExactLinearRelationBetweenColumns) {
  // Column 1 = 2 * column 0 + 1 on every complete row, column 2 unrelated noise; the missing
  // (4, 1) with column 0 = 3 is 2 * 3 + 1 = 7 (ridge shrinkage is tiny on this data).
  Eigen::MatrixXd x(6, 3);
  x << 0, 1, 5,    //
      1, 3, 2,     //
      2, 5, 9,     //
      4, 9, 1,     //
      3, kNaN, 4,  //
      5, 11, 7;
  Expected<Eigen::MatrixXd> out = ImputerCompleter().Complete(x);
  ASSERT_TRUE(out.has_value());
  EXPECT_NEAR((*out)(4, 1), 7.0, 0.1);
}

TEST(ImputerTest, BeatsTheBiasModelOnLowRankData) {
  const Synthetic s = MakeLowRank(80, 12, 0.3, 21);
  const double baseline = HiddenRmse(s, *BaselineCompleter().Complete(s.observed));
  const double imputer = HiddenRmse(s, *ImputerCompleter().Complete(s.observed));
  EXPECT_LT(imputer, 0.5 * baseline) << "imputer " << imputer << " baseline " << baseline;
}

TEST(NeighboursTest, WorkedExample) {
  // u = [1, ?]; v1 = [1.1, 5]; v2 = [3, 9]. Distances on column 0: 0.1 and 2; gaps (u - v):
  // -0.1 and -2, so the candidates are 5 - 0.1 = 4.9 and 9 - 2 = 7, weighted 1/(1e-3 + d)^2.
  Eigen::MatrixXd x(3, 2);
  x << 1, kNaN,  //
      1.1, 5,    //
      3, 9;
  Expected<Eigen::MatrixXd> out = NeighboursCompleter().Complete(x);
  ASSERT_TRUE(out.has_value());
  const double w1 = 1 / std::pow(0.101, 2), w2 = 1 / std::pow(2.001, 2);
  EXPECT_NEAR((*out)(0, 1), (w1 * 4.9 + w2 * 7) / (w1 + w2), 1e-9);  // ≈ 4.9053
  // With k = 1 only the nearest neighbour counts.
  NeighboursOptions one;
  one.k = 1;
  EXPECT_NEAR((*NeighboursCompleter(one).Complete(x))(0, 1), 4.9, 1e-12);
}

TEST(HybridTest, StaysWithinTheTrustRegionBetweenItsTwoMethods) {
  const Synthetic s = MakeLowRank(40, 8, 0.4, 33, 0.1);
  const Eigen::MatrixXd r = *ImputerCompleter().Complete(s.observed);
  const Eigen::MatrixXd n = *NeighboursCompleter().Complete(s.observed);
  const HybridCompleter hybrid;
  const double delta = *hybrid.ChooseDelta(s.observed);
  const Eigen::MatrixXd h = *hybrid.Complete(s.observed);
  for (Eigen::Index i = 0; i < h.rows(); ++i) {
    for (Eigen::Index j = 0; j < h.cols(); ++j) {
      if (!std::isnan(s.observed(i, j))) continue;
      EXPECT_LE(std::abs(h(i, j) - r(i, j)), delta + 1e-12);
      EXPECT_GE(h(i, j), std::min(r(i, j), n(i, j)) - 1e-12);
      EXPECT_LE(h(i, j), std::max(r(i, j), n(i, j)) + 1e-12);
    }
  }
}

TEST(InterferenceCompletionTest, SyntheticSensitivityTimesPressure) {
  // Loss of victim i next to aggressor j = sensitivity_i * pressure_j (rank one, in [0, 0.72]),
  // 40% unobserved: the CF methods should predict the unobserved pairs to within a few points.
  Rng rng(77);
  const int apps = 30;
  Eigen::VectorXd sensitivity(apps), pressure(apps);
  for (int i = 0; i < apps; ++i) {
    sensitivity(i) = rng.Uniform(0.1, 0.9);
    pressure(i) = rng.Uniform(0.1, 0.8);
  }
  Synthetic s;
  s.truth = sensitivity * pressure.transpose();
  s.observed = s.truth;
  for (Eigen::Index k = 0; k < s.observed.size(); ++k) {
    if (rng.Uniform() < 0.4) s.observed.data()[k] = kNaN;
  }
  const double baseline = HiddenRmse(s, *BaselineCompleter().Complete(s.observed));
  const double svd = HiddenRmse(s, *SvdCompleter().Complete(s.observed));
  EXPECT_LT(svd, 0.02);
  EXPECT_LT(svd, 0.5 * baseline);
}

}  // namespace
}  // namespace tessera::predict
