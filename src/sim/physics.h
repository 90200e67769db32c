#pragma once
// Physics: the simulator's ground truth (DESIGN §5) — how fast a workload really runs on its
// slice, how much its neighbours slow it, when it fails, and what the GPUs draw.
//
//  - Isolated rate: a measured throughput where the catalogue has one for the exact
//    configuration; otherwise the application's roofline (sim/apps.h) on its slice: compute
//    share = the partition's share of the SMs × its MPS thread share, bandwidth share = a MIG
//    instance's memory slices / the GPU's (a whole GPU's bandwidth is shared, see below),
//    scaled by the GPU model's compute and bandwidth relative to the reference GPU. A query
//    is an SM-bound part g (compute + memory) and a fixed part f that no share speeds up.
//  - MPS co-runners on one partition contend through two channels, calibrated to the thesis's
//    V100 figures (Ch. 6.4; docs/simulator.md "Interference"): the victim's fixed part
//    stretches by 1 / (1 − ρ), ρ = front_kappa × Σ co-runners' fixed-part duty (f / t), as on
//    a shared server; its SM-bound part by 1 + sm_kappa × Σ co-runners' SM-bound duty (g / t).
//    Both scaled by the victim's sensitivity; first order (co-runners' isolated behaviour).
//  - A best-effort co-runner (an offline job under an MPS thread cap, Slice::best_effort) keeps
//    to its SMs: its pressure on the victim's SM-bound part is `be_sm_kappa` × its share of the
//    SMs × its SM-bound duty instead of the thesis's channel, calibrated to seed 001 Fig. 4 (a T4
//    lends an offline job up to 62 % more computing power while the online service slows by
//    less than 20 %: 0.2 / 0.62 ≈ 0.32). Its fixed-part duty still loads the shared front.
//  - Without MPS (`sharing`, 001 Fig. 3) a partition's clients take turns in time
//    slices. Time-sharing: a guaranteed client's engine-active time stretches by
//    1 + Σ co-runners' active fraction (its kernels wait out their slices); priority time-sharing:
//    by 1 + `ts_priority_overhead` while anyone else runs (preemption at slice boundaries). A
//    best-effort client gets the engine time the guaranteed ones leave: 1 − Σ their active
//    fraction (× (1 + overhead) under priority), and at least 1/n of it under plain
//    time-sharing, n the clients (round robin); only its engine time waits for slices, its
//    host time (AppSpec::host_s) does not. A client's active fraction excludes its host time,
//    so a trainer with an input pipeline stretches a service by less than one without.
//  - Offered load (SetOfferedLoad): an online service serves min(λ(now), capacity) queries/s;
//    its engine-active and SM duties scale by u = served / capacity, as a co-runner too (from
//    its isolated capacity: first order). capacity_qps is what its request queue sees.
//  - Small slices (off by default): a slice with less than `fail_below_share` of the GPU's SMs
//    fails at start (Ch. 9.2.1); or, with `fixed_floor_share`, its fixed part stretches by
//    floor / share (its kernels need more waves). Measured configurations are exempt.
//  - MIG instances are isolated but for the shared host path: at most `mig_max` (3%) slowdown.
//  - A workload whose footprint exceeds its memory limit (its MPS pinned-memory reservation,
//    or what is left of its partition) fails at start, as in the thesis's "errors".
//  - Engine activity (DCGM GR_ENGINE_ACTIVE, what `gpu_busy` reports): a kernel executes
//    during the SM-bound part and during `fixed_active` of the fixed part (Ch. 6.2, 9.3);
//    time spent waiting on co-runners is idle.
//  - Power: on the thesis's GPUs (`flat_power_models`: V100, A30) nearly flat, idle × (1 +
//    `flat_power_rise` × SM load) (Ch. 6.2); elsewhere idle + (max − idle) × SM load; a model
//    in `power_by_gpu` draws that measured line instead (idle_w + (full_w − idle_w) × SM load;
//    seed 003's V100 reading: sim/overprovision.h). SM load = Σ clients' share of the GPU's SMs
//    (MIG slices × MPS threads) × their SM-bound duty.
//  - A remote GPU (Slice::remote; seed 002's disaggregation): the run stretches by the app's
//    RemoteProfile::Slowdown(l) (sim/apps.h; the worst of its remote slices), l the network
//    load on the two nodes the stream links, the busier of them: the Σ network_share of every
//    other remote stream through that node, capped at 1. Its rate, engine activity and SM load
//    all divide by it (the GPU waits on the network). The engine re-rates a remote workload
//    whenever a stream through one of its nodes starts or stops.
//  - With `link_colocation` (seed 002's co-location, ≈430): a node's link load also counts the
//    storage I/O share of every GPU job whose CPU is there and the traffic of network-intensive
//    jobs (AppSpec::link), and any GPU job — local too — runs × (1 + disk_share × link_stretch ×
//    l_cpu) on top of its remote slowdown, l_cpu the others' load on its CPU node (≤ 1). The
//    engine then re-rates every workload on a node where one starts or stops
//    (EngineOptions::rerate_node_neighbours).
//  - Noise: a per-workload factor 1 ± min(|N(0, noise_sd)|, noise_max), seeded by (seed,
//    workload id), so it does not depend on event order.
//
// Only sim:: code can use it: the predictor sees Physics through sim::Profiler's samples only.
// Immutable after construction but for a cache of the nodes' network loads (by the cluster's
// version) and one of each workload's noise factor (a function of the seed and its id); Rate
// and GpuPower are const in effect (thread-compatible).

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/apps.h"
#include "sim/ground_truth.h"
#include "sim/load_curve.h"

namespace tessera::sim {

struct PhysicsOptions {
  double noise_sd = 0.015;
  double noise_max = 0.04;
  // MPS contention (Ch. 6.4). front_kappa: ONNX MobileNet beside itself at 50 % MPS of a V100
  // drops to ≈ 15 QPS. sm_kappa: a ResNet costs a ResNet more than a MobileNet does ("intense
  // models, e.g. ResNet, influence system efficiency more"); 0 keeps only the front channel,
  // where MobileNets are the strongest aggressors of every engine.
  double mps_front_kappa = 0.49;
  double mps_sm_kappa = 1.5;
  // The two constants for a GPU model measured on its own (catalog name): used on that model
  // instead of the two above. Empty by default, so the thesis world keeps its V100 calibration;
  // MeasuredMpsConstants() has the fits of real campaigns (sim/contention_check.h).
  struct MpsConstants {
    double front_kappa = 0, sm_kappa = 0;
  };
  std::map<std::string, MpsConstants> mps_by_gpu;
  double mig_max = 0.03;
  // Below a share of a GPU's SMs (MIG slices × MPS threads) the thesis found its engines fail:
  // "stricter limits [than 25 %] incurred a high percentage of failures due to insufficient
  // memory and/or compute capacity" (Ch. 9.2.1). With `fail_below_share` > 0 a slice below it
  // fails at start and its isolated rate is 0 (the profiling campaign leaves it out, as the
  // thesis's grid of whole, half and quarter GPUs did, Ch. 6.1). With `fixed_floor_share` > 0 a
  // slice below that share runs instead, its fixed part (small kernels that fill a quarter in
  // one wave) stretched by floor / share. Both hold only on `small_share_models` (catalog names;
  // empty: every model) and never where the catalogue has a measurement. 0 (default): off.
  double fail_below_share = 0;
  double fixed_floor_share = 0;
  std::vector<std::string> small_share_models;
  double cpu_slowdown = 20.0;  // a CPU-only run of an app: fixed + 20 × GPU time per query
  // Fraction of the fixed part during which a kernel executes (GR_ENGINE_ACTIVE). 1: the
  // fixed part is latency-bound GPU work (Ch. 6.2, 9.3: `max` has the highest utilisation);
  // 0: host time, the GPU idle (the earlier reading).
  double fixed_active = 1.0;
  // Ch. 6.2: "power does not have significant changes when the GPU is empty and when it is
  // loaded". A fully loaded GPU of these models draws `flat_power_rise` more than an empty
  // one; a negative rise gives them the datasheet line too.
  double flat_power_rise = 0.2;
  std::vector<std::string> flat_power_models = {"V100-32GB", "A30-24GB"};
  // A power line measured on a model (catalog name): watts at SM load 0 and 1. Used on that
  // model before the two readings above. Empty by default.
  struct PowerLine {
    double idle_w = 0, full_w = 0;
  };
  std::map<std::string, PowerLine> power_by_gpu;
  // Best-effort co-runners' SM channel (001 Fig. 4, see above).
  double be_sm_kappa = 0.32;
  // How a partition's clients share it: MPS (space), or time slices without MPS (seed 001's
  // Time-sharing and PB-time-sharing baselines; 001 §2, §7.1). Chosen overhead: a preemption at
  // each slice boundary costs the high-priority client about 5 % (no seed gives it).
  enum class Sharing { kMps, kTimeSlice, kPriorityTimeSlice };
  Sharing sharing = Sharing::kMps;
  double ts_priority_overhead = 0.05;
  // Seed 002's co-location on a node's network link (its simulator re-rates every task of a
  // machine when one starts or finishes, ≈430; the only co-located profile 002 gives is Fig. 3,
  // a job beside Iperf). Off (every other world, and the disaggregation experiment's
  // `world=network-only` reading): a node's link carries remote-GPU streams only and only a
  // remote run is slowed. On: it also carries each GPU job's storage I/O (LinkUse::disk_share,
  // on the job's CPU node) and network-intensive jobs' traffic (LinkUse::load), and every job's
  // disk part stretches by 1 + link_stretch × l, l the others' load on its CPU node (≤ 1).
  bool link_colocation = false;
  // 002 Fig. 3: NW's time on the link goes from 17 % to 49 % of its run beside Iperf, i.e. from
  // 0.17/0.83 to 0.49/0.51 of the rest: × 4.69 (HotSpot's 0.2 % → 1 %: × 5.04).
  double link_stretch = 3.69;
};

// The MPS constants fitted to pairs measured on real GPUs (`tessera predict contention`):
// H200-141GB from data/h200-campaign (front 0.07, SM 0.15; held-out median error 3.5 % where
// the thesis's V100 constants give 35.7 %; docs/simulator.md "Measured on an H200").
std::map<std::string, PhysicsOptions::MpsConstants> MeasuredMpsConstants();

class Physics final : public GroundTruth {
 public:
  Physics(AppCatalog catalog, uint64_t seed, PhysicsOptions options = {});

  RunRate Rate(const model::PlacedWorkload& pw, const model::ClusterState& cluster) override;
  double GpuPower(model::GpuIndex g, double load, const model::ClusterState& cluster) override;
  // `id` serves `load` (an online service's requests over the day) from now on.
  void SetOfferedLoad(model::WorkloadId id, DailyLoad load) { offered_[id] = load; }
  void SetTime(double t) override { now_ = t; }
  bool HasOfferedLoad(const model::Workload& w) const override { return offered_.contains(w.id); }
  // The application's `usage` trajectory (apps.yaml), the same for every instance of it.
  // A staggered burst is shifted by U[0, period) drawn from (seed, the workload's id) and plays
  // on the clock (SetTime), not from the workload's start: a relaunch does not move it.
  std::optional<UsagePoint> UsageAt(const model::Workload& w, double since_start_s) const override;
  bool UsageStatesActivity(const model::Workload& w) const override;

  const AppCatalog& catalog() const { return catalog_; }

  // Noise-free isolated queries/s of `app` alone on a slice: `profile` indexes the model's MIG
  // profiles (-1: the whole GPU), `milli` is its MPS thread share of that partition. For the
  // simulator's own experiment setup (e.g. the thesis's SLO_4 / SLO_1), never for policies.
  double IsolatedQps(const AppSpec& app, model::GpuModelId gpu, int profile, int32_t milli) const {
    return IsolatedRate(app, gpu, profile, milli).qps;
  }
  // The ceiling of `app` on a cluster of `models`: its noise-free isolated queries/s on the
  // best configuration it fits in (whole GPU or any MIG profile, at MPS 100/50/25 %). A pod
  // whose SLO is above this cannot meet it under any placement (docs/simulator.md "What can be
  // met").
  double BestIsolatedQps(const AppSpec& app, std::span<const model::GpuModelId> models) const;
  // The same for workload `id` of `app`, its own noise factor included: what it runs at alone on
  // the best configuration. A pod whose SLO is above this meets it under no placement.
  double CeilingOf(const AppSpec& app, std::span<const model::GpuModelId> models,
                   model::WorkloadId id) const {
    return BestIsolatedQps(app, models) * NoiseFactor(id);
  }
  // Whether a slice of this configuration is below `fail_below_share` on a model the rule holds
  // for: every application without a measurement there fails on it.
  bool TooSmall(model::GpuModelId gpu, int profile, int32_t milli) const;

 private:
  friend class Profiler;

  // Noise-free isolated time per query of `app` on the configuration, split into its SM-bound
  // part (compute + memory), its fixed part and its host part.
  struct Isolated {
    double qps;
    double gpu_s;
    double fixed_s;
    double host_s;           // on the host, the GPU idle for it (AppSpec::host_s)
    double memory_fraction;  // of the SM-bound part
    double compute_share;    // of the GPU's SMs: MIG slices × MPS threads
    bool too_small = false;  // below fail_below_share: it fails there (qps 0)
    double gpu_duty() const { return gpu_s * qps; }
    double fixed_duty() const { return fixed_s * qps; }
  };
  // Kept per (application, configuration) for the catalogue's own applications.
  Isolated IsolatedRate(const AppSpec& app, model::GpuModelId gpu, int profile,
                        int32_t milli) const;
  bool SmallShareRuleHolds(const model::GpuModel& m) const;
  RunRate RateIn(const model::PlacedWorkload& pw, const model::ClusterState& cluster) const;
  // What the others on a workload's GPU do, each from its isolated behaviour at the utilisation
  // its offered load leaves it (no fixed point: interference is first order).
  struct CoRunners {
    double front = 0;       // its partition's co-runners: Σ fixed-part duty (the shared server)
    double sm = 0;          // Σ guaranteed co-runners' SM-bound duty
    double be_sm = 0;       // Σ best-effort co-runners' share of the SMs × SM-bound duty
    double mig_demand = 0;  // the GPU's other MIG instances: Σ memory-bound duty
    double others_active = 0, guaranteed_active = 0;  // engine-active fractions, its partition
    int sharers = 1;                                  // its partition's clients, itself included
  };
  CoRunners CoRunnersOf(const model::PlacedWorkload& pw, const model::Partition& part,
                        const model::ClusterState& cluster) const;
  // A workload's time per query on its partition, shared with `co` as options_.sharing says
  // (MPS channels, or time slices), and the share of the engine time it gets.
  struct SharedTime {
    double fixed_s;
    double gpu_s;  // the SM-bound part
    double time_share;
  };
  SharedTime ShareTime(const AppSpec& app, const Isolated& self, const model::Gpu& gpu,
                       bool best_effort, const CoRunners& co) const;
  // The workload's fixed multiplicative noise: a draw from a generator seeded by (seed, id),
  // kept (seeding the generator costs more than a rate).
  double NoiseFactor(model::WorkloadId id) const;
  // Σ network_share of the remote streams through each node (uncapped), and with
  // link_colocation the disk shares and link loads of what runs there; cached by version.
  const std::vector<double>& NetworkLoads(const model::ClusterState& c);
  // ≥ 1: how much slower `pw` runs for its remote slices (1 when it has none) and, with
  // link_colocation, for its storage I/O beside its node's other link users.
  double RemoteSlowdown(const model::PlacedWorkload& pw, const model::ClusterState& c);
  // What `pw` itself puts on node `n`'s link (its share of NetworkLoads there).
  double OwnLinkLoad(const AppSpec& app, const model::PlacedWorkload& pw, model::NodeIndex n,
                     const model::ClusterState& c) const;
  // min(1, λ(now) / capacity) for a workload with an offered load; 1 otherwise.
  double Utilisation(model::WorkloadId id, double capacity_qps) const;

  AppCatalog catalog_;
  uint64_t seed_;
  PhysicsOptions options_;
  model::GpuModelId reference_;
  std::unordered_map<model::WorkloadId, DailyLoad> offered_;
  double now_ = 0;
  const model::ClusterState* network_cluster_ = nullptr;
  uint64_t network_version_ = 0;
  std::vector<double> network_load_;
  mutable std::unordered_map<model::WorkloadId, double> noise_;  // NoiseFactor's, ≤ kMaxNoise
  static constexpr size_t kMaxNoise = size_t{1} << 20;
  Isolated ComputeIsolated(const AppSpec& app, model::GpuModelId gpu, int profile,
                           int32_t milli) const;
  // IsolatedRate's answers for catalog_.apps, by (app index, model, profile, milli) packed in
  // 64 bits; ≤ kMaxNoise entries (dropped whole beyond). The measured points are looked up by
  // their string key, which dominated the simulator's re-rating before.
  mutable std::unordered_map<uint64_t, Isolated> isolated_;
};

}  // namespace tessera::sim
