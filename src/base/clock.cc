#include "base/clock.h"

#include <chrono>

namespace tessera {
namespace {
long long NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

SteadyClock::SteadyClock() : start_ns_(NowNs()) {}
double SteadyClock::Now() const { return static_cast<double>(NowNs() - start_ns_) * 1e-9; }

}  // namespace tessera
