#pragma once
// Rng: the one source of randomness, always seeded by the caller (never the wall clock), so a
// simulation replays bit-for-bit. Not thread-safe; give each thread its own Rng.
//
// The generator is std::mt19937_64, whose output sequence the C++ standard fixes; the
// distributions below are written here rather than taken from <random>, whose algorithms differ
// between standard libraries, so results are the same on every platform.

#include <cstdint>
#include <random>
#include <vector>

namespace tessera {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t Next() { return engine_(); }
  // Uniform in [0, 1).
  double Uniform();
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n); n > 0. Unbiased (rejection sampling).
  uint64_t Below(uint64_t n);
  // Exponential with the given rate (mean 1/rate).
  double Exponential(double rate);
  // Standard normal (Box-Muller; one value per call, no cached state).
  double Normal(double mean, double stddev);

  // Fisher-Yates shuffle driven by Below().
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace tessera
