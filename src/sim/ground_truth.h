#pragma once
// GroundTruth: what actually happens to a running workload — the only place the simulator's
// reality lives (DESIGN §5: sim::Physics implements it; nothing outside sim may read it; the
// predictor only ever sees profiling samples drawn from it).
//
// The engine asks for a workload's rate whenever the co-location of any GPU it runs on changes,
// and for a GPU's power whenever its load changes. Implementations must be deterministic
// for a seed (noise drawn from their own seeded Rng, keyed by workload, never by call order).

#include <optional>
#include <string>

#include "model/cluster.h"
#include "sim/usage.h"

namespace tessera::sim {

struct RunRate {
  double qps = 0;       // queries per second it completes now
  double gpu_busy = 0;  // fraction of its partition's time it keeps the engine busy, 0..1
  bool fails = false;   // e.g. its footprint does not fit its memory limit
  std::string failure;  // why, when fails
  // Its share of the GPU's SMs × the fraction of time it keeps them computing, 0..1: what
  // power follows (a client on 25 % of the SMs loads the GPU a quarter as much).
  double sm_load = 0;
  // What it could serve now: qps, unless an offered load (an online service's requests) keeps
  // it below that — then qps is the load and this the service rate its queue sees.
  double capacity_qps = 0;
};

class GroundTruth {
 public:
  virtual ~GroundTruth() = default;
  // The rate of `pw` given everything else placed in `cluster` now.
  virtual RunRate Rate(const model::PlacedWorkload& pw, const model::ClusterState& cluster) = 0;
  // Power draw of GPU g in watts at SM load `load` (0..1: Σ of its clients' sm_load).
  virtual double GpuPower(model::GpuIndex g, double load, const model::ClusterState& cluster) = 0;
  // The truth's clock: what moves with time (an online service's offered load) is evaluated at
  // the last time set. The engine sets it before it asks for rates.
  virtual void SetTime(double /*t*/) {}
  // Whether `w` serves an offered load that moves with time: the engine then re-rates it every
  // EngineOptions::load_interval_s and records its load and service rate.
  virtual bool HasOfferedLoad(const model::Workload& /*w*/) const { return false; }
  // What `w` holds and does `since_start_s` seconds into its current run (sim/usage.h);
  // nullopt when its application states no trajectory (it holds what its slices reserve).
  virtual std::optional<UsagePoint> UsageAt(const model::Workload& /*w*/,
                                            double /*since_start_s*/) const {
    return std::nullopt;
  }
  // Whether that trajectory states SM and bandwidth activity too; false for one that states
  // memory only (UsageTrajectory::memory_only), whose activity the engine does not publish.
  virtual bool UsageStatesActivity(const model::Workload& /*w*/) const { return true; }
};

}  // namespace tessera::sim
