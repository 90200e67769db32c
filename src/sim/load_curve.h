#pragma once
// DailyLoad: the offered load of an online service over a day (seed 001 §2, Fig. 2: requests
// "fluctuate greatly in one day", "smooth in minutes and periodical in days"). A raised cosine
// between `trough_qps` and `peak_qps`, highest at `peak_hour`, period 24 h:
//   λ(t) = trough + (peak − trough) · (1 + cos(2π (t/3600 − peak_hour) / 24)) / 2.
// t is seconds since midnight of day 0. Pure, value type.

#include <cmath>
#include <numbers>

namespace tessera::sim {

struct DailyLoad {
  double trough_qps = 0;
  double peak_qps = 0;
  double peak_hour = 20;  // 001: "more users ... in the evening"

  double QpsAt(double t) const {
    const double phase = 2 * std::numbers::pi * (t / 3600.0 - peak_hour) / 24.0;
    return trough_qps + (peak_qps - trough_qps) * (1 + std::cos(phase)) / 2;
  }
};

}  // namespace tessera::sim
