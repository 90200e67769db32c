#include "sim/usage.h"

#include <algorithm>
#include <cmath>

namespace tessera::sim {

UsagePoint UsageTrajectory::At(double t) const {
  if (phases.empty()) return {};
  t = std::max(t, 0.0);
  double total = 0;
  for (const UsagePhase& p : phases) total += p.duration_s;
  double in = loop && total > 0 ? std::fmod(t, total) : t;
  UsagePoint use = phases.back().use;
  for (const UsagePhase& p : phases) {
    if (in < p.duration_s) {
      use = p.use;
      break;
    }
    in -= p.duration_s;
  }
  if (burst && std::fmod(t, burst->period_s) >= burst->period_s - burst->duration_s) {
    use.memory_mib = std::max(use.memory_mib, burst->peak.memory_mib);
    use.sm = std::max(use.sm, burst->peak.sm);
    use.bandwidth = std::max(use.bandwidth, burst->peak.bandwidth);
  }
  return use;
}

double UsageTrajectory::PeakMemoryMib() const {
  double peak = 0;
  for (const UsagePhase& p : phases) peak = std::max(peak, p.use.memory_mib);
  if (burst && !phases.empty()) peak = std::max(peak, burst->peak.memory_mib);
  return peak;
}

}  // namespace tessera::sim
