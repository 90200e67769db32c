#pragma once
// SysMonitor: MuxFlow's per-GPU health state machine (seed 001 §4.1, Fig. 6b). It reads a GPU's
// metrics every sample and says whether offline (best-effort) work may be placed there
// (Healthy only), must stay away (Unhealthy), or must be evicted now (Overlimit).
//
//   Init ──first sample──► Healthy ⇄ Unhealthy ──► Overlimit ──hold, all below overlimit──►
//   Unhealthy; any state ──GPU unavailable──► Disabled ──available──► Init.
//
//  - Healthy → Unhealthy when a metric reaches its `unhealthy` threshold; Unhealthy → Healthy
//    when every metric is below its `healthy` threshold (hysteresis: healthy < unhealthy).
//  - Healthy or Unhealthy → Overlimit when a metric reaches its `overlimit` threshold.
//  - Overlimit → Unhealthy once every metric is below its overlimit threshold and the hold
//    period has passed since entering. The hold grows with the entries into Overlimit in the
//    last `history_s` (2 h in 001), this one included: hold = base_hold_s × 2^(n − 1), capped
//    at `max_hold_s` (001 says only "the exponent of the times"; the base 2 is ours).
//  - The seed gives no threshold values ("empirically selected"); the defaults below are ours,
//    stated in docs/policies.md. Metrics are pressures in 0..1 where higher is worse: GPU
//    utilisation, SM activity, memory used / total, and the SM clock's drop below its maximum
//    (1 − clock / max clock: a T4 lowers its clock as its load rises, 001 §4.1).
// A plain value, one per GPU; deterministic (time comes from the caller).

#include <string>
#include <string_view>
#include <vector>

namespace tessera::policy {

enum class GpuHealth { kInit, kHealthy, kUnhealthy, kOverlimit, kDisabled };
std::string_view ToString(GpuHealth h);

struct GpuPressure {
  double gpu_util = 0;     // DCGM_FI_DEV_GPU_UTIL / 100
  double sm_activity = 0;  // SM activity (DCGM_FI_PROF_SM_ACTIVE; muxflow: its service's)
  double memory = 0;       // framebuffer used / total
  double clock_drop = 0;   // 1 − SM clock / max SM clock
};

struct Thresholds {
  double healthy = 0;    // below: healthy
  double unhealthy = 0;  // reaching it: unhealthy
  double overlimit = 0;  // reaching it: overlimit (evict); > 1 disables the metric's overlimit
};

struct SysMonitorOptions {
  // GPU utilisation is what sharing raises on purpose (001: 26 % → 76 %), so it never makes a
  // GPU overloaded by itself; a GPU busy nearly all the time only stops new offline work.
  Thresholds gpu_util{0.97, 0.995, 2.0};
  Thresholds sm_activity{0.80, 0.90, 0.97};
  // 001 §6 fixes the offline memory quota at 40 % because most online services use < 60 %:
  // beyond 90 % an online burst risks running out of memory.
  Thresholds memory{0.80, 0.90, 0.95};
  // A T4 holds its boost clock until it is power-bound; a 10 % drop slows the online service.
  Thresholds clock_drop{0.05, 0.10, 0.20};
  double base_hold_s = 60;
  double max_hold_s = 7200;
  double history_s = 7200;
};

class SysMonitor {
 public:
  explicit SysMonitor(SysMonitorOptions options = {}) : options_(options) {}

  // One sample at time t (non-decreasing); `available` false means the GPU is gone or broken.
  // Returns the state after the sample.
  GpuHealth Update(double t, const GpuPressure& p, bool available = true);

  GpuHealth state() const { return state_; }
  // Offline work may be placed here.
  bool accepts_offline() const { return state_ == GpuHealth::kHealthy; }
  // Offline work here must go (Overlimit; Disabled has none).
  bool evicts_offline() const { return state_ == GpuHealth::kOverlimit; }
  // While Overlimit: the earliest time it may leave; the hold it got.
  double hold_until() const { return hold_until_; }
  double hold_s() const { return hold_s_; }
  // Entries into Overlimit within the history window ending at t.
  int overlimit_entries(double t) const;
  // Which metric drove the last transition ("sm_activity 0.93 ≥ 0.90"), for explain.
  std::string_view reason() const { return reason_; }

 private:
  enum class Level { kHealthy, kBetween, kUnhealthy, kOverlimit };
  Level Classify(const GpuPressure& p);

  SysMonitorOptions options_;
  GpuHealth state_ = GpuHealth::kInit;
  std::vector<double> entries_;  // times of entering Overlimit, ascending
  double hold_until_ = 0;
  double hold_s_ = 0;
  std::string reason_;
};

}  // namespace tessera::policy
