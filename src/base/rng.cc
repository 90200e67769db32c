#include "base/rng.h"

#include <cmath>
#include <numbers>

namespace tessera {

double Rng::Uniform() {
  // 53 random bits -> a double in [0, 1).
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

uint64_t Rng::Below(uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = engine_();
  } while (x >= limit);
  return x % n;
}

double Rng::Exponential(double rate) { return -std::log1p(-Uniform()) / rate; }

double Rng::Normal(double mean, double stddev) {
  double u1 = Uniform();
  while (u1 <= 0.0) u1 = Uniform();
  const double u2 = Uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace tessera
