#pragma once
// Agent: the per-node GPU agent (DESIGN §6; thesis Ch. 8.2, "whenever a restart or a crash
// happens, the exporter immediately pulls the new data and updates Redis"). Each Tick():
//  - discovers the GPUs through its backend; a GPU that was known and no longer shows up is
//    kept as lost (until the agent restarts);
//  - publishes the inventory to the store under the node's name when it changed (first run
//    of this agent, MIG reshape, GPU lost) or the last publish failed; each publish carries a
//    new generation, and every agent start a new agent_id;
//  - renews the node's heartbeat (TTL) so a dead agent's node is noticed (Store::IsAlive);
//  - every attribution interval, reads the placements on this node for per-pod metric labels
//    and for the pod uid → pod map that names the pods of GPU processes (a process's pod uid
//    comes from the backend, or from its cgroup under options.proc_root: pod_resolver.h);
//  - first of all, answers the scheduler's MIG reshape requests for its GPUs (store/mig_reshape.h;
//    each request once, and once across restarts: an answer already in the store counts):
//    applies them through the backend's MigControl (mig_reshaper.h) within
//    options.reshape_budget_s, or only plans them (dry run), or refuses them (off); the answer
//    goes to the store, "applying" before and "done", "failed" or "planned" after, and the
//    discovery that follows publishes the new layout (a reshape holds the backend, so /metrics
//    waits for it: at most the budget and a rollback);
//  - samples the GPUs and feeds each one's MpsStuckDetector (seed 001 §4.2): a stuck MPS server
//    is logged once when it is judged stuck and once when it recovers, is exposed in /metrics
//    (tessera_mps_server_stuck) and marks its GPU mps_stuck in the inventory (a change, so it
//    is published).
// Failures (backend, store) never stop it: each distinct failure is logged once, counted in its
// own metrics, and it keeps serving what it last knew. Metrics() samples the backend now.
// health() is what /healthz and /readyz answer: live while Tick keeps completing (within
// options.stall_s of the last one); ready once the GPUs were discovered and, with a store, the
// last Tick's store calls (publish, heartbeat, placements) succeeded — else 503 with the
// store's own error, which names it ("redis 127.0.0.1:1/0: ... Connection refused").
// Thread-safe: Tick (one thread: the main loop) and Metrics/Ready (HTTP threads) may run
// concurrently; backend calls are serialised, and store calls hold no lock, so an outage that
// blocks a store call never blocks /metrics.
// Does not own the backend, the store or the clock.

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agent/gpu_backend.h"
#include "agent/metrics.h"
#include "agent/mps_detector.h"
#include "base/clock.h"
#include "base/health.h"
#include "store/store.h"

namespace tessera::agent {

struct AgentOptions {
  std::string node;  // the store key and the Hostname label
  double heartbeat_ttl_s = 15;
  double attribution_interval_s = 5;
  int64_t cpu_milli = 0;  // the node's, for the inventory
  int64_t memory_mib = 0;
  MpsStuckOptions mps_stuck;  // when a GPU's MPS server counts as stuck
  double stall_s = 30;        // /healthz fails when no Tick completed for this long
  // Where /proc/<pid>/cgroup of GPU processes is read (the host's /proc: the agent needs the
  // host's PID namespace, or the host's /proc mounted here).
  std::string proc_root = "/proc";
  enum class MigReshape { kApply, kDryRun, kOff };
  MigReshape mig_reshape = MigReshape::kApply;
  double reshape_budget_s = 5;  // the scheduler's (thesis Ch. 5: a reshape takes about 5 s)
};

struct AgentStats {
  int64_t generation = 0;
  int64_t publishes = 0;
  int64_t republishes = 0;  // the store had lost the inventory (read back), published again
  int64_t store_errors = 0;
  int64_t backend_errors = 0;
  bool published = false;       // the store holds the current inventory
  int64_t reshapes_done = 0;    // applied (or planned, in a dry run)
  int64_t reshapes_failed = 0;  // refused, failed or timed out (rolled back)
};

class Agent {
 public:
  // `store` may be null: discover and serve metrics only.
  Agent(AgentOptions options, GpuBackend& backend, store::Store* store, const Clock& clock);

  void Tick();
  // The /metrics body: DCGM metrics sampled now, then the agent's own.
  std::string Metrics();
  // Discovered at least once.
  bool Ready() const;
  const Health& health() const { return health_; }
  store::NodeInventory Inventory() const;
  AgentStats Stats() const;
  const std::string& agent_id() const { return agent_id_; }

 private:
  store::NodeInventory InventoryLocked() const;
  // Logs `message` unless it repeats the last one of this source; "" marks a recovery.
  void Note(std::string& last, const std::string& source, const std::string& message);
  // Feeds each GPU's MPS detector the round's samples and marks `gpus` mps_stuck from them.
  void ObserveMpsLocked(std::vector<store::GpuInventory>& gpus,
                        const std::vector<GpuSample>& samples);
  // The MIG reshape requests for this node's GPUs, answered (Tick thread; store calls without
  // mu_). A store that cannot be read is left to the rest of Tick to report.
  void AnswerReshapes();
  void AnswerReshape(const store::GpuInventory& gpu, const std::string& key,
                     const std::string& document);
  // What one Tick's store calls did (Tick thread, without mu_).
  struct StoreRound {
    bool published = false;           // the inventory was written
    std::string error;                // the store call that failed; "" if none did
    std::optional<Attribution> pods;  // the placements read this round, if due and read
    PodsByUid by_uid;
    bool inventory_lost = false;  // read back, the store no longer held what was published
  };
  // Folds a discovery and its readings into gpus_ (lost GPUs kept, MPS verdicts updated),
  // logging and counting failures; a changed inventory is a new generation, dirty_.
  void TakeDiscoveryLocked(Expected<std::vector<store::GpuInventory>>& found,
                           const std::optional<Expected<std::vector<GpuSample>>>& samples);
  // The round's store calls, without mu_: publishes `to_publish` if given, then renews the
  // heartbeat, then — when due, every attribution interval — reads the placements and reads
  // back the inventory published as `generation` (the store may have lost it: a Redis that
  // restarted empty, a deleted key); each only while the previous succeeded.
  StoreRound CallStore(const std::optional<store::NodeInventory>& to_publish, int64_t generation);
  // Records a round's store calls: dirty_, the stats, the pods and the store's health.
  void FinishStoreRoundLocked(const std::optional<store::NodeInventory>& to_publish,
                              StoreRound& round);

  AgentOptions options_;
  GpuBackend& backend_;
  store::Store* store_;
  const Clock& clock_;
  std::string agent_id_;
  Health health_;  // logs nothing itself: Note does
  std::string discovery_name_;

  std::mutex backend_mu_;  // taken before mu_
  mutable std::mutex mu_;
  bool discovered_ = false;
  std::vector<store::GpuInventory> gpus_;
  AgentStats stats_;
  bool dirty_ = false;
  Attribution pods_;
  PodsByUid pods_by_uid_;
  std::map<std::string, MpsStuckDetector> mps_;          // by GPU uuid
  double next_attribution_ = 0;                          // Tick thread only
  std::map<std::string, std::string> reshape_answered_;  // GPU uuid -> request; Tick thread
  std::string last_backend_error_, last_store_error_, last_sample_error_;
};

}  // namespace tessera::agent
