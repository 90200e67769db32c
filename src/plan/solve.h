#pragma once
// The solvers of plan.h's model. Both return a Plan whose every service has at least
// min_replicas and Σ counted rate ≥ its demand; they differ in cost and in time. A service's
// replicas all run on one kind (a Deployment's pods share one template, so one slice request):
// on option o it needs max(min_replicas, ⌈demand / rate⌉) of them.
//
//  - SolveExact: the integer program (CBC through flow/mip.h). Variables: which option each
//    service takes (binary); GPUs of each menu model cut into each maximal MIG layout, GPUs of
//    each model under MPS, and all GPUs of each model (the one the cost sees: branching on it
//    splits the search by how many GPUs, not by which of many equivalent layouts — it took the
//    100 random test instances from 12 unproven in 10 s each to all proven in ~0.1 s). Rows:
//    one option per service; per model and MIG profile, replicas ≤ the instances the cut GPUs
//    hold; per model, MPS quarters ≤ 4 × its MPS GPUs (25/50/100 % shares divide each other,
//    so any such multiset packs). Objective: Σ price × GPUs, within 0.01 % of the optimum. Past
//    PlanOptions::exact_time_limit_s it returns the best plan found, its solver named "exact
//    (not proven ...)", and Plan::lower_bound says how far from the optimum it may be.
//  - SolveHeuristic: a local search over each service's option. Moves: one service to the
//    option that lowers the packed cost most (ties broken by the cost if GPUs were shared
//    perfectly: replicas × price × the kind's share of its GPU), until no move helps; then,
//    up to 200 services, pairs of services among their eight cheapest options. Starts: the
//    cheapest option per service, the rounded linear relaxation of the exact program, and
//    restarts while they are cheap — iterated local search, randomised greedy starts, and
//    searches under randomly skewed prices of the menu. Packing per model: MPS quarters fill
//    GPUs exactly; MIG instances take the fewest GPUs (pack.h: exact for small loads, greedy
//    beyond). Within 5 % of the optimum on random inputs of ≤ 20 services × 3 models; about
//    5 s for 1,000 services × 8 models (docs/planning.md).

#include "base/error.h"
#include "plan/plan.h"

namespace tessera::plan {

[[nodiscard]] Expected<Plan> SolveExact(const Problem& problem);
Plan SolveHeuristic(const Problem& problem);

// Replica counts per service and kind → a packed plan (the heuristic's packer), for tests.
Plan PackCounts(const Problem& problem, const std::vector<std::vector<int>>& counts,
                std::string solver);

}  // namespace tessera::plan
