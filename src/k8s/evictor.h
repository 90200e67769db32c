#pragma once
// Evictor: how a policy's evictions and moves reach a cluster — through the Eviction API
// (POST pods/{name}/eviction, policy/v1), which honours PodDisruptionBudgets, never a DELETE.
//
// Contract, for each eviction a policy proposes (Try):
//  - mode off: refused ("evictions are off"); the policy is not told it may move (can_move).
//  - a pod without a controller (no ownerReference with controller: true) is never evicted:
//    nothing would recreate it.
//  - a move budget: at most max_per_hour evictions in the last hour cluster-wide and
//    max_per_node_hour per node; a proposal over budget is refused, not queued.
//  - dry run: everything above is checked, the eviction is recorded and counted as "dry_run"
//    and charged to the budget (so the dry run shows what the budget would let through), but
//    no API call is made.
//  - the API answers 201: evicted. 429 (a PodDisruptionBudget refuses it now): refused, and
//    the pod is kept as a retry (Due) for retry_s later, as long as it stays where it was —
//    never forced. Any other answer: failed.
// Every outcome is counted per (policy, result), posted as an Event on the pod (Normal
// "Evicted"/"EvictionDryRun", Warning "EvictionRefused"; an identical refusal at most once per
// event_repeat_s) and kept in the recent list (status page). Not thread-safe: the scheduling
// loop owns it; counts() and recent() copy under a lock for other threads.

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "base/clock.h"
#include "k8s/api_client.h"
#include "k8s/binder.h"
#include "k8s/objects.h"

namespace tessera::k8s {

struct EvictionOptions {
  enum class Mode { kOff, kDryRun, kOn };
  Mode mode = Mode::kOff;
  int max_per_hour = 30;      // cluster-wide, in any sliding hour
  int max_per_node_hour = 6;  // per node
  double retry_s = 30;        // after a 429
  double event_repeat_s = 60;
};

// "off", "dry-run", "on".
[[nodiscard]] Expected<EvictionOptions::Mode> ParseEvictionMode(std::string_view text);

struct EvictionRecord {
  double at = 0;    // Unix seconds
  std::string pod;  // "<namespace>/<pod>"
  std::string node;
  std::string policy;
  std::string result;  // evicted | dry_run | refused_pdb | no_controller | budget | off | failed
  std::string reason;  // the policy's, then why not
};

class Evictor {
 public:
  Evictor(ApiClient& api, Binder& events, const Clock& clock, EvictionOptions options)
      : api_(api), events_(events), clock_(clock), options_(options) {}

  // One proposal; true when the pod was evicted (or would be, in a dry run: false then, since
  // nothing changed in the cluster).
  bool Try(const Pod& pod, const std::string& node, const std::string& policy,
           const std::string& reason);
  // Pods whose refused eviction is due again now (uid → the pod and node it ran on when
  // refused); the caller re-checks that they still run there and calls Try again.
  struct Retry {
    Pod pod;
    std::string node, policy, reason;
    double due = 0;
  };
  std::vector<Retry> Due();
  void Forget(const std::string& uid) { retries_.erase(uid); }
  bool Waiting(const std::string& uid) const { return retries_.contains(uid); }

  const EvictionOptions& options() const { return options_; }
  std::map<std::pair<std::string, std::string>, int64_t> counts() const;  // (policy, result)
  std::vector<EvictionRecord> recent() const;                             // newest first

 private:
  void Record(const Pod& pod, const std::string& node, const std::string& policy,
              const std::string& result, const std::string& reason);

  ApiClient& api_;
  Binder& events_;
  const Clock& clock_;
  EvictionOptions options_;
  std::deque<double> cluster_times_;  // evictions charged, last hour
  std::map<std::string, std::deque<double>> node_times_;
  std::map<std::string, Retry> retries_;                              // by uid
  std::map<std::string, std::pair<std::string, double>> last_event_;  // uid → (text, time)
  mutable std::mutex mu_;                                             // guards counts_ and recent_
  std::map<std::pair<std::string, std::string>, int64_t> counts_;
  std::deque<EvictionRecord> recent_;
};

}  // namespace tessera::k8s
