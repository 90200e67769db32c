#pragma once
// muxflow — online inference and offline training on one GPU (seed 001, MuxFlow §4–§5). Each
// online service holds a whole GPU (MIG off) as a guaranteed MPS client; at most one offline job
// shares it as a best-effort client (model::Slice::best_effort: its SM share is a cap, not a
// reservation), kept out of the service's way by:
//
//  - Dynamic SM (`dynamic_sm`, §4.3): the offline MPS share is 100 % − the online service's SM
//    activity (DynamicSmPercent), re-applied at the end of a cycle (Policy::AfterCycle's
//    resizes) when it moves by `resize_step` points or more; off, the offline job runs at a
//    fixed share, `fixed_sm_percent` (default MPS's 100 %; 001 Fig. 8 contrasts dynamic SM with
//    a fixed 40 %).
//    The service's activity is the telemetry's SmActivity by the service's workload name (a
//    per-process reading: NVML's process utilisation), else, while no offline job is there,
//    the GPU's own SmActivity. Unknown: no offline job is placed there and none resized.
//  - A memory quota (`memory_quota`, §6: 40 %): an offline job gets at most that share of the
//    device's memory (its request, else the whole quota), and only while the telemetry's memory
//    in use leaves that much free (a service's cache may hold more than it reserved); an
//    online service that states no memory reserves the rest.
//  - SysMonitor (§4.1, policy/sys_monitor.h): one state machine per online GPU, fed from
//    telemetry whenever its version changes (GPU utilisation, the service's SM activity as
//    dynamic SM reads it — the GPU's total is near 100 % by design once a job fills the rest —
//    memory used, SM clock drop below the highest clock the GPU has reported). Offline jobs go only
//    to Healthy GPUs; Overlimit evicts them (Policy::AfterCycle's evictions, requeued where the
//    driver restarts moved work — PolicyContext::can_move — the simulator resuming them from
//    their last checkpoint). A GPU without telemetry stays Init: nothing offline goes there.
//  - Matching (`matching`, §5, Alg. 1): every `period_s` (001: 15 min) the pending offline
//    jobs are matched to the free Healthy online GPUs by maximum-weight bipartite matching
//    (flow::MaxWeightBipartiteMatching). The weight of job v on GPU u is v's predicted
//    normalised throughput there: isolated(v, u's model, whole, p) · (1 − f(v, s)) /
//    isolated(v, u's model, whole, 100), p the dynamic share and s u's service (the predictor
//    — CF over profiled pairs — stands in for 001's MLP; an application the predictor does not
//    know weighs p/100 · (1 − the kind's mean f)). Weights are scaled by 10^6 to integers.
//    Off, pending offline jobs take the first free Healthy GPU in cluster order: as they come,
//    or with `offline_period` in rounds at the same period, in arrival order (001 §6 invokes
//    its scheduler periodically for every offline job; an ablation that drops only the
//    matching keeps the rounds).
//    Running offline jobs are not re-matched (a move costs a restart from a checkpoint).
//
// Online services (one GPU) take the first whole GPU that hosts no other service, preferring one
// without offline work; any other request (several GPUs, a MIG profile, CPU only) is placed
// first-fit. Not thread-safe; the predictor and telemetry must outlive it.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "policy/sys_monitor.h"

namespace tessera::policy {

struct MuxflowOptions {
  bool dynamic_sm = true;
  int fixed_sm_percent = 100;  // the offline share when dynamic_sm is off
  bool matching = true;
  bool offline_period = false;  // without matching: place offline work only at the rounds
  double period_s = 900;
  double memory_quota = 0.40;
  int min_offline_percent = 10;  // a GPU whose service leaves less takes no offline job
  int resize_step = 5;           // percentage points
  SysMonitorOptions monitor;
  std::string interference_kind = "mps";
  // The throughput a job's normalised throughput divides by: empty, its exclusive throughput
  // on the GPU of the edge (001 §5 read literally: the weight of any GPU is at most 1); a GPU
  // model's name, its exclusive throughput on that model (001's profiler runs on dedicated
  // GPUs of one kind), so a faster GPU weighs more. Both readings in docs/results.md.
  std::string reference_gpu;
};

std::vector<OptionInfo> MuxflowOptionList();
[[nodiscard]] Expected<MuxflowOptions> ParseMuxflowOptions(const nlohmann::json& options);
// The registry's factory: needs PolicyContext::predictor and a clock; telemetry feeds it.
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeMuxflow(const PolicyContext& context,
                                                            const nlohmann::json& options);

// 100 − ⌈100 · online_activity⌉, within 0..100 (activity clamped to 0..1).
int DynamicSmPercent(double online_activity);
// ⌊quota · memory_mib⌋.
int64_t OfflineMemoryCap(int64_t memory_mib, double quota);

// One offline job matched in the last round, for Explain.
struct MuxflowMatch {
  GpuIndex gpu = 0;
  int percent = 0;     // its MPS share there
  double weight = 0;   // predicted normalised throughput there
  double next = 0;     // its best weight on any other free GPU (0: none)
  int candidates = 0;  // free Healthy GPUs it could have gone to (this one included)
  double at_s = 0;     // when
};

class Muxflow final : public Policy {
 public:
  Muxflow(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
          const Clock& clock, MuxflowOptions options = {}, bool can_move = false);
  ~Muxflow() override;

  std::string_view name() const override { return "muxflow"; }
  OfferInputs OffersDependOn() const override { return {.live_state = true}; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  bool Batches() const override { return true; }
  std::optional<std::vector<Candidate>> PlaceBatch(std::span<const Workload* const> pending,
                                                   const ClusterState& c) override;
  // SysMonitor's evictions, then dynamic SM's resizes of the offline jobs that stay.
  CycleActions AfterCycle(const ClusterState& c) override;
  std::string Explain(const Workload& w, const ClusterState& c) override;

  // The GPU's SysMonitor, or null when it hosts no online service (or was never sampled).
  const SysMonitor* Monitor(GpuIndex g) const;
  std::optional<MuxflowMatch> LastMatch(WorkloadId offline) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::policy
