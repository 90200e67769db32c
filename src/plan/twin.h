#pragma once
// The digital twin: a plan run on the simulator's ground truth (sim::Physics — the physics of
// `tessera simulate`, its per-replica noise included) for one day of the services' load.
//
// Every planned GPU becomes a node of one GPU cut as planned; every replica a workload on its
// slice (MIG instance, or MPS share with that share of the memory). Each replica serves the
// share of its service's offered load that its counted rate is of the service's (a weighted
// load balancer). Every `sample_s` of the day the twin asks the physics for each replica's
// service rate beside its neighbours at that load; a service-hour is met when at every sample
// of the hour Σ over the service's replicas of the rate it could serve ≥ the offered load
// (what a load balancer that sends each replica no more than it serves achieves), and no
// replica fails (its footprint over its memory).
//
// A service whose application the catalogue does not hold (known by features only) has no
// ground truth: it is reported unchecked, never counted met.

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "plan/plan.h"
#include "sim/apps.h"

namespace tessera::plan {

struct TwinOptions {
  uint64_t seed = 1;      // the physics' noise
  double sample_s = 600;  // every 10 minutes
};

struct ServiceDay {
  bool checked = false;
  int hours_met = 0;       // of 24
  double worst_ratio = 0;  // min over samples of Σ capacity / offered load
};

struct TwinResult {
  std::vector<ServiceDay> services;  // in the input's order
  int service_hours = 0;             // checked services × 24
  int met_hours = 0;
  double met_fraction() const {
    return service_hours > 0 ? static_cast<double>(met_hours) / service_hours : 0;
  }
};

[[nodiscard]] Expected<TwinResult> RunTwin(const PlanInput& input, const Problem& problem,
                                           const Plan& plan, const sim::AppCatalog& catalog,
                                           const TwinOptions& options = {});

}  // namespace tessera::plan
