// MuxFlow's SysMonitor (seed 001 §4.1) step by step, with the default thresholds
// (healthy / unhealthy / overlimit): SM activity 0.80 / 0.90 / 0.97, memory 0.80 / 0.90 / 0.95,
// clock drop 0.05 / 0.10 / 0.20, GPU utilisation 0.97 / 0.995 / never; hold = 60 s × 2^(n − 1)
// for the n-th entry into Overlimit within the last 2 h.
#include "policy/sys_monitor.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::policy {
namespace {

using H = GpuHealth;

struct Step {
  double t;
  GpuPressure p;
  bool available;
  GpuHealth want;
  double hold_until = -1;  // checked when ≥ 0
};

GpuPressure Sm(double v) { return {.sm_activity = v}; }
GpuPressure Mem(double v) { return {.memory = v}; }
GpuPressure ClockDrop(double v) { return {.clock_drop = v}; }
GpuPressure Util(double v) { return {.gpu_util = v}; }

TEST(SysMonitorTest, WalksTheStateMachineWithAGrowingHold) {
  const std::vector<Step> steps = {
      {0, {}, true, H::kHealthy},              // Init finishes with its first sample
      {10, Sm(0.85), true, H::kHealthy},       // between healthy and unhealthy: stays
      {20, Sm(0.90), true, H::kUnhealthy},     // reaches unhealthy
      {30, Sm(0.85), true, H::kUnhealthy},     // not yet below healthy: stays
      {40, Sm(0.50), true, H::kHealthy},       // every metric below healthy
      {45, Util(0.999), true, H::kUnhealthy},  // a GPU busy all the time takes no new work...
      {46, Util(1.0), true, H::kUnhealthy},    // ...but is never overloaded by utilisation
      {47, {}, true, H::kHealthy},
      {50, Mem(0.95), true, H::kOverlimit, 110},  // 1st entry: hold 60 s
      {100, {}, true, H::kOverlimit, 110},        // still held
      {110, {}, true, H::kUnhealthy},             // held long enough, all below overlimit
      {120, {}, true, H::kHealthy},
      {200, ClockDrop(0.25), true, H::kOverlimit, 320},  // 2nd entry in 2 h: hold 120 s
      {320, ClockDrop(0.25), true, H::kOverlimit, 320},  // the hold passed but a metric is over
      {330, ClockDrop(0.15), true, H::kUnhealthy},       // below overlimit, above unhealthy
      {340, Sm(0.97), true, H::kOverlimit, 580},         // 3rd entry, from Unhealthy: hold 240 s
      {580, {}, true, H::kUnhealthy},
      {600, {}, false, H::kDisabled},  // the GPU is gone
      {610, {}, true, H::kInit},       // back: initialise again
      {620, {}, true, H::kHealthy},
      // The entry at t = 50 left the 2-hour window (7260 − 7200 = 60 > 50): entries at 200, 340
      // and now make 3, hold 240 s.
      {7260, Sm(0.99), true, H::kOverlimit, 7500},
  };
  SysMonitor m;
  EXPECT_EQ(m.state(), H::kInit);
  for (const Step& s : steps) {
    EXPECT_EQ(m.Update(s.t, s.p, s.available), s.want) << "t=" << s.t << " (" << m.reason() << ")";
    if (s.hold_until >= 0) {
      EXPECT_DOUBLE_EQ(m.hold_until(), s.hold_until) << "t=" << s.t;
    }
    EXPECT_EQ(m.accepts_offline(), s.want == H::kHealthy) << "t=" << s.t;
    EXPECT_EQ(m.evicts_offline(), s.want == H::kOverlimit) << "t=" << s.t;
  }
  EXPECT_EQ(m.overlimit_entries(7260), 3);
  EXPECT_EQ(m.overlimit_entries(7400), 2);  // t = 200 left the window too
}

TEST(SysMonitorTest, NamesTheMetricThatDroveItAndCapsTheHold) {
  SysMonitor m({.base_hold_s = 60, .max_hold_s = 100});
  m.Update(0, Sm(0.9));
  EXPECT_EQ(m.reason(), "sm_activity 0.900 ≥ 0.900");
  m.Update(1, {.sm_activity = 0.95, .memory = 0.96});  // the worse level names the metric
  EXPECT_EQ(m.reason(), "memory 0.960 ≥ 0.950");
  EXPECT_DOUBLE_EQ(m.hold_s(), 60);
  m.Update(61, {});
  m.Update(62, Mem(0.99));
  EXPECT_DOUBLE_EQ(m.hold_s(), 100);  // 120 s capped at max_hold_s
  EXPECT_DOUBLE_EQ(m.hold_until(), 162);
}

}  // namespace
}  // namespace tessera::policy
