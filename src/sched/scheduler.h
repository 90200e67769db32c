#pragma once
// Scheduler: the one scheduling core both drivers run (DESIGN §1, §3). It owns the pending
// queue and the cycle — order → filter → score → select → reserve → bind — and asks a Policy
// at every step. Drivers (the simulator, Kubernetes) feed it events (Submit, Finish,
// ReshapeDone) and receive its actions through Hooks; time and randomness come in from them.
//
// Order: by Workload::priority, the highest first (kube-scheduler's PrioritySort; a pod's
// spec.priority from its PriorityClass), and within a priority the FIFO queue, or the policy's
// Order when CustomOrder(); a batch policy's PlaceBatch sees the queue in that order and
// replaces per-workload scoring for the cycle.
// Select: the highest score wins; ties go to the lowest node index (TieBreak::kFirst) or to a
// seeded random pick among the tied (kRandom, as kube-scheduler's selectHost).
// Reserve: the candidate's resizes of running neighbours, then ClusterState::Place, all or
// nothing; Bind: Hooks::bind — a failed bind undoes the reservation (and the resizes) and the
// workload goes back to the queue. A reshape and resizes in one candidate: the resizes are
// not applied (a reshaped GPU is empty). A reshape proposed with a placement makes the GPU
// unavailable and parks the workload until ReshapeDone(gpu) (the thesis: ~5 s, nothing else
// lands meanwhile). Unschedulable workloads stay queued, or are dropped when the driver asks
// (the FGD replay: a pod that does not fit fails for good). After the placements: the policy's
// proactive reshapes of idle MIG-capable GPUs, then its Policy::AfterCycle — its evictions
// (Hooks::evict), then its resizes (Hooks::resized).
//
// Long queues stay cheap (a saturated cluster may hold tens of thousands of pending
// workloads): the FIFO queue is kept in order as workloads arrive; within a cycle, once a
// request shape (RequestShape) finds no node, identical shapes behind it are not tried again
// until a reshape or resize changes the cluster, and the cycle ends as soon as every shape in
// the queue has failed; a cycle with neither a cluster change nor a new arrival since the last
// fruitless one places nothing without scanning. Workloads skipped this way keep their last
// reason (Policy::Filter's contract makes this exact). For a policy whose Filter reads only the
// node (OfferInputs::node_local_filter), each request shape's verdicts are kept per node under
// the node's version, so a workload's scoring calls Filter only on nodes that changed since its
// shape last visited them. A node whose Policy::ScoreCeiling is below the best offer so far is
// not scored; for a policy whose ceilings are cheap (OfferInputs::score_ceilings) under the
// lowest-node tie rule, the nodes are scored highest ceiling first, so that the search usually
// ends after a few nodes (the same choice as the scan in node order).
// A driver may also rule out nodes for a workload before the policy sees them (Hooks::admits:
// Kubernetes' node selector, affinity and taints).
// Preemption (SchedulerOptions::preemption, off by default): after the placements, the first
// queued workload (by priority) that finds no node but would fit on one once running workloads
// of lower priority left it (sched/preemption.h) has them evicted through Hooks::evict, one
// preemptor per cycle; the next cycle places it. A victim the driver declines ends the
// preemption there (the victims already evicted stay evicted). Each request shape is searched
// once a cycle (its first workload has the highest priority: if it cannot preempt, nobody
// behind it can), and a search that found nothing is not repeated until something arrives or
// the cluster changes.
// Not thread-safe: one driver thread calls it.

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "sched/kept_ranking.h"

namespace tessera::sched {

using model::ClusterState;
using model::GpuIndex;
using model::Workload;
using model::WorkloadId;

// One node's offer in a workload's scoring.
struct Offer {
  model::NodeIndex node = 0;
  double score = 0;
};

struct Hooks {
  // After the reservation; an Error undoes it and requeues the workload.
  std::function<Expected<void>(const Workload&, const model::Placement&, const model::Environment&)>
      bind;
  // A reshape of an idle GPU started; the driver calls ReshapeDone(gpu) when it is done. When
  // unset, reshapes complete at once.
  std::function<void(GpuIndex, const std::optional<model::MigLayout>&)> reshape;
  // The policy evicted a running workload (it has already left the cluster state); a move
  // (`e.requeue`) is the driver's to restart — Submit it again, or leave it to whatever
  // recreates it. An Error — the driver did not carry it out (a disruption budget refused it,
  // a dry run, a move budget spent) — puts the workload back where it ran.
  std::function<Expected<void>(const Workload&, const policy::Eviction& e)> evict;
  // The policy changed a running workload's MPS limits (Policy::AfterCycle); `now` is its placement
  // with the new limits, already in the cluster state. The driver applies them (the simulator
  // re-rates the workload); an Error — the driver cannot change a running workload's limits —
  // makes the core restore the old ones. Unset: resizes are applied to the state alone.
  std::function<Expected<void>(const Workload&, const model::Placement& now)> resized;
  // A workload found no node this cycle; `why` summarises the filter reasons.
  std::function<void(const Workload&, const std::string& why, bool dropped)> unschedulable;
  // Where the driver lets a workload run at all, asked before the policy on every node
  // (Kubernetes: the pod's node selector, required node affinity and the node's taints): the
  // refusal's reason (its text must outlive the cycle) or "" where it may run. A batch
  // policy's candidate on a node that refuses is not committed; the workload waits.
  std::function<std::string_view(const Workload&, model::NodeIndex)> admits;
  // The text of a workload's admission rules: workloads with equal texts are admitted by the
  // same nodes. It joins the request shape, so that the shapes a cycle skips and the verdicts
  // and rankings kept per shape never mix workloads under different rules. Set with `admits`.
  std::function<std::string(const Workload&)> admission_key;
  // Per-workload scoring picked `chosen` among `offers` (every node that made one, in node
  // order); called before reserve and bind, so a driver can say why this node (DESIGN §3
  // explain). Not called for PlaceBatch placements. When unset, offers are not collected.
  std::function<void(const Workload&, const policy::Candidate& chosen,
                     std::span<const Offer> offers)>
      scored;
  // Whether a workload may preempt others (Kubernetes: preemptionPolicy Never says no). Unset:
  // every workload may, when SchedulerOptions::preemption is on.
  std::function<bool(const Workload&)> may_preempt;
  // Whether a running workload may be evicted for one of higher priority (Kubernetes: a pod this
  // scheduler placed, with a controller to recreate it). Unset: every one may.
  std::function<bool(const Workload&)> preemptible;
};

enum class TieBreak { kFirst, kRandom };

// What decides whether any node can take a workload (Policy::Filter's contract): application,
// class (online or offline), whether it has an SLO, CPU, memory and the GPU request, plus what
// the policy declares in OfferInputs (the SLO value). Equal shapes are interchangeable for
// feasibility.
std::string RequestShape(const Workload& w, policy::Policy::OfferInputs inputs = {});
// RequestShape's last part when it holds the SLO's value, and a shape without it (the whole
// shape when it has none).
inline constexpr std::string_view kSloPart = "|slo=";
std::string_view WithoutSlo(std::string_view shape);

struct SchedulerOptions {
  bool drop_unschedulable = false;  // fail a workload that fits nowhere instead of requeueing
  TieBreak tie_break = TieBreak::kFirst;
  int max_binds_per_cycle = 0;  // 0 = unlimited
  // Evict running workloads of lower priority for one that fits nowhere (see above).
  bool preemption = false;
};

struct CycleStats {
  int attempted = 0;
  int bound = 0;
  int unschedulable = 0;
  int dropped = 0;
  int bind_failures = 0;
  int policy_errors = 0;  // proposals the cluster refused: a policy bug, logged
  int reshapes = 0;
  int evicted = 0;
  int evictions_declined = 0;  // the driver did not carry them out (Hooks::evict's Error)
  int resized = 0;             // running workloads given new MPS limits (Policy::AfterCycle)
  int parked = 0;              // waiting for a reshape to finish
  int preemptions = 0;         // workloads for which lower-priority ones were evicted
};

class Scheduler {
 public:
  Scheduler(ClusterState& cluster, policy::Policy& policy, const Clock& clock, Rng& rng,
            Hooks hooks, SchedulerOptions options = {});

  // Queues a workload; refuses an invalid request or an id already known.
  [[nodiscard]] Expected<void> Submit(Workload w);
  // One scheduling cycle over everything pending now.
  CycleStats RunCycle();
  // The workload finished (or was deleted): its slices are freed.
  [[nodiscard]] Expected<void> Finish(WorkloadId id);
  // Removes a queued workload that never ran (deleted while pending).
  bool Cancel(WorkloadId id);
  // The driver finished reshaping `gpu`: it becomes available and parked workloads bind.
  CycleStats ReshapeDone(GpuIndex gpu);

  size_t pending_count() const { return pending_.size(); }
  // The queue in its order: priority, highest first, then FIFO (a copy of pointers; valid until
  // the next call that changes it).
  std::vector<const Workload*> pending() const;
  // Why the workload was unschedulable in its last attempt ("" if never).
  std::string LastReason(WorkloadId id) const;
  const CycleStats& totals() const { return totals_; }
  const ClusterState& cluster() const { return cluster_; }

 private:
  struct Parked {
    Workload workload;
    model::Placement placement;
  };
  // A node's Filter verdict for one request shape, valid while the node's version is `version`.
  struct Verdict {
    uint64_t version = 0;  // node versions are never 0: a new entry is stale
    std::string_view reason;
  };
  // The verdicts kept for `shape`, sized to the cluster; null when the policy does not declare
  // node_local_filter (or declares live state).
  std::vector<Verdict>* VerdictsFor(const std::string& shape);
  // Scores every node; the winning candidate, or nullopt with `why` filled. `shape`: w's
  // RequestShape, under which its Filter verdicts and ranking are kept.
  std::optional<policy::Candidate> SelectNode(const Workload& w, const std::string& shape,
                                              std::string& why);
  // SelectNode's search for a policy that declares OfferInputs::node_local_score, under the
  // lowest-node tie rule: the shape's KeptRanking, brought up to date by re-rating the nodes
  // touched since: true with the choice in best_, false when no node offers (reasons_ counted
  // as the scan counts them), nullopt when the ranking cannot answer (the caller scans).
  std::optional<bool> SelectByRanking(const Workload& w, const std::string& shape);
  // SelectNode's search for a policy that declares OfferInputs::score_ceilings, under the
  // lowest-node tie rule: the feasible nodes scored highest ceiling first (the lower node among
  // equal ceilings) until the next ceiling is below the best offer; true with the choice in
  // best_ — the highest score, the lowest node among ties, as the scan in node order.
  bool SelectByCeiling(const Workload& w, std::vector<Verdict>* verdicts);
  // Filter's reason for node `n` (empty: it passes), from `verdicts` where kept. Defined here,
  // as CountReason, so that the node loops inline them.
  std::string_view FilterReason(const Workload& w, model::NodeIndex n,
                                std::vector<Verdict>* verdicts) {
    if (hooks_.admits) {  // the driver's rules first; not kept: they are not the node's state
      if (const std::string_view refused = hooks_.admits(w, n); !refused.empty()) return refused;
    }
    if (!verdicts) return policy_.Filter(w, n, cluster_).reason;
    Verdict& v = (*verdicts)[n];
    if (v.version != cluster_.node(n).version) {
      v = {cluster_.node(n).version, policy_.Filter(w, n, cluster_).reason};
    }
    return v.reason;
  }
  // One more node refused for `reason`. Filter reasons are a handful of static strings: a flat
  // list, compared by address first, keeps the hot loop free of allocations and comparisons.
  void CountReason(std::string_view reason) {
    for (auto& [r, count] : reasons_) {
      if ((r.data() == reason.data() && r.size() == reason.size()) || r == reason) {
        ++count;
        return;
      }
    }
    reasons_.emplace_back(reason, 1);
  }
  // Reserve + bind (or park behind a reshape). True if the workload left the queue.
  bool Commit(const Workload& w, policy::Candidate cand, CycleStats& stats);
  // Places what it can; true when everything left is known not to fit the cluster as it is.
  bool PlacePending(CycleStats& stats);
  bool ReserveAndBind(const Workload& w, const model::Placement& p, CycleStats& stats,
                      const std::vector<policy::ResizeTo>& resizes = {});
  void ProactiveReshapes(CycleStats& stats);
  // The end of the cycle: Policy::AfterCycle's evictions, then its resizes.
  void Evict(const std::vector<policy::Eviction>& evictions, CycleStats& stats);
  // SchedulerOptions::preemption: one queued workload's victims evicted, if any can be.
  void Preempt(CycleStats& stats);
  void Resize(const std::vector<policy::ResizeTo>& resizes, CycleStats& stats);
  void Accumulate(const CycleStats& s);

  ClusterState& cluster_;
  policy::Policy& policy_;
  const Clock& clock_;
  Rng& rng_;
  Hooks hooks_;
  SchedulerOptions options_;
  struct Queued {
    Workload workload;
    std::string shape;  // RequestShape(workload)
  };
  using Queue = std::list<Queued>;
  void Enqueue(Workload w);
  void Dequeue(Queue::iterator it);
  // PlacePending's two ways: a batch policy's placements, or each workload scored in `order`
  // (empty: the FIFO queue's).
  void CommitBatch(std::vector<policy::Candidate> batch, CycleStats& stats);
  bool PlaceEach(const std::vector<Queue::iterator>& order, CycleStats& stats);

  Queue pending_;  // by Workload::priority (highest first), then FIFO by (arrival, id)
  std::unordered_map<WorkloadId, Queue::iterator> queued_;
  std::unordered_set<WorkloadId> parked_ids_;
  std::unordered_map<std::string, int> shapes_;  // request shape -> pending workloads
  uint64_t arrivals_ = 0;                        // Enqueue calls, ever
  // (cluster version, arrivals) after the last cycle that placed nothing, if it was the last.
  std::optional<std::pair<uint64_t, uint64_t>> fruitless_;
  // The same after the last preemption search that found nothing (Preempt).
  std::optional<std::pair<uint64_t, uint64_t>> preempt_fruitless_;
  size_t changed_cycles_ = 0;  // cycles that changed the cluster (TESSERA_CHECK_INVARIANTS)
  std::unordered_map<WorkloadId, std::string> last_reason_;
  std::map<GpuIndex, std::vector<Parked>> parked_;
  CycleStats totals_;
  // Scratch and caches of the hot path (SelectNode, ProactiveReshapes).
  std::vector<std::pair<std::string_view, int>> reasons_;
  std::vector<Offer> offers_;         // collected only for Hooks::scored
  policy::Candidate scratch_, best_;  // ScoreInto's buffers: losing nodes allocate nothing
  std::vector<std::pair<double, model::NodeIndex>> by_ceiling_;  // (ceiling, node), best first
  // Filter verdicts per request shape and node (VerdictsFor); dropped whole when they would
  // exceed kMaxVerdicts entries.
  static constexpr size_t kMaxVerdicts = size_t{1} << 21;
  std::unordered_map<std::string, std::vector<Verdict>> verdicts_;
  std::string verdict_key_;  // the shape verdicts are kept under (reused: no allocation)
  size_t verdict_entries_ = 0;
  uint64_t verdicts_epoch_ = 0;  // OfferInputs::filter_epoch the kept verdicts follow
  // Rankings per request shape (SelectByRanking); dropped whole past kMaxRankingBytes.
  static constexpr size_t kMaxRankingBytes = size_t{64} << 20;
  std::unordered_map<std::string, KeptRanking> rankings_;
  std::vector<GpuIndex> mig_capable_gpus_;
  int mig_capable_gpus_seen_ = -1;
};

}  // namespace tessera::sched
