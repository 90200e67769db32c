#include "agent/mps_detector.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tessera::agent {
namespace {

// Why this sample is evidence of a stuck server, or "" when it is not.
std::string Suspect(const std::optional<MpsSample>& mps, std::optional<double> activity) {
  if (!mps) return "";
  if (mps->responsive == false) return "the MPS server did not answer";
  if (mps->server != false && mps->clients > 0 && activity && *activity <= 0) {
    return fmt::format("{} client(s) attached and no GPU activity", mps->clients);
  }
  return "";
}

}  // namespace

MpsStuckDetector::MpsStuckDetector(MpsStuckOptions options) : options_(options) {
  if (options_.min_samples < 1 || !(options_.min_span_s >= 0) ||
      !std::isfinite(options_.min_span_s)) {
    std::fprintf(stderr, "MpsStuckDetector: min_samples %d, min_span_s %g out of range\n",
                 options_.min_samples, options_.min_span_s);
    std::abort();
  }
}

bool MpsStuckDetector::Observe(double t, const std::optional<MpsSample>& mps,
                               std::optional<double> activity) {
  last_ = mps;
  reason_ = Suspect(mps, activity);
  if (reason_.empty()) {
    streak_ = 0;
  } else {
    if (streak_ == 0) first_t_ = t;
    ++streak_;
    last_t_ = t;
  }
  const bool was = stuck_;
  stuck_ = streak_ >= options_.min_samples && last_t_ - first_t_ >= options_.min_span_s;
  return stuck_ != was;
}

}  // namespace tessera::agent
