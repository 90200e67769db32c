#pragma once
// The solvers of plan.h's model. Both return a Plan whose every service has at least
// min_replicas and Σ counted rate ≥ its demand; they differ in cost and in time. A service's
// replicas all run on one kind (a Deployment's pods share one template, so one slice request):
// on option o it needs max(min_replicas, ⌈demand / rate⌉) of them.
//
//  - SolveExact: the integer program (CBC through flow/mip.h). Variables: which option each
//    service takes (binary); GPUs of each menu model cut into each maximal MIG layout, and GPUs
//    of each model under MPS. Rows: one option per service; per model and MIG profile,
//    replicas ≤ the instances the cut GPUs hold; per model, MPS quarters ≤ 4 × its MPS GPUs
//    (25/50/100 % shares divide each other, so any such multiset packs). Objective: Σ price ×
//    GPUs, within 0.01 % of the optimum. For small inputs: CBC proves most instances of up to
//    20 services × 3 models in a second, but not all; past PlanOptions::exact_time_limit_s
//    it returns the best plan found, its solver named "exact (not proven ...)".
//  - SolveHeuristic: a local search over each service's option. Moves: one service to the
//    option that lowers the packed cost most (ties broken by the cost if GPUs were shared
//    perfectly: replicas × price × the kind's share of its GPU), until no move helps; then,
//    up to 200 services, pairs of services among their eight cheapest options. Starts: the
//    cheapest option per service, the rounded linear relaxation of the exact program, and
//    restarts (iterated local search and randomised greedy starts) while they are cheap.
//    Packing per model: MPS quarters fill GPUs exactly; MIG instances fill GPUs largest
//    profile first within NVIDIA's layouts (the final plan takes CBC's fewest layouts when
//    fewer). About 1 s for 1,000 services × 8 models (docs/planning.md).

#include "base/error.h"
#include "plan/plan.h"

namespace tessera::plan {

[[nodiscard]] Expected<Plan> SolveExact(const Problem& problem);
Plan SolveHeuristic(const Problem& problem);

// Replica counts per service and kind → a packed plan (the heuristic's packer), for tests.
Plan PackCounts(const Problem& problem, const std::vector<std::vector<int>>& counts,
                std::string solver);

}  // namespace tessera::plan
