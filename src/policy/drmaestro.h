#pragma once
// drmaestro — flow scheduling of batch jobs onto disaggregated GPUs (seed 002, DRMaestro: eqs.
// 5–8, Alg. 1–2). Each cycle takes the pending jobs that fit in the free resources (at most twice
// as many GPUs as are free), longest-waiting first, and solves two min-cost flows in turn
// (flow::MinCostFlow, LEMON's network simplex):
//
//  1. CPU and memory. Job → class aggregator → machine → sink, one unit per job. A class is the
//     machines that can also give the job its GPUs locally, or (with `disaggregate`) those that
//     cannot, each split by network-load bucket (`load_buckets`) when `network_aware`: 002's
//     aggregator X. A machine takes as many jobs as the smallest request of the cycle fits in
//     its free CPU and memory, each normalised by the cluster's largest node (eq. 5); a job on
//     the local class also needs its GPU count free there.
//  2. GPUs. One sub-task per GPU of every job placed in phase 1, with a preference arc to its
//     phase-1 machine (P = 1) and, with `disaggregate`, arcs to the other GPU nodes through
//     per-(model, load bucket) aggregators (P = `remote_preference`); a GPU node takes as many
//     sub-tasks as it has idle whole GPUs (MIG off) of an allowed model.
//
// Every job and sub-task also has an arc to "unscheduled". Costs (eqs. 6–8), × 1000 and rounded
// to integers:
//   Ut(φ) = (τ − φ)/τ if φ ≤ τ, else (τ − φ)/τ · (10 − z)/9   (τ = Workload::goal_s, z = goal_z)
//   placement: (1 − Ut(φ)) · P;  unscheduled: (1 − Ut(φ_local)) · `unscheduled_preference` + W,
// φ the job's expected run time there: queries × its profile's seconds per query on the GPU
// model (JobProfile, 002's offline "inference engine"), × remote_slowdown on a remote GPU, and,
// with `network_aware`, × (1 + network_sensitivity · l) on a remote GPU, l the busier node's
// network load, plus local_sensitivity · l_home (its own node's link), local or remote. A node's
// load is Σ network_share of the remote streams through it and Σ link_load of what runs there,
// by the profiles; a bucket's midpoint. A job without a goal or a profile costs a neutral
// 1 − Ut = 1 (002: "unknown ... a neutral cost"). W, the waiting counter, grows by one each
// cycle a job of the batch is left unscheduled, and orders the queue (CustomOrder: W, then
// arrival). Gang: a job with any sub-task unscheduled stays unscheduled whole. `network_aware`
// also postpones (002: "if the placement does not satisfy the task's SLO, the placement will be
// postponed"): an arc whose φ misses the goal — remote, or local on a loaded link — is left out
// while W < `max_postpone_cycles` (after that the job may take it, so no job waits forever
// while it fits). Phase-1 placements are checked one by one against the machine's real
// free CPU and memory (slots are an estimate); one that no longer fits stays unscheduled.
//
// Remote slices (model::Slice::remote) hold a whole GPU of another node; the job's CPU and
// memory stay on its phase-1 machine. Requests other than whole GPUs (a share, a MIG profile)
// are placed first-fit, outside the flow. Explain prints the last cycle's networks. Not
// thread-safe.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "policy/job_profile.h"
#include "policy/policy.h"
#include "policy/registry.h"

namespace tessera::policy {

struct DrmaestroOptions {
  bool disaggregate = true;
  bool network_aware = false;
  double remote_preference = 2.0;
  double unscheduled_preference = 2.0;
  int load_buckets = 10;
  // At most 100,000: a driver keeps cycling while jobs are held back (HoldsBack), even on an
  // idle cluster, so the bound is also how long such a run can last (a day at 1-s cycles).
  int max_postpone_cycles = 30;
  // 002 eq. 5 as written: a machine's supply is Σ over CPU and memory of its free amount over
  // the cluster's largest, so spare memory can stand in for missing CPU; it takes as many jobs
  // as that sum holds the cycle's smallest request, also summed. Off (ours): slots per resource,
  // the smallest (docs/policies.md, "Departures from 002"; both run in docs/results.md).
  bool summed_supply = false;
};

// 002 eq. 6. τ > 0; z in 1..10.
double DrmaestroUtility(double phi, double tau, int z);

// The last cycle's flow networks, for explain and tests.
struct DrmaestroArc {
  std::string from, to;  // "job 3", "unscheduled", "local K80 load 0 (shape 0)", "node-1", "sink"
  int64_t capacity = 0;
  int64_t cost = 0;
  int64_t flow = 0;  // in the optimum
};
struct DrmaestroPhase {
  int nodes = 0;
  std::map<std::string, int> arcs_by_kind;  // "job→class", "class→machine", …
  std::vector<DrmaestroArc> network;        // every arc in order, when RecordNetworks(true)
  int64_t total_cost = 0;
  int placed = 0;       // jobs (phase 1) or sub-tasks (phase 2) on a machine
  int unscheduled = 0;  // on the unscheduled arc
};
struct DrmaestroJobLine {
  WorkloadId id = 0;
  int64_t waited = 0;            // W before this cycle
  int64_t unscheduled_cost = 0;  // its arc to unscheduled
  // Its chosen arcs' costs: phase 1's, and the sum of phase 2's (one per GPU).
  std::optional<int64_t> phase1_cost, phase2_cost;
  std::string outcome;  // "node-3, GPUs on node-3 and node-7", or why unscheduled
};
struct DrmaestroCycle {
  DrmaestroPhase phase1, phase2;
  int postponed = 0;  // arcs network_aware left out this cycle (a job may go there later)
  std::vector<DrmaestroJobLine> jobs;  // the batch, in queue order
};

class Drmaestro final : public Policy {
 public:
  Drmaestro(DrmaestroOptions options, const JobProfiles* profiles);
  std::string_view name() const override { return "drmaestro"; }
  bool CustomOrder() const override { return true; }
  void Order(std::vector<const Workload*>& pending) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  bool Batches() const override { return true; }
  std::optional<std::vector<Candidate>> PlaceBatch(std::span<const Workload* const> pending,
                                                   const ClusterState& c) override;
  std::string Explain(const Workload& w, const ClusterState& c) override;
  // While network_aware postpones: its W counts cycles, so a postponed job waits for cycles,
  // not for the cluster to change. True when the last cycle left any arc out, even if its job
  // went elsewhere (a superset, ended by max_postpone_cycles).
  bool HoldsBack() const override { return last_.postponed > 0; }

  const DrmaestroCycle& last_cycle() const { return last_; }
  // Keep every arc of the next cycles' networks in last_cycle() (off by default: a cycle of
  // thousands of jobs has hundreds of thousands).
  void RecordNetworks(bool on) { record_ = on; }
  int64_t waited(WorkloadId id) const;

 private:
  struct Job;
  struct Cycle;        // one PlaceBatch's working state
  struct HostNetwork;  // phase 1's flow network
  struct GpuNetwork;   // phase 2's
  // φ: the job's expected run time on `gpu_model` (-1: the fastest allowed), remote or not, at
  // network load `load` on its stream and `home_load` on its own node's link; -1 when unknown
  // (no goal or no profile).
  double Phi(const Job& j, model::GpuModelId gpu_model, bool remote, double load,
             double home_load) const;
  int64_t Cost(const Workload& w, double phi, double preference) const;

  // PlaceBatch's steps, in order: the batch; phase 1 (classes, its network, flows → machines);
  // phase 2 (its network, flows → GPUs); the gang rule and the placements.
  void TakeBatch(std::span<const Workload* const> pending, Cycle& y);
  void BuildClasses(Cycle& y) const;
  bool PlaceHosts(Cycle& y);  // false: the flow failed and the whole batch waits
  HostNetwork BuildHostNetwork(Cycle& y) const;
  void RecordHostNetwork(const Cycle& y, const HostNetwork& net, const std::vector<int64_t>& units);
  void HostsFromFlow(Cycle& y, const HostNetwork& net, const std::vector<int64_t>& units);
  void PlaceGpus(Cycle& y);
  GpuNetwork BuildGpuNetwork(const Cycle& y) const;
  void RecordGpuNetwork(const Cycle& y, const GpuNetwork& net, const std::vector<int64_t>& units);
  void GpusFromFlow(Cycle& y, const GpuNetwork& net, const std::vector<int64_t>& units);
  std::vector<Candidate> Placements(Cycle& y);

  DrmaestroOptions options_;
  const JobProfiles* profiles_;
  std::unordered_map<WorkloadId, int64_t> waited_;
  DrmaestroCycle last_;
  bool record_ = false;
};

std::vector<OptionInfo> DrmaestroOptionList();
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeDrmaestro(const PolicyContext& context,
                                                              const nlohmann::json& options);

}  // namespace tessera::policy
