#pragma once
// Physics: the simulator's ground truth (DESIGN §5) — how fast a workload really runs on its
// slice, how much its neighbours slow it, when it fails, and what the GPUs draw.
//
//  - Isolated rate: a measured throughput where the catalogue has one for the exact
//    configuration; otherwise the application's roofline (sim/apps.h) on its slice: compute
//    share = the partition's share of the SMs × its MPS thread share, bandwidth share = a MIG
//    instance's memory slices / the GPU's (a whole GPU's bandwidth is shared, see below),
//    scaled by the GPU model's compute and bandwidth relative to the reference GPU.
//  - MPS co-runners on one partition contend for memory bandwidth and cache: the victim's
//    query time grows by kappa × its exposure × Σ co-runners' bandwidth demand, where exposure
//    = sensitivity × (memory fraction + 0.25) and demand = busy × memory fraction.
//  - MIG instances are isolated but for the shared host path: at most `mig_max` (3%) slowdown.
//  - A workload whose footprint exceeds its memory limit (its MPS pinned-memory reservation,
//    or what is left of its partition) fails at start, as in the thesis's "errors".
//  - Power: idle + (max − idle) × utilisation, per GPU model. Noise: a per-workload factor
//    1 ± min(|N(0, noise_sd)|, noise_max), seeded by (seed, workload id), so it does not depend
//    on event order.
//
// Only sim:: code can use it: the predictor sees Physics through sim::Profiler's samples only.
// Immutable after construction; Rate and GpuPower are const in effect (thread-compatible).

#include <cstdint>
#include <span>

#include "sim/apps.h"
#include "sim/ground_truth.h"

namespace tessera::sim {

struct PhysicsOptions {
  double noise_sd = 0.015;
  double noise_max = 0.04;
  double mps_kappa = 1.0;
  double mig_max = 0.03;
  double cpu_slowdown = 20.0;  // a CPU-only run of an app: fixed + 20 × GPU time per query
};

class Physics final : public GroundTruth {
 public:
  Physics(AppCatalog catalog, uint64_t seed, PhysicsOptions options = {});

  RunRate Rate(const model::PlacedWorkload& pw, const model::ClusterState& cluster) override;
  double GpuPower(model::GpuIndex g, double util, const model::ClusterState& cluster) override;

  const AppCatalog& catalog() const { return catalog_; }

  // Noise-free isolated queries/s of `app` alone on a slice: `profile` indexes the model's MIG
  // profiles (-1: the whole GPU), `milli` is its MPS thread share of that partition. For the
  // simulator's own experiment setup (e.g. the thesis's SLO_4 / SLO_1), never for policies.
  double IsolatedQps(const AppSpec& app, model::GpuModelId gpu, int profile, int32_t milli) const {
    return IsolatedRate(app, gpu, profile, milli).qps;
  }
  // The ceiling of `app` on a cluster of `models`: its noise-free isolated queries/s on the
  // best configuration it fits in (whole GPU or any MIG profile, at MPS 100/50/25 %). A pod
  // whose SLO is above this cannot meet it under any placement (issue #14, "what can be met").
  double BestIsolatedQps(const AppSpec& app, std::span<const model::GpuModelId> models) const;

 private:
  friend class Profiler;

  struct Shares {
    double compute;  // of the reference GPU's SMs, after the model's relative speed
    double bandwidth;
  };
  // Noise-free isolated queries/s of `app` on the configuration, and its GPU-busy fraction.
  struct Isolated {
    double qps;
    double busy;
    double memory_fraction;
  };
  Isolated IsolatedRate(const AppSpec& app, model::GpuModelId gpu, int profile,
                        int32_t milli) const;
  RunRate RateIn(const model::PlacedWorkload& pw, const model::ClusterState& cluster) const;
  double NoiseFactor(model::WorkloadId id) const;

  AppCatalog catalog_;
  uint64_t seed_;
  PhysicsOptions options_;
  model::GpuModelId reference_;
};

}  // namespace tessera::sim
