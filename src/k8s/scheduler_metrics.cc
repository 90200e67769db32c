#include "k8s/scheduler_metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::k8s {
namespace {

std::string Totals(const SchedulerStats& s) {
  return fmt::format(
      "# TYPE tessera_scheduler_leader gauge\ntessera_scheduler_leader {}\n"
      "# TYPE tessera_scheduler_bound_total counter\n"
      "tessera_scheduler_bound_total {}\n"
      "# TYPE tessera_scheduler_bind_failures_total counter\n"
      "tessera_scheduler_bind_failures_total {}\n"
      "# TYPE tessera_scheduler_invalid_pods_total counter\n"
      "tessera_scheduler_invalid_pods_total {}\n"
      "# TYPE tessera_scheduler_pending gauge\ntessera_scheduler_pending {}\n"
      "# TYPE tessera_scheduler_placed gauge\ntessera_scheduler_placed {}\n"
      "# TYPE tessera_scheduler_rebuilds_total counter\n"
      "tessera_scheduler_rebuilds_total {}\n"
      "# TYPE tessera_scheduler_resizes_refused_total counter\n"
      "tessera_scheduler_resizes_refused_total {}\n"
      "# TYPE tessera_scheduler_observations_total counter\n"
      "tessera_scheduler_observations_total {}\n"
      "# TYPE tessera_scheduler_observations_restored_total counter\n"
      "tessera_scheduler_observations_restored_total {}\n",
      s.leading ? 1 : 0, s.bound, s.bind_failures, s.invalid_pods, s.pending, s.placed, s.rebuilds,
      s.resizes_refused, s.observations, s.observations_restored);
}

// GPUs out of scheduling, by why: the agent judges the MPS server stuck, or a MIG reshape failed
// (held for its backoff).
std::string HeldOut(const SchedulerStats& s) {
  return fmt::format(
      "# HELP tessera_scheduler_gpus_held_out GPUs that take no new pods, by reason.\n"
      "# TYPE tessera_scheduler_gpus_held_out gauge\n"
      "tessera_scheduler_gpus_held_out{{reason=\"mps_server_stuck\"}} {}\n"
      "tessera_scheduler_gpus_held_out{{reason=\"reshape_failed\"}} {}\n",
      s.gpus_mps_stuck, s.gpus_reshape_held);
}

// kube-scheduler's pending_pods, schedule_attempts_total, scheduling_attempt_duration_seconds.
std::string Attempts(const SchedulerStats& s, const std::string& profile) {
  std::string out = fmt::format(
      "# TYPE tessera_scheduler_pending_pods gauge\n"
      "tessera_scheduler_pending_pods{{queue=\"active\"}} {}\n"
      "tessera_scheduler_pending_pods{{queue=\"unschedulable\"}} {}\n"
      "# TYPE tessera_scheduler_schedule_attempts_total counter\n"
      "# TYPE tessera_scheduler_scheduling_attempt_duration_seconds histogram\n",
      s.pending - std::min(s.pending, s.unschedulable_pending), s.unschedulable_pending);
  constexpr std::string_view kHistogram = "tessera_scheduler_scheduling_attempt_duration_seconds";
  for (const auto& [result, a] : s.attempts) {
    const std::string labels = fmt::format("result=\"{}\",profile=\"{}\"", result, profile);
    out += fmt::format("tessera_scheduler_schedule_attempts_total{{{}}} {}\n", labels, a.count);
    int64_t cumulative = 0;
    for (size_t i = 0; i < a.buckets.size(); ++i) {
      cumulative += a.buckets[i];
      out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", kHistogram, labels,
                         SchedulerStats::kLatencyBuckets[i], cumulative);
    }
    out +=
        fmt::format("{0}_bucket{{{1},le=\"+Inf\"}} {2}\n{0}_sum{{{1}}} {3}\n{0}_count{{{1}}} {2}\n",
                    kHistogram, labels, a.count, a.sum_s);
  }
  return out;
}

std::string Evictions(const Scheduler& scheduler) {
  std::string out =
      "# HELP tessera_scheduler_evictions_total What became of the policies' evictions.\n"
      "# TYPE tessera_scheduler_evictions_total counter\n";
  for (const auto& [key, n] : scheduler.eviction_counts()) {
    out += fmt::format("tessera_scheduler_evictions_total{{policy=\"{}\",result=\"{}\"}} {}\n",
                       key.first, key.second, n);
  }
  return out;
}

std::string PodQps(const StatusPod& pod) {
  const size_t slash = pod.name.find('/');
  const std::string labels =
      fmt::format("namespace=\"{}\",pod=\"{}\"", pod.name.substr(0, slash),
                  slash == std::string::npos ? "" : pod.name.substr(slash + 1));
  std::string out;
  if (pod.predicted_qps) {
    out += fmt::format("tessera_pod_predicted_qps{{{}}} {}\n", labels, *pod.predicted_qps);
  }
  if (pod.observed_qps) {
    out += fmt::format("tessera_pod_observed_qps{{{}}} {}\n", labels, *pod.observed_qps);
  }
  if (pod.slo != StatusPod::Slo::kUnknown) {
    out += fmt::format("tessera_pod_slo_met{{{}}} {}\n", labels,
                       pod.slo == StatusPod::Slo::kMet ? 1 : 0);
  }
  return out;
}

}  // namespace

std::string MetricsText(const Scheduler& scheduler) {
  const SchedulerStats s = scheduler.stats();
  std::string out = Totals(s) + HeldOut(s) + Attempts(s, scheduler.policy()) + Evictions(scheduler);
  // Per pod: what it was predicted to serve, what it serves, whether its SLO is met.
  out +=
      "# TYPE tessera_pod_predicted_qps gauge\n# TYPE tessera_pod_observed_qps gauge\n"
      "# TYPE tessera_pod_slo_met gauge\n";
  for (const StatusNode& n : scheduler.Status().nodes) {
    for (const StatusGpu& g : n.gpus) {
      for (const StatusPartition& p : g.partitions) {
        for (const StatusPod& pod : p.pods) out += PodQps(pod);
      }
    }
  }
  return out;
}

}  // namespace tessera::k8s
