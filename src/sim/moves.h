#pragma once
// Arrive-only replay with moves (docs/results.md, "Defragmentation by moving pods"): the FGD
// protocol of replay.h, except that when an arriving workload fits nowhere, up to two running
// workloads of one node may be moved to make room for it, within a budget of moves per 100
// arrivals — what Kubernetes' descheduler does through the Eviction API, with the scheduler
// placing the evicted pod again.
//
// The budget: after i arrivals, at most ⌊i × per_100_arrivals / 100⌋ moves in all (what is not
// spent carries over, as a disruption budget counted over the run). For a workload w that
// failed, while the budget allows:
//  1. Candidates: every ready node n and running workload v on it (or pair v1, v2 when two
//     moves are left) such that w would fit on n if v left — by n's free CPU, memory and
//     per-GPU milli plus v's. Cheapest first: the least GPU milli moved, then node order.
//  2. For each candidate, at most eight: v leaves n; if w's request now passes NodeFits on n,
//     n is marked not ready and v is submitted to the scheduler, which places it by the policy
//     on another node; then n is ready again and w is submitted. If v finds no other node, or
//     w is still not placed, everything goes back as it was and the next candidate is tried.
// A move keeps the moved workload (it restarts elsewhere; ReplayEvent::touched names the nodes
// a move changed), so allocation only rises, by what w adds. Deterministic.

#include <functional>
#include <span>
#include <vector>

#include "base/rng.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "sim/replay.h"

namespace tessera::sim {

struct MoveBudget {
  double per_100_arrivals = 0;  // 0: the plain arrive-only replay
};

struct MoveStats {
  size_t moves = 0;             // workloads moved
  size_t rescued = 0;           // arrivals placed thanks to a move
  double moved_gpu_milli = 0;   // Σ GPU milli of the moved workloads (what restarts)
  size_t candidates_tried = 0;  // candidates that went as far as step 2
};

// As ReplayArriveOnly (first-node tie break), with moves; `on_event` also sees which nodes a
// move changed (ReplayEvent::touched).
ReplayResult ReplayWithMoves(model::ClusterState& cluster, policy::Policy& policy, Rng& rng,
                             std::span<const model::Workload> order, const MoveBudget& budget,
                             MoveStats& stats,
                             const std::function<void(const ReplayEvent&)>& on_event = {});

}  // namespace tessera::sim
