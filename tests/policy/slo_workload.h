#pragma once
// The pod of the SLO-driven policies' tests (predictive, slo-aware): one GPU of application
// `app` with a throughput objective of `slo` QPS, asking `memory` MiB (0: none).
#include <cstdint>
#include <string>

#include "model/workload.h"

namespace tessera::policy::testing {

inline model::Workload App(model::WorkloadId id, const std::string& app, double slo,
                           int64_t memory = 0) {
  model::Workload w;
  w.id = id;
  w.name = app + "-" + std::to_string(id);
  w.app = app;
  w.slo_qps = slo;
  w.gpu.count = 1;
  w.gpu.memory_mib = memory;
  return w;
}

}  // namespace tessera::policy::testing
