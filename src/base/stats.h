#pragma once
// Order statistics of a sample: the one quantile rule Tessera reports with (evaluation medians
// and p90s, calibration, forecasting percentiles, medians over seeds). Pure functions.

#include <utility>
#include <vector>

namespace tessera {

// The q-quantile, 0 <= q <= 1, linear between the closest ranks (rank q·(n − 1), NumPy's
// default); the median of an even count is the mean of the two middle values. `values` must not
// be empty.
double Quantile(std::vector<double> values, double q);
inline double Median(std::vector<double> values) { return Quantile(std::move(values), 0.5); }

}  // namespace tessera
