#include "predict/forecast.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::predict {
namespace {

TEST(ForecastTest, CoefficientOfVariation) {
  // {2,4,4,4,5,5,7,9}: mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32, population sigma
  // sqrt(32/8) = 2, CV = 2/5 = 0.4.
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(*CoefficientOfVariation(v), 0.4);
  EXPECT_DOUBLE_EQ(*CoefficientOfVariation(std::vector<double>{3, 3, 3}), 0.0);
  EXPECT_FALSE(CoefficientOfVariation(std::vector<double>{}).has_value());
  EXPECT_FALSE(CoefficientOfVariation(std::vector<double>{-1, 1}).has_value());
}

TEST(ForecastTest, PercentileInterpolatesBetweenRanks) {
  // Sorted {15, 20, 35, 40, 50}: p40 -> rank 0.4 * 4 = 1.6 -> 20 + 0.6 * (35 - 20) = 29;
  // p90 -> rank 3.6 -> 40 + 0.6 * 10 = 46; p0 and p100 are the extremes.
  const std::vector<double> v = {50, 15, 40, 20, 35};
  EXPECT_DOUBLE_EQ(*Percentile(v, 40), 29.0);
  EXPECT_DOUBLE_EQ(*Percentile(v, 90), 46.0);
  EXPECT_DOUBLE_EQ(*Percentile(v, 0), 15.0);
  EXPECT_DOUBLE_EQ(*Percentile(v, 100), 50.0);
  EXPECT_DOUBLE_EQ(*Percentile(std::vector<double>{7}, 80), 7.0);
  EXPECT_FALSE(Percentile(v, 101).has_value());
  EXPECT_FALSE(Percentile(std::vector<double>{}, 50).has_value());
}

TEST(ForecastTest, Correlation) {
  const std::vector<double> a = {1, 2, 3}, up = {2, 4, 6}, down = {3, 2, 1};
  EXPECT_NEAR(*Correlation(a, up), 1.0, 1e-12);
  EXPECT_NEAR(*Correlation(a, down), -1.0, 1e-12);
  // {1,2,3} vs {1,3,2}: deviations (-1,0,1)·(-1,1,0) = 1, norms sqrt(2)·sqrt(2) -> 0.5.
  EXPECT_NEAR(*Correlation(a, std::vector<double>{1, 3, 2}), 0.5, 1e-12);
  EXPECT_FALSE(Correlation(a, std::vector<double>{1, 1, 1}).has_value());
  EXPECT_FALSE(Correlation(a, std::vector<double>{1, 2}).has_value());
}

TEST(ForecastTest, AutocorrelationSeed004Eq1) {
  // {1,2,3,4,5}: mean 3, denominator 4+1+0+1+4 = 10.
  // r1 = ((-2)(-1) + (-1)(0) + (0)(1) + (1)(2)) / 10 = 0.4
  // r2 = ((-2)(0) + (-1)(1) + (0)(2)) / 10 = -0.1
  // r4 = ((-2)(2)) / 10 = -0.4
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(*Autocorrelation(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(*Autocorrelation(v, 1), 0.4);
  EXPECT_DOUBLE_EQ(*Autocorrelation(v, 2), -0.1);
  EXPECT_DOUBLE_EQ(*Autocorrelation(v, 4), -0.4);
  EXPECT_FALSE(Autocorrelation(v, 5).has_value());
  EXPECT_FALSE(Autocorrelation(v, -1).has_value());
  EXPECT_FALSE(Autocorrelation(std::vector<double>{2, 2, 2}, 1).has_value());
}

TEST(ForecastTest, Ar1LeastSquaresRecoversAnExactProcess) {
  // Y_t = 2 + 0.5 Y_{t-1} from Y_1 = 10: 10, 7, 5.5, 4.75, 4.375. The pairs lie on the line,
  // so least squares gives mu = 2, phi = 0.5 and the forecast 2 + 0.5 * 4.375 = 4.1875.
  const std::vector<double> v = {10, 7, 5.5, 4.75, 4.375};
  Expected<Ar1> fit = FitAr1(v);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->mu, 2.0, 1e-12);
  EXPECT_NEAR(fit->phi, 0.5, 1e-12);
  EXPECT_NEAR(*ForecastAr1(v), 4.1875, 1e-12);
}

TEST(ForecastTest, Ar1LeastSquaresOnNoisyPairs) {
  // Pairs (x, y) = (1,2), (2,1), (1,3): x mean 4/3, y mean 2; Sxy = (-1/3)(0) + (2/3)(-1) +
  // (-1/3)(1) = -1; Sxx = 1/9 + 4/9 + 1/9 = 2/3; phi = -1.5, mu = 2 + 1.5 * 4/3 = 4.
  const std::vector<double> v = {1, 2, 1, 3};
  Expected<Ar1> fit = FitAr1(v);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->phi, -1.5, 1e-12);
  EXPECT_NEAR(fit->mu, 4.0, 1e-12);
  EXPECT_NEAR(*ForecastAr1(v), 4.0 - 1.5 * 3, 1e-12);
  EXPECT_FALSE(FitAr1(std::vector<double>{1, 2}).has_value());
  EXPECT_FALSE(FitAr1(std::vector<double>{4, 4, 4, 5}).has_value());
}

TEST(ForecastTest, Arima110ForecastsATrend) {
  // 0, 1, 3, 7, 15: differences 1, 2, 4, 8 follow D_t = 0 + 2 D_{t-1}; next difference 16,
  // forecast 15 + 16 = 31. AR(1) on the levels would not extrapolate the doubling.
  const std::vector<double> v = {0, 1, 3, 7, 15};
  EXPECT_NEAR(*ForecastArima110(v), 31.0, 1e-9);
  EXPECT_FALSE(ForecastArima110(std::vector<double>{1, 2, 3}).has_value());
  EXPECT_FALSE(ForecastArima110(std::vector<double>{1, 2, 3, 4}).has_value());  // constant D
}

}  // namespace
}  // namespace tessera::predict
