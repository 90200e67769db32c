#pragma once
// Network-flow solvers for policies that decide a whole scheduling cycle at once: a min-cost flow
// (DRMaestro: jobs → candidate nodes → sink, int64 costs) and a maximum-weight bipartite matching
// (MuxFlow: offline jobs to online GPUs, at most one job per GPU and one GPU per job).
//
// Contract:
//  - Pure functions of their arguments: no state, thread-safe, deterministic (the same input
//    gives the same flow, so the simulator replays a policy bit-for-bit).
//  - Input is validated first. Invalid input (an index out of range, lower < 0 or capacity < lower,
//    supplies that do not sum to zero, numbers large enough to overflow the solver's int64
//    arithmetic) returns Status::kInvalidInput with a message naming the arc, edge or node;
//    callers turn that into an Error at their edge. Infeasible and unbounded problems are
//    outcomes, not errors: Status::kInfeasible / kUnbounded.
//  - No exception other than std::bad_alloc leaves these functions.
//
// This target (tessera_flow) is compiled as C++17 because LEMON's headers do not compile as
// C++20 or later (its graph maps call std::allocator::construct/destroy, removed in C++20); it
// is the only code in Tessera that includes LEMON. This header therefore uses only C++17 std
// headers and can be included from C++23 code. Both solvers run LEMON's NetworkSimplex: it was the
// fastest for both benchmark shapes (bench/flow_bench.cc, docs/benchmarks.md).

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::flow {

enum class Status {
  kOptimal,       // an optimal solution is in the result
  kInfeasible,    // no flow meets the supplies within the bounds
  kUnbounded,     // a negative-cost cycle of kUnlimited capacity: no minimum
  kInvalidInput,  // the input broke the contract; `error` says where
};
std::string_view ToString(Status status);

// A capacity that means "no upper bound".
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

// An arc from node `from` to node `to` (0-based) carrying between `lower` and `capacity` units
// at `cost` per unit. Parallel arcs and self-loops are allowed.
struct Arc {
  int from = 0;
  int to = 0;
  int64_t capacity = 0;
  int64_t cost = 0;
  int64_t lower = 0;
};

struct FlowResult {
  Status status = Status::kInvalidInput;
  std::string error;          // kInvalidInput only
  int64_t total_cost = 0;     // Σ flow · cost over every arc; kOptimal only
  std::vector<int64_t> flow;  // per arc, in input order; kOptimal only (else empty)
};

// Minimum-cost flow: node v sends supply[v] units (negative: receives); every arc carries between
// lower and capacity; Σ supply must be 0. Costs may be negative. Limits that keep LEMON's int64
// arithmetic exact, checked: |cost| ≤ 2^61 / (num_nodes + 1); Σ|supply| + Σ lower ≤ 2^62;
// and the optimal total cost must fit in int64.
[[nodiscard]] FlowResult MinCostFlow(int num_nodes, const std::vector<Arc>& arcs,
                                     const std::vector<int64_t>& supply);

// An edge between left vertex `left` and right vertex `right` (0-based, each side numbered on
// its own) worth `weight`.
struct Edge {
  int left = 0;
  int right = 0;
  int64_t weight = 0;
};

struct MatchingResult {
  Status status = Status::kInvalidInput;  // kOptimal or kInvalidInput
  std::string error;                      // kInvalidInput only
  int64_t total_weight = 0;               // Σ weight of the chosen edges
  std::vector<int> match;                 // match[l]: the right vertex l is matched to, or -1
};

// Maximum-weight bipartite matching, not necessarily perfect: every vertex is matched at most
// once and the chosen edges' total weight is as large as possible. An edge of weight ≤ 0 never
// adds weight, so it is never chosen (a vertex stays unmatched instead). Among several optima,
// which one is returned is deterministic but unspecified. Checked: weight ≤ 2^61 / (left + right
// + 3).
[[nodiscard]] MatchingResult MaxWeightBipartiteMatching(int left, int right,
                                                        const std::vector<Edge>& edges);

}  // namespace tessera::flow
