#pragma once
// k8s::Scheduler: Tessera as a standalone Kubernetes scheduler for pods whose
// spec.schedulerName is "tessera" (DESIGN §1, §6). A driver of the one scheduling core
// (sched::Scheduler), as the simulator's Engine is the other: it feeds the core pod and node
// events, and carries the core's decisions out through Hooks (Binder: ConfigMap, store,
// annotations, binding; an Event on the pod says where and with what score).
//
// Threads: two informers (pods, nodes) push changes into a queue; an elector thread keeps the
// Lease (only the leader schedules; every bind checks leadership first); ONE loop thread owns
// the ClusterState, the core and the policy, and does everything else: applying changes,
// cycles, binds, store inventory polling.
//
// State: ClusterState is rebuilt from scratch whenever leadership is gained, the node set or a
// node's inventory changes: nodes from the API server, their GPUs from the agents' inventories
// in the store (a GPU the agent reports lost is left out; one whose MPS server it judges stuck,
// `mps_stuck`, is held out of scheduling until the verdict clears: a new client would hang on
// the hung server), and every bound pod's placement from its tessera.io/placement annotation
// (re-recorded in the store when missing). Store placements of pods that are not bound (a
// crash between the store write and the binding) or gone are removed, so a restart or
// fail-over never double-books a slice. A pod whose annotations or requests are malformed is
// skipped with a Warning event naming the annotation, until the pod changes.
//
// Where a pod may go at all is kube-scheduler's rule (node_rules.h): its nodeSelector, its
// required node affinity and the nodes' NoSchedule / NoExecute taints refuse nodes before the
// policy sees them (sched::Hooks::admits), in kube-scheduler's words in FailedScheduling.
//
// The closed loop: every cycle (at least every retry_s while pods run) the policy's AfterCycle
// sees the pods' QPS (config.watch_qps names them to the telemetry) and may learn — what the
// learner observes is saved to the store (bounded) and replayed by the next leader — and
// evict or move: the Evictor (evictor.h) carries that out through the Eviction API, or the core
// puts the pod back. Resizes of running MPS clients are refused with an Event. Status() is the
// /status page's snapshot.
//
// Health (health(), served as /healthz and /readyz by `tessera schedule`): live while the
// scheduling loop and the elector keep turning (each within config.stall_s; the loop also
// counts each bind as a turn). A probe thread checks every probe_interval_s whether the
// dependencies answer: the API server (the elector's last round answered, within
// max(lease duration, 3 retry periods); both informers listed and watching) and the store
// (Store::Ping, leader or standby alike); each failure is logged once per change, and the
// role (leader, or standby and who holds the Lease) is stated.
// Public methods may be called from any thread.

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/clock.h"
#include "base/health.h"
#include "base/rng.h"
#include "k8s/api_client.h"
#include "k8s/binder.h"
#include "k8s/cluster_view.h"
#include "k8s/evictor.h"
#include "k8s/informer.h"
#include "k8s/leader.h"
#include "k8s/objects.h"
#include "k8s/status_page.h"
#include "model/cluster.h"
#include "policy/job_profile.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "store/mig_reshape.h"
#include "store/store.h"

namespace tessera::predict {
class Predictor;
}
namespace tessera::telemetry {
class Telemetry;
}

namespace tessera::k8s {

struct SchedulerConfig {
  std::string scheduler_name = "tessera";
  std::string policy = "first-fit";
  nlohmann::json policy_options = nlohmann::json::object();
  uint64_t seed = 1;
  // For predicting policies (`predictive`); not owned, must outlive the daemon.
  const predict::Predictor* predictor = nullptr;
  // The same predictor, writable: a pod's tessera.io/feature.* declarations are folded in (and
  // the predictor refitted) before the pod is scheduled. Only the scheduling loop touches it.
  predict::Predictor* learner = nullptr;
  const telemetry::Telemetry* telemetry = nullptr;
  // Tells the telemetry whose QPS to read: the placed pods with an SLO, "<namespace>/<pod>" →
  // their tessera.io/qps-query ("" for the cluster-wide template). Called from the loop when
  // the set changes; unset: no pod's QPS is read (slo-aware neither learns nor moves).
  std::function<void(std::map<std::string, std::string>)> watch_qps;
  // A pod's QPS is read only once it has been placed this long: a rate over a window longer
  // than the pod's life so far reads low (Prometheus divides the increase by the whole window),
  // and a policy would judge — and move — a pod that serves its SLO. `tessera schedule` sets it
  // to its query's window (--qps-min-age, 60 s for Triton's [1m]); 0 reads at once.
  double qps_min_age_s = 0;
  // Optional: batch applications' profiles (drmaestro's φ), e.g. JobProfilesFromPredictor.
  const policy::JobProfiles* job_profiles = nullptr;
  // How policies' evictions and moves reach the cluster (k8s/evictor.h); off by default.
  EvictionOptions evictions;
  // Priority preemption (sched/preemption.h): a pod that fits nowhere has lower-priority pods
  // this scheduler placed, with a controller, evicted through the same Evictor (so budgets and
  // PodDisruptionBudgets hold). Only while evictions are on; a pod whose preemptionPolicy is
  // Never waits instead.
  bool preemption = true;
  // What the learner observed is kept in the store (newest this many), so that a restarted
  // scheduler or a new leader learns it again.
  size_t max_observations = 10000;
  LeaderOptions leader;         // identity must be unique per replica
  double inventory_poll_s = 5;  // how often store inventories are re-read
  double retry_s = 1;           // unschedulable pods are retried at least this often
  double event_repeat_s = 60;   // an identical FailedScheduling event is not re-posted sooner
  InformerOptions informer;     // timeouts and backoff (path is set per informer)
  // /healthz fails when a loop has not turned for this long: a bind is four API calls of at
  // most 30 s each, a Lease round two.
  double stall_s = 180;
  double probe_interval_s = 1;  // how often /readyz's dependencies are checked
  // A MIG reshape request that the node's agent has not answered for this long counts as
  // failed: the agent's 5 s budget, its 1 s round and the inventory poll (store/mig_reshape.h).
  double reshape_timeout_s = 15;
  // A GPU whose reshape failed is held out of scheduling this long, doubled with each failure
  // in a row (up to 10 min), so a failing reshape is not asked for again every cycle.
  double reshape_backoff_s = 60;
};

struct SchedulerStats {
  int64_t bound = 0;
  int64_t bind_failures = 0;
  int64_t invalid_pods = 0;  // pods skipped for malformed annotations or requests
  int64_t unschedulable = 0;
  int64_t rebuilds = 0;
  int64_t cycles = 0;
  int64_t finished = 0;  // placements released (pod deleted or done)
  int64_t reshapes = 0;
  int64_t reshape_failures = 0;       // failed, refused, planned only (dry run) or unanswered
  int64_t evicted = 0;                // through the Eviction API
  int64_t evictions_declined = 0;     // proposed and not carried out (Evictor's other results)
  int64_t resizes_refused = 0;        // a running MPS client's limit cannot change
  int64_t observations = 0;           // learned from the pods' QPS (and kept in the store)
  int64_t observations_restored = 0;  // replayed from the store on taking the lead
  size_t gpus_mps_stuck = 0;          // held out: the agent judges their MPS server stuck
  size_t gpus_reshape_held = 0;       // held out: their MIG reshape failed (for the backoff)
  bool leading = false;
  size_t pending = 0;
  size_t unschedulable_pending = 0;  // of `pending`: their last attempt found no node
  size_t placed = 0;
  // kube-scheduler's schedule_attempts_total and scheduling_attempt_duration_seconds, by
  // result: each attempt's time runs from the end of the previous attempt of its cycle (or the
  // cycle's start) to its bind or its "no node" (score, filter and the bind's API calls).
  static constexpr std::array<double, 15> kLatencyBuckets = {
      0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128,
      0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384};  // s, as kube-scheduler's
  struct Attempts {
    int64_t count = 0;
    double sum_s = 0;
    std::array<int64_t, kLatencyBuckets.size()> buckets{};  // cumulative on export only
  };
  std::map<std::string, Attempts> attempts;  // "scheduled", "unschedulable", "error"
};

class Scheduler {
 public:
  Scheduler(ApiClient& api, store::Store& store, const Clock& clock, SchedulerConfig config);
  ~Scheduler();

  // Checks the policy name and options, then starts the informers and the loop.
  [[nodiscard]] Expected<void> Start();
  // Graceful: the loop ends, the Lease is released.
  void Stop();
  // As SIGKILL would leave things: threads end, nothing is released or undone (tests).
  void Kill();
  SchedulerStats stats() const;
  const std::string& policy() const { return config_.policy; }
  const Health& health() const { return health_; }
  // The status page's view as of the loop's last turn (at most a second old while leading).
  StatusView Status() const;
  // Per (policy, result): what became of the policies' evictions (Evictor).
  std::map<std::pair<std::string, std::string>, int64_t> eviction_counts() const {
    return evictor_.counts();
  }

 private:
  struct Change {
    bool pod = true;
    EventType type = EventType::kAdded;
    nlohmann::json object;
  };
  struct Known {  // a pod the core knows, by workload id
    PodRef ref;
    bool placed = false;
    double placed_at = 0;  // clock_ time it was bound (or found bound by a rebuild)
    // Seen Ready=False since it was bound (its server starting, restarting or loading its
    // model) and not seen Ready since; when it is, its QPS age runs from then (ready_at).
    bool not_ready = false;
    double ready_at = 0;
    NodeRules rules;  // the nodes it may use (node_rules.h), as it was queued
    bool preempts = true;  // spec.preemptionPolicy is not Never (as it was queued)
  };

  // What every policy this scheduler makes is given (the driver's data, never a choice).
  policy::PolicyContext PolicyInputs();
  void Loop();
  void Elect();
  void Probe();
  void CheckDependencies();
  void Lead();
  void Apply(const Change& c);
  void OnPod(EventType type, const Pod& pod);
  void SubmitPod(const Pod& pod);
  // Folds the pod's declared features into config_.learner (refitting when they are new).
  void DeclareFeatures(const Pod& pod, const model::Workload& w);
  void Release(model::WorkloadId id, const std::string& why);
  // Rebuild: a fresh pod LIST, nodes from the inventories, the bound pods' placements back in
  // (RestoreBoundPod: true when it held a Tessera placement), store placements no bound pod
  // backs dropped, a new core with a new policy, our pending pods submitted. False, keeping the
  // old view, when the API server or the store cannot be read.
  bool Rebuild();
  bool RelistPods();
  std::unique_ptr<model::ClusterState> ClusterFromInventories();  // null: store unreachable
  // Marks unavailable the GPUs whose reshape failed (for the backoff) or whose MPS server the
  // agent judges stuck; after the bound pods are restored, which keep their slices there.
  void HoldOutGpus(model::ClusterState& cluster);
  // Hooks::admits: why node `n` refuses the pod (its selector, affinity, the node's taints).
  std::string_view Admits(const model::Workload& w, model::NodeIndex n);
  // Logs each GPU that became, or stopped being, reported with a stuck MPS server.
  void NoteMpsStuck(const std::map<std::string, std::string>& stuck);  // uuid -> node
  bool RestoreBoundPod(model::ClusterState& cluster, const Pod& pod,
                       const std::unordered_map<model::WorkloadId, Known>& before);
  void DropUnbackedPlacements(const std::set<std::string>& bound_uids);
  void StartCore(std::unique_ptr<model::ClusterState> cluster);
  bool InventoriesChanged();
  Expected<void> BindHook(const model::Workload& w, const model::Placement& p,
                          const model::Environment& env);
  void Unschedulable(const model::Workload& w, const std::string& why);
  void Attempted(const std::string& result);  // one attempt ended now (stats_.attempts)
  void RequestReshape(model::GpuIndex gpu, const std::optional<model::MigLayout>& layout);
  // Reads the agents' answers to the outstanding reshape requests: a done one, or a failed or
  // unanswered one (its GPU then held out), rebuilds the view, which re-queues the pods parked
  // behind it. Also ends expired hold-outs.
  void CheckReshapes();
  void Warn(const Pod& pod, const std::string& reason, const std::string& message);
  // The core's evict hook: the pod through the Evictor; an Error when it was not evicted.
  Expected<void> EvictHook(const model::Workload& w, const policy::Eviction& e);
  // A running pod preemption may evict: one this scheduler placed, with a controller to
  // recreate it, not terminating, and without a refused eviction waiting for its retry.
  bool Preemptible(model::WorkloadId id) const;
  Expected<void> ResizeHook(const model::Workload& w, const model::Placement& now);
  void RetryEvictions();               // the refused evictions due again
  void Evicted(model::WorkloadId id);  // its slices and store placement released
  // Observations: replayed from the store on taking the lead (false: the store is out, try
  // again), saved after a cycle that made new ones.
  bool LoadObservations();
  void SaveObservations();
  void WatchQps();      // tells the telemetry which pods' QPS to read
  void UpdateStatus();  // rebuilds status_ (loop thread), at most once a second
  StatusGpu StatusOfGpu(model::GpuIndex g) const;
  bool Ours(const Pod& pod) const { return pod.scheduler_name == config_.scheduler_name; }

  ApiClient& api_;
  store::Store& store_;
  const Clock& clock_;
  SchedulerConfig config_;
  Binder binder_;
  LeaderElector elector_;
  std::unique_ptr<Informer> pods_informer_;
  std::unique_ptr<Informer> nodes_informer_;

  std::thread loop_;
  std::thread elector_thread_;  // renews the Lease: a long cycle must not let it lapse
  std::thread probe_thread_;    // checks the dependencies for /readyz
  std::atomic<bool> stop_{false};
  std::atomic<bool> killed_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Change> changes_;
  SchedulerStats stats_;
  StatusView status_;
  std::string election_error_;       // the elector's last round, "" when it went through
  double election_answered_at_ = 0;  // when a round last went through

  Health health_;
  std::string api_name_;  // "api server https://..."

  // Loop thread only.
  Evictor evictor_;
  struct Observation {
    int64_t seq = 0;
    std::string app, config;
    double qps = 0;
  };
  std::deque<Observation> observations_;  // as saved, oldest first
  std::vector<Observation> unsaved_;
  int64_t replayed_seq_ = 0;  // the newest store observation folded into the learner
  bool replaying_ = false;
  bool need_observations_ = true;
  std::map<std::string, std::string> qps_watched_;
  double status_at_ = -1;
  double attempt_start_ = 0;  // the end of the cycle's last attempt, or its start
  std::unordered_set<model::WorkloadId> unschedulable_;  // pending, last attempt found no node
  Rng rng_;
  std::map<std::string, Pod> pods_;    // by uid
  std::map<std::string, Node> nodes_;  // by name
  std::unique_ptr<model::ClusterState> cluster_;
  std::unique_ptr<policy::Policy> policy_;
  std::unique_ptr<sched::Scheduler> core_;
  WorkloadIds ids_;
  std::unordered_map<model::WorkloadId, Known> known_;
  std::unordered_set<model::WorkloadId> resize_warned_;  // pods told their MPS share stays
  std::map<std::string, std::string> invalid_;           // uid -> the message last posted
  std::map<std::string, double> queued_at_;              // uid -> when first queued
  std::map<std::string, std::pair<std::string, double>> last_warning_;  // uid -> (msg, time)
  std::map<std::string, std::string> inventory_seen_;  // node -> agent_id/generation
  struct SentReshape {
    store::MigReshapeRequest request;
    double sent = 0;
  };
  std::map<std::string, SentReshape> reshapes_;  // outstanding, by GPU uuid
  struct HeldOut {
    double until = 0;
    int failures = 0;  // in a row
    bool active = false;
  };
  std::map<std::string, HeldOut> held_out_;  // GPUs whose reshape failed, by uuid
  std::set<std::string> mps_stuck_;          // GPUs whose agent judges the MPS server stuck
  std::set<std::string> refusal_texts_;      // Admits' reasons naming a taint, kept for the core
  // The last workload the core scored and ScoreSummary of its offers, for its Scheduled event.
  std::pair<model::WorkloadId, std::string> scored_{-1, ""};
  bool leading_ = false;
  bool need_rebuild_ = true;
  bool dirty_ = true;
  double next_retry_ = 0, next_poll_ = 0;
};

}  // namespace tessera::k8s
