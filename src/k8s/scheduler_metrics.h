#pragma once
// The scheduler's /metrics in the Prometheus text format: Tessera's totals, kube-scheduler's
// own families under Tessera's prefix (pending_pods by queue, schedule_attempts_total and the
// scheduling_attempt_duration_seconds histogram by result and profile), what became of the
// policies' evictions, the GPUs held out of scheduling by reason, and per pod its predicted and
// observed QPS and whether its SLO is met (docs/kubernetes.md lists them). Reads only the
// scheduler's thread-safe snapshots.

#include <string>

#include "k8s/scheduler.h"

namespace tessera::k8s {

std::string MetricsText(const Scheduler& scheduler);

}  // namespace tessera::k8s
