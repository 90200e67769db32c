#pragma once
// The solvers of plan.h's model. Both return a Plan whose every service has at least
// min_replicas and Σ counted rate ≥ its demand; they differ in cost and in time. A service's
// replicas all run on one kind (a Deployment's pods share one template, so one slice request):
// on option o it needs max(min_replicas, ⌈demand / rate⌉) of them.
//
//  - SolveExact: the integer program (GLPK through flow/mip.h). Variables: which option each
//    service takes (binary); GPUs of each menu model cut into each maximal MIG layout, and GPUs
//    of each model under MPS. Rows: one option per service; per model and MIG profile,
//    replicas ≤ the instances the cut GPUs hold; per model, MPS quarters ≤ 4 × its MPS GPUs
//    (25/50/100 % shares divide each other, so any such multiset packs). Objective: Σ price ×
//    GPUs, within 0.01 % of the optimum. For small inputs: GLPK proves most instances of up to
//    20 services × 3 models in a second, but not all; past PlanOptions::exact_time_limit_s
//    it returns the best plan found, its solver named "exact (not proven ...)".
//  - SolveHeuristic: each service takes the option with the least cost per replica set
//    (replicas × price × the kind's share of its GPU), then moves one service at a time to the
//    option that lowers the packed cost most, until no move helps. Packing per model: MPS
//    quarters fill GPUs exactly; MIG instances fill GPUs largest profile first within
//    NVIDIA's layouts. Milliseconds for 1,000 services × 8 models.

#include "base/error.h"
#include "plan/plan.h"

namespace tessera::plan {

[[nodiscard]] Expected<Plan> SolveExact(const Problem& problem);
Plan SolveHeuristic(const Problem& problem);

// Replica counts per service and kind → a packed plan (the heuristic's packer), for tests.
Plan PackCounts(const Problem& problem, const std::vector<std::vector<int>>& counts,
                std::string solver);

}  // namespace tessera::plan
