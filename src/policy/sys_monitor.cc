#include "policy/sys_monitor.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

namespace tessera::policy {

std::string_view ToString(GpuHealth h) {
  switch (h) {
    case GpuHealth::kInit: return "Init";
    case GpuHealth::kHealthy: return "Healthy";
    case GpuHealth::kUnhealthy: return "Unhealthy";
    case GpuHealth::kOverlimit: return "Overlimit";
    case GpuHealth::kDisabled: return "Disabled";
  }
  return "?";
}

SysMonitor::Level SysMonitor::Classify(const GpuPressure& p) {
  const std::pair<const char*, std::pair<double, const Thresholds*>> metrics[] = {
      {"gpu_util", {p.gpu_util, &options_.gpu_util}},
      {"sm_activity", {p.sm_activity, &options_.sm_activity}},
      {"memory", {p.memory, &options_.memory}},
      {"clock_drop", {p.clock_drop, &options_.clock_drop}},
  };
  Level worst = Level::kHealthy;
  for (const auto& [name, m] : metrics) {
    const auto [v, th] = m;
    Level level = Level::kHealthy;
    double bound = th->healthy;
    if (v >= th->overlimit) {
      level = Level::kOverlimit;
      bound = th->overlimit;
    } else if (v >= th->unhealthy) {
      level = Level::kUnhealthy;
      bound = th->unhealthy;
    } else if (v >= th->healthy) {
      level = Level::kBetween;
    }
    if (level > worst) {
      worst = level;
      reason_ = fmt::format("{} {:.3f} ≥ {:.3f}", name, v, bound);
    }
  }
  if (worst == Level::kHealthy) reason_ = "every metric below its healthy threshold";
  return worst;
}

int SysMonitor::overlimit_entries(double t) const {
  return static_cast<int>(std::count_if(entries_.begin(), entries_.end(), [&](double e) {
    return e > t - options_.history_s && e <= t;
  }));
}

GpuHealth SysMonitor::Update(double t, const GpuPressure& p, bool available) {
  if (!available) {
    state_ = GpuHealth::kDisabled;
    reason_ = "GPU unavailable";
    return state_;
  }
  if (state_ == GpuHealth::kDisabled) {
    state_ = GpuHealth::kInit;  // back: initialise again before judging
    reason_ = "GPU available again";
    return state_;
  }
  const Level level = Classify(p);
  auto enter_overlimit = [&] {
    state_ = GpuHealth::kOverlimit;
    entries_.push_back(t);
    std::erase_if(entries_, [&](double e) { return e <= t - options_.history_s; });
    const int n = overlimit_entries(t);
    hold_s_ = std::min(options_.max_hold_s, options_.base_hold_s * std::exp2(n - 1));
    hold_until_ = t + hold_s_;
  };
  switch (state_) {
    case GpuHealth::kInit:
    case GpuHealth::kHealthy:
      if (level == Level::kOverlimit) {
        enter_overlimit();
      } else if (level == Level::kUnhealthy) {
        state_ = GpuHealth::kUnhealthy;
      } else {
        state_ = GpuHealth::kHealthy;  // Init finishes with its first sample
      }
      break;
    case GpuHealth::kUnhealthy:
      if (level == Level::kOverlimit) {
        enter_overlimit();
      } else if (level == Level::kHealthy) {
        state_ = GpuHealth::kHealthy;
      }
      break;
    case GpuHealth::kOverlimit:
      if (level != Level::kOverlimit && t >= hold_until_) state_ = GpuHealth::kUnhealthy;
      break;
    case GpuHealth::kDisabled:
      break;
  }
  return state_;
}

}  // namespace tessera::policy
