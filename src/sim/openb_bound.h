#pragma once
// How much of the cluster's GPUs any packer could have allocated by each arrived level of an
// openb replay (docs/results.md, "How far from the limit"): an upper bound on every policy's
// allocation curve, so that "close to the limit" is a number.
//
// At arrived level L (% of the GPUs' capacity, as RunOpenb buckets it) the pods that have
// arrived are at most the first arrivals whose requested GPU milli reaches (L + 0.5) %; any
// policy's placed pods are a subset of them that fits the nodes, so the most GPU milli such a
// subset can hold bounds every event of bucket L. That maximum is itself a packing problem;
// the bound relaxes it (an integer program, CBC through flow/mip.h):
//  - nodes are grouped into types (CPU, memory, GPU count, GPU model) and pods into shapes
//    (CPU, memory, GPUs, milli each, allowed models); x[shape, type] counts pods of a shape
//    placed on nodes of a type, at most the shape's arrivals, only where one node holds one;
//  - per type: Σ CPU, Σ memory and Σ GPU milli ≤ the type's totals;
//  - per type, dual feasible functions (Fekete and Schepers 2001, u^(k) for k = 1, 2, 3: for
//    x in [0, 1], u(x) = x when (k + 1)·x is whole, else ⌊(k + 1)·x⌋ / k; items summing to at
//    most 1 map to values summing to at most 1): Σ u(milli / 1000) over each pod's GPUs ≤ the
//    type's GPUs (two 0.6 shares cannot share a GPU); Σ u(CPU / node CPU), Σ u(memory / node
//    memory) and, for whole-GPU pods, Σ u(GPUs / node GPUs) ≤ the type's nodes.
// Every real packing is a point of the program, so its optimum — and CBC's bound on it when it
// stops at its time limit — is an upper bound. With `integer` false the program's linear
// relaxation: weaker, for comparison.

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "model/cluster.h"
#include "model/workload.h"
#include "sim/experiment.h"

namespace tessera::sim {

struct OpenbBoundOptions {
  bool integer = true;
  double time_limit_s = 10;  // per level; past it CBC's bound, still an upper bound
};

struct OpenbBoundPoint {
  int level_pct = 0;
  size_t pods = 0;       // arrivals counted (requested GPU milli within L + 0.5 %)
  double alloc_pct = 0;  // the bound, % of the GPUs' capacity
  bool proven = false;   // the program's optimum, not only CBC's bound on it
};

// The bound at each of `levels_pct` for `arrivals` in arrival order on `nodes`. An Error for a
// node with GPUs of two models, or a cluster without GPUs.
[[nodiscard]] Expected<std::vector<OpenbBoundPoint>> OpenbAllocationBound(
    std::span<const model::NodeSpec> nodes, std::span<const model::Workload> arrivals,
    std::span<const int> levels_pct, const OpenbBoundOptions& options = {});

// `tessera simulate --experiment openb-bound` (registered in experiments.cc): the bound at every
// 10 % of arrived load up to --inflation, over the seeds' arrival orders (the same as
// openb-alloc's for the same seed). Its arms: "ip" (the integer program; default) and "lp"
// (its linear relaxation).
std::vector<std::string> OpenbBoundArms();
[[nodiscard]] Expected<void> CheckOpenbBoundArgs(const ExperimentArgs& args);
[[nodiscard]] Expected<ExperimentOutput> RunOpenbBoundExperiment(const ExperimentArgs& args,
                                                                 const Experiment& experiment);

}  // namespace tessera::sim
