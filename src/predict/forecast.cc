#include "predict/forecast.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/stats.h"

namespace tessera::predict {
namespace {

double Mean(std::span<const double> v) {
  double sum = 0;
  for (const double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace

Expected<double> CoefficientOfVariation(std::span<const double> values) {
  if (values.empty()) return Fail("coefficient of variation of an empty window");
  const double mean = Mean(values);
  if (mean == 0) return Fail("coefficient of variation of a zero-mean window");
  double ss = 0;
  for (const double x : values) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(values.size())) / std::abs(mean);
}

Expected<double> Percentile(std::span<const double> values, double p) {
  if (values.empty()) return Fail("percentile of an empty window");
  if (!(p >= 0 && p <= 100)) return Fail("percentile {} is outside [0, 100]", p);
  return Quantile(std::vector<double>(values.begin(), values.end()), p / 100.0);
}

Expected<double> Correlation(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size())
    return Fail("correlation of windows of {} and {} samples", a.size(), b.size());
  if (a.size() < 2) return Fail("correlation needs at least 2 samples");
  const double ma = Mean(a), mb = Mean(b);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  if (saa == 0 || sbb == 0) return Fail("correlation of a constant window");
  return sab / std::sqrt(saa * sbb);
}

Expected<double> Autocorrelation(std::span<const double> values, int k) {
  const int n = static_cast<int>(values.size());
  if (k < 0 || k >= n) return Fail("autocorrelation lag {} needs 0 <= k < n = {}", k, n);
  const double mean = Mean(values);
  double num = 0, den = 0;
  for (int i = 0; i < n; ++i) den += (values[i] - mean) * (values[i] - mean);
  if (den == 0) return Fail("autocorrelation of a constant window");
  for (int i = 0; i + k < n; ++i) num += (values[i] - mean) * (values[i + k] - mean);
  return num / den;
}

Expected<Ar1> FitAr1(std::span<const double> values) {
  const size_t n = values.size();
  if (n < 3) return Fail("AR(1) fit needs at least 3 samples, got {}", n);
  const std::span<const double> x = values.first(n - 1), y = values.last(n - 1);
  const double mx = Mean(x), my = Mean(y);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  if (sxx == 0) return Fail("AR(1) fit of a constant window");
  Ar1 fit;
  fit.phi = sxy / sxx;
  fit.mu = my - fit.phi * mx;
  return fit;
}

Expected<double> ForecastAr1(std::span<const double> values) {
  Expected<Ar1> fit = FitAr1(values);
  if (!fit) return std::unexpected(fit.error());
  return fit->Forecast(values.back());
}

Expected<double> ForecastArima110(std::span<const double> values) {
  if (values.size() < 4)
    return Fail("ARIMA(1,1,0) needs at least 4 samples, got {}", values.size());
  std::vector<double> diff(values.size() - 1);
  for (size_t i = 1; i < values.size(); ++i) diff[i - 1] = values[i] - values[i - 1];
  Expected<Ar1> fit = FitAr1(diff);
  if (!fit) return Fail("ARIMA(1,1,0): {}", fit.error().message);
  return values.back() + fit->Forecast(diff.back());
}

}  // namespace tessera::predict
