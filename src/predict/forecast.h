#pragma once
// Forecasting helpers for the utilisation-driven policies (Knots' CBP and Peak Prediction, seed
// 004 §"Correlation Based Provisioning" / "Peak Prediction Scheduler"; seed 003 §CBP): summary
// statistics of a telemetry window and a one-step forecast. Pure functions on a window of
// samples (oldest first); no state, thread-safe. Each fails with an Error on a window too short
// or degenerate for its formula rather than returning a made-up number.

#include <span>

#include "base/error.h"

namespace tessera::predict {

// Population coefficient of variation sigma / mean (sigma with divisor n). Needs n >= 1 and a
// non-zero mean.
[[nodiscard]] Expected<double> CoefficientOfVariation(std::span<const double> values);

// p-th percentile, 0 <= p <= 100, linear interpolation between closest ranks (rank p/100 (n-1),
// NumPy's default). Needs n >= 1. CBP sizes pods for the 80th/90th percentile.
[[nodiscard]] Expected<double> Percentile(std::span<const double> values, double p);

// Pearson correlation of two equally long windows (CBP co-locates pods whose usage does not
// correlate). Needs n >= 2 and neither window constant.
[[nodiscard]] Expected<double> Correlation(std::span<const double> a, std::span<const double> b);

// Autocorrelation at lag k, seed 004 eq. 1:
//   r_k = sum_{i=1}^{n-k} (Y_i - Ybar)(Y_{i+k} - Ybar) / sum_{i=1}^{n} (Y_i - Ybar)^2.
// Needs 0 <= k < n and a non-constant window.
[[nodiscard]] Expected<double> Autocorrelation(std::span<const double> values, int k);

// Y_t = mu + phi Y_{t-1} fitted by ordinary least squares on the n-1 pairs (Y_{t-1}, Y_t)
// (seed 004 eq. 2, the "first-order ARIMA" of Peak Prediction).
struct Ar1 {
  double mu = 0;
  double phi = 0;
  double Forecast(double last) const { return mu + phi * last; }
};
// Needs n >= 3 and a non-constant Y_1..Y_{n-1}.
[[nodiscard]] Expected<Ar1> FitAr1(std::span<const double> values);
// One-step forecast mu + phi Y_n.
[[nodiscard]] Expected<double> ForecastAr1(std::span<const double> values);

// ARIMA(1,1,0): AR(1) on the first differences D_t = Y_t - Y_{t-1}, forecast
// Y_{n+1} = Y_n + mu + phi D_n. For a trending window, where AR(1) on levels lags. Needs n >= 4
// and non-constant differences D_2..D_{n-1}.
[[nodiscard]] Expected<double> ForecastArima110(std::span<const double> values);

}  // namespace tessera::predict
