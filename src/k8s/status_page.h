#pragma once
// The scheduler's live status page (`tessera schedule` serves it as /status): what the leader
// sees now — nodes → GPUs → partitions (whole GPU, MIG instance, MPS share) → pods, each pod's
// SLO and its predicted and observed QPS coloured met / missed / unknown; the pending queue
// with each pod's last reason; the recent moves and evictions; the counters. One self-contained
// HTML page (inline CSS and SVG, no script, no external asset) that the browser reloads every
// `refresh_s` seconds (<meta http-equiv="refresh">).
//
// StatusView is a plain snapshot the scheduling loop fills (k8s::Scheduler::Status); the page
// is a pure function of it, so tests render a hand-made view. Every text is HTML-escaped.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::k8s {

struct StatusPod {
  std::string name;                     // "<namespace>/<pod>"
  std::string slice;                    // "whole GPU", "MIG 3g.20gb", "MPS 30 %", "memory only"
  std::optional<double> slo_qps;        // none: best effort
  std::optional<double> predicted_qps;  // none: no prediction (no predictor, unknown cell)
  std::optional<double> observed_qps;   // none: not observed (see observed_note)
  std::string observed_note;            // why not: "no series", "stale", "NaN", "" when observed
  // met: observed ≥ SLO (predicted ≥ SLO while not yet observed); unknown without an SLO.
  enum class Slo { kUnknown, kMet, kMissed } slo = Slo::kUnknown;
};

struct StatusPartition {
  std::string label;   // "whole GPU", "MIG 3g.20gb (GPU-…/MIG-…)", "MPS"
  int used_milli = 0;  // compute held by its pods, per mille of the partition
  std::vector<StatusPod> pods;
};

struct StatusGpu {
  int index = 0;
  std::string uuid;
  std::string model;      // "A100-SXM4-40GB"
  std::string mig;        // the MIG layout, "" when MIG is off
  bool available = true;  // false: held out (below) or its node not ready
  std::string held_out;   // why it takes no new pods: "MPS server stuck", "MIG reshape failed"
  std::vector<StatusPartition> partitions;
};

struct StatusNode {
  std::string name;
  bool ready = true;
  std::vector<StatusGpu> gpus;
  // Its NoSchedule / NoExecute taints as kubectl writes them ("dedicated=batch:NoSchedule"):
  // pods that do not tolerate one never land here (node_rules.h).
  std::vector<std::string> taints = {};
};

struct StatusPending {
  std::string pod;     // "<namespace>/<pod>"
  std::string reason;  // the last FailedScheduling message, "" before the first cycle
  double waiting_s = 0;
};

struct StatusAction {
  double at = 0;       // seconds since the Unix epoch
  std::string pod;     // "<namespace>/<pod>"
  std::string action;  // "evicted", "moved", "refused (PDB)", "dry run", "resize refused", …
  std::string reason;  // the policy's reason, or why it did not happen
};

struct StatusView {
  std::string scheduler;  // spec.schedulerName served
  std::string identity;   // this replica
  std::string role;       // "leader (…)" or "standby (…)"
  std::string policy;
  double generated_at = 0;  // seconds since the Unix epoch
  std::vector<StatusNode> nodes;
  std::vector<StatusPending> pending;
  std::vector<StatusAction> recent;         // newest first
  std::map<std::string, int64_t> counters;  // "bound", "evictions", … in the order of the map
};

// The page; refresh_s ≤ 0 leaves the refresh out.
std::string StatusHtml(const StatusView& view, double refresh_s = 5);

}  // namespace tessera::k8s
