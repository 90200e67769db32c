// The LEMON solvers against optima worked out by hand and, on small random instances, against
// brute force: every matching, and every integral flow when capacities are at most 2. Compiled
// as C++23, as the policies that will call flow.h are.
#include "policy/flow/flow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

namespace tessera::flow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- brute force ----

// The best total weight over every matching (each vertex at most once; parallel edges allowed).
int64_t BruteForceMatching(int left, int right, const std::vector<Edge>& edges) {
  std::vector<bool> used(right, false);
  auto best_from = [&](auto&& self, int l) -> int64_t {
    if (l == left) return 0;
    int64_t best = self(self, l + 1);  // l unmatched
    for (const Edge& e : edges) {
      if (e.left != l || used[e.right]) continue;
      used[e.right] = true;
      best = std::max(best, e.weight + self(self, l + 1));
      used[e.right] = false;
    }
    return best;
  };
  return best_from(best_from, 0);
}

// The least cost over every integral flow within the bounds that meets the supplies; nullopt if
// there is none. Capacities must be small (each arc's flow is enumerated).
std::optional<int64_t> BruteForceMinCost(int num_nodes, const std::vector<Arc>& arcs,
                                         const std::vector<int64_t>& supply) {
  std::vector<int64_t> flow(arcs.size());
  std::optional<int64_t> best;
  auto enumerate = [&](auto&& self, size_t i) -> void {
    if (i == arcs.size()) {
      std::vector<int64_t> net_out(num_nodes, 0);
      int64_t cost = 0;
      for (size_t k = 0; k < arcs.size(); ++k) {
        net_out[arcs[k].from] += flow[k];
        net_out[arcs[k].to] -= flow[k];
        cost += flow[k] * arcs[k].cost;
      }
      if (net_out == supply && (!best || cost < *best)) best = cost;
      return;
    }
    for (int64_t f = arcs[i].lower; f <= arcs[i].capacity; ++f) {
      flow[i] = f;
      self(self, i + 1);
    }
  };
  enumerate(enumerate, 0);
  return best;
}

// ---- checks on a returned solution ----

// A matching is valid when every pair is an edge, no right vertex is used twice, and its total
// is the sum of its edges (the heaviest parallel edge of each pair).
void ExpectValidMatching(int left, int right, const std::vector<Edge>& edges,
                         const MatchingResult& m) {
  ASSERT_EQ(m.status, Status::kOptimal) << m.error;
  ASSERT_EQ(m.match.size(), static_cast<size_t>(left));
  std::vector<bool> used(right, false);
  int64_t sum = 0;
  for (int l = 0; l < left; ++l) {
    const int r = m.match[l];
    if (r == -1) continue;
    ASSERT_TRUE(r >= 0 && r < right) << "left " << l << " matched to " << r;
    EXPECT_FALSE(used[r]) << "right " << r << " matched twice";
    used[r] = true;
    std::optional<int64_t> heaviest;
    for (const Edge& e : edges) {
      if (e.left == l && e.right == r) heaviest = std::max(heaviest.value_or(e.weight), e.weight);
    }
    ASSERT_TRUE(heaviest) << "left " << l << " matched to " << r << " without an edge";
    EXPECT_GT(*heaviest, 0) << "a non-positive edge was taken";
    sum += *heaviest;
  }
  EXPECT_EQ(m.total_weight, sum);
}

// A flow is valid when it is within every arc's bounds, conserves the supplies, and costs what
// the result says.
void ExpectValidFlow(int num_nodes, const std::vector<Arc>& arcs,
                     const std::vector<int64_t>& supply, const FlowResult& r) {
  ASSERT_EQ(r.status, Status::kOptimal) << r.error;
  ASSERT_EQ(r.flow.size(), arcs.size());
  std::vector<int64_t> net_out(num_nodes, 0);
  int64_t cost = 0;
  for (size_t k = 0; k < arcs.size(); ++k) {
    EXPECT_GE(r.flow[k], arcs[k].lower) << "arc " << k;
    EXPECT_LE(r.flow[k], arcs[k].capacity) << "arc " << k;
    net_out[arcs[k].from] += r.flow[k];
    net_out[arcs[k].to] -= r.flow[k];
    cost += r.flow[k] * arcs[k].cost;
  }
  EXPECT_EQ(net_out, supply);
  EXPECT_EQ(r.total_cost, cost);
}

int Uniform(std::mt19937_64& rng, int lo, int hi) {  // [lo, hi]; mt19937_64 is portable
  return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// ---- matching ----

TEST(MaxWeightBipartiteMatching, BeatsGreedyOnTwoByTwo) {
  // Greedy takes the heaviest edge (0,0)=10 and then (1,1)=1: 11. Crossing gives 9 + 9 = 18.
  const std::vector<Edge> edges = {{0, 0, 10}, {0, 1, 9}, {1, 0, 9}, {1, 1, 1}};
  const MatchingResult m = MaxWeightBipartiteMatching(2, 2, edges);
  ASSERT_EQ(m.status, Status::kOptimal) << m.error;
  EXPECT_THAT(m.match, ElementsAre(1, 0));
  EXPECT_EQ(m.total_weight, 18);
}

TEST(MaxWeightBipartiteMatching, LeavesVerticesUnmatchedWhenThatWeighsMore) {
  // The only perfect matching, (0,1)+(1,0), weighs 2; (0,0) alone weighs 10.
  const std::vector<Edge> edges = {{0, 0, 10}, {0, 1, 1}, {1, 0, 1}};
  const MatchingResult m = MaxWeightBipartiteMatching(2, 2, edges);
  ASSERT_EQ(m.status, Status::kOptimal) << m.error;
  EXPECT_THAT(m.match, ElementsAre(0, -1));
  EXPECT_EQ(m.total_weight, 10);
}

TEST(MaxWeightBipartiteMatching, NeverTakesNonPositiveEdges) {
  // Left 1 and left 2 could only take edges of weight ≤ 0; they stay unmatched.
  const std::vector<Edge> edges = {{0, 0, 5}, {1, 1, 0}, {2, 2, -3}, {1, 0, 4}};
  const MatchingResult m = MaxWeightBipartiteMatching(3, 3, edges);
  ASSERT_EQ(m.status, Status::kOptimal) << m.error;
  EXPECT_THAT(m.match, ElementsAre(0, -1, -1));
  EXPECT_EQ(m.total_weight, 5);
}

TEST(MaxWeightBipartiteMatching, MoreJobsThanGpus) {
  // Three jobs, one GPU: the GPU goes to the job worth most to it.
  const std::vector<Edge> edges = {{0, 0, 3}, {1, 0, 7}, {2, 0, 5}};
  const MatchingResult m = MaxWeightBipartiteMatching(3, 1, edges);
  ASSERT_EQ(m.status, Status::kOptimal) << m.error;
  EXPECT_THAT(m.match, ElementsAre(-1, 0, -1));
  EXPECT_EQ(m.total_weight, 7);
}

TEST(MaxWeightBipartiteMatching, EmptySides) {
  const MatchingResult none = MaxWeightBipartiteMatching(0, 4, {});
  ASSERT_EQ(none.status, Status::kOptimal) << none.error;
  EXPECT_TRUE(none.match.empty());
  EXPECT_EQ(none.total_weight, 0);
  const MatchingResult no_gpus = MaxWeightBipartiteMatching(3, 0, {});
  ASSERT_EQ(no_gpus.status, Status::kOptimal) << no_gpus.error;
  EXPECT_THAT(no_gpus.match, ElementsAre(-1, -1, -1));
}

TEST(MaxWeightBipartiteMatching, MatchesBruteForceOnRandomInstances) {
  for (int seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    const int left = Uniform(rng, 0, 5), right = Uniform(rng, 0, 5);
    std::vector<Edge> edges;
    for (int l = 0; l < left; ++l) {
      for (int r = 0; r < right; ++r) {
        if (Uniform(rng, 0, 9) < 6) edges.push_back({l, r, Uniform(rng, -5, 20)});
        if (Uniform(rng, 0, 9) == 0) edges.push_back({l, r, Uniform(rng, -5, 20)});  // parallel
      }
    }
    const MatchingResult m = MaxWeightBipartiteMatching(left, right, edges);
    ExpectValidMatching(left, right, edges, m);
    EXPECT_EQ(m.total_weight, BruteForceMatching(left, right, edges));
  }
}

TEST(MaxWeightBipartiteMatching, RejectsInvalidInput) {
  struct Case {
    int left, right;
    std::vector<Edge> edges;
    const char* error;
  };
  const int64_t too_heavy = (int64_t{1} << 61) / (2 + 2 + 3) + 1;
  const std::vector<Case> cases = {
      {-1, 2, {}, "sides of -1 and 2 vertices"},
      {2, 2, {{0, 0, 1}, {2, 0, 1}}, "edge 1: left 2 is not a vertex in [0, 2)"},
      {2, 2, {{0, -1, 1}}, "edge 0: right -1 is not a vertex in [0, 2)"},
      {2, 2, {{0, 0, too_heavy}}, "edge 0: weight"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    const MatchingResult m = MaxWeightBipartiteMatching(c.left, c.right, c.edges);
    EXPECT_EQ(m.status, Status::kInvalidInput);
    EXPECT_THAT(m.error, HasSubstr(c.error));
    EXPECT_TRUE(m.match.empty());
  }
  // The largest weight allowed is solved exactly.
  const MatchingResult at_limit = MaxWeightBipartiteMatching(2, 2, {{0, 0, too_heavy - 1}});
  ASSERT_EQ(at_limit.status, Status::kOptimal) << at_limit.error;
  EXPECT_EQ(at_limit.total_weight, too_heavy - 1);
}

// ---- min-cost flow ----

TEST(MinCostFlow, TransportsAlongCheapestArcs) {
  // Sources 0 (3 units) and 1 (2 units), sinks 2 (needs 4) and 3 (needs 1). By hand, with a
  // units on 0→3: 1→3 carries 1 - a, 0→2 carries 3 - a, 1→2 carries 1 + a, so the cost is
  // (3 - a)·1 + a·5 + (1 + a)·4 + (1 - a)·2 = 9 + 6a, least at a = 0.
  const std::vector<Arc> arcs = {{0, 2, 5, 1}, {0, 3, 5, 5}, {1, 2, 5, 4}, {1, 3, 5, 2}};
  const std::vector<int64_t> supply = {3, 2, -4, -1};
  const FlowResult r = MinCostFlow(4, arcs, supply);
  ExpectValidFlow(4, arcs, supply, r);
  EXPECT_THAT(r.flow, ElementsAre(3, 0, 1, 1));
  EXPECT_EQ(r.total_cost, 9);
}

TEST(MinCostFlow, ReportsInfeasibleWhenCapacityIsShort) {
  // 5 units must cross arcs of total capacity 3 + 1.
  const FlowResult r = MinCostFlow(2, {{0, 1, 3, 1}, {0, 1, 1, 7}}, {5, -5});
  EXPECT_EQ(r.status, Status::kInfeasible);
  EXPECT_TRUE(r.flow.empty());
}

TEST(MinCostFlow, HonoursLowerBounds) {
  // 4 units from 0 to 1 over a cheap arc (cost 1) and an expensive one (cost 10) that must carry
  // at least 2: 2·1 + 2·10 = 22; without the bound it would be 4·1 = 4. The flow reported is
  // the whole flow, lower bound included.
  const std::vector<Arc> arcs = {{0, 1, 5, 1}, {0, 1, 5, 10, 2}};
  const FlowResult r = MinCostFlow(2, arcs, {4, -4});
  ExpectValidFlow(2, arcs, {4, -4}, r);
  EXPECT_THAT(r.flow, ElementsAre(2, 2));
  EXPECT_EQ(r.total_cost, 22);
}

TEST(MinCostFlow, LowerBoundOnACirculation) {
  // No supplies, but arc 2→0 must carry 1 unit: it goes round the triangle, costing 1 + 2 + 3.
  const std::vector<Arc> arcs = {{0, 1, 2, 1}, {1, 2, 2, 2}, {2, 0, 2, 3, 1}};
  const FlowResult r = MinCostFlow(3, arcs, {0, 0, 0});
  ExpectValidFlow(3, arcs, {0, 0, 0}, r);
  EXPECT_THAT(r.flow, ElementsAre(1, 1, 1));
  EXPECT_EQ(r.total_cost, 6);
  // A lower bound with no way back is infeasible.
  EXPECT_EQ(MinCostFlow(2, {{0, 1, 2, 0, 1}}, {0, 0}).status, Status::kInfeasible);
}

TEST(MinCostFlow, SaturatesNegativeCyclesAndReportsUnboundedOnes) {
  // The cycle 0→1→0 costs -5 + 2 per unit; arc 0→1 limits it to 3: 3·(-3) = -9.
  const std::vector<Arc> finite = {{0, 1, 3, -5}, {1, 0, 4, 2}};
  const FlowResult r = MinCostFlow(2, finite, {0, 0});
  ExpectValidFlow(2, finite, {0, 0}, r);
  EXPECT_THAT(r.flow, ElementsAre(3, 3));
  EXPECT_EQ(r.total_cost, -9);
  // With no limit on either arc there is no minimum.
  const FlowResult unbounded =
      MinCostFlow(2, {{0, 1, kUnlimited, -5}, {1, 0, kUnlimited, 2}}, {0, 0});
  EXPECT_EQ(unbounded.status, Status::kUnbounded);
  // Unlimited arcs without a negative cycle are fine.
  const std::vector<Arc> open = {{0, 1, kUnlimited, 3}, {1, 0, kUnlimited, 2}};
  const FlowResult bounded = MinCostFlow(2, open, {7, -7});
  ExpectValidFlow(2, open, {7, -7}, bounded);
  EXPECT_EQ(bounded.total_cost, 21);
}

TEST(MinCostFlow, SchedulingCycleWithUnscheduledArcs) {
  // A DRMaestro cycle in miniature: jobs 0-2 (one unit each) → machines 3-4 (one slot each) →
  // sink 5, or straight to the sink at the unscheduled cost 100. Costs job×machine:
  //   job 0: 3 → 1, 4 → 6;  job 1: 3 → 2, 4 → 50;  job 2: 3 → 4 only.
  // Two slots for three jobs, so one waits (100). By hand, (machine 3, machine 4) to
  // (job 1, job 0): 2 + 6 + 100 = 108; (2, 0): 4 + 6 + 100 = 110; (0, 1): 1 + 50 + 100 = 151;
  // (2, 1): 4 + 50 + 100 = 154; a slot left empty costs another 100.
  std::vector<Arc> arcs = {{0, 3, 1, 1}, {0, 4, 1, 6}, {1, 3, 1, 2}, {1, 4, 1, 50}, {2, 3, 1, 4}};
  arcs.insert(arcs.end(), {{3, 5, 1, 0}, {4, 5, 1, 0}});                      // machine slots
  arcs.insert(arcs.end(), {{0, 5, 1, 100}, {1, 5, 1, 100}, {2, 5, 1, 100}});  // unscheduled
  const std::vector<int64_t> supply = {1, 1, 1, 0, 0, -3};
  const FlowResult r = MinCostFlow(6, arcs, supply);
  ExpectValidFlow(6, arcs, supply, r);
  EXPECT_THAT(r.flow, ElementsAre(0, 1, 1, 0, 0, 1, 1, 0, 0, 1));
  EXPECT_EQ(r.total_cost, 108);
}

TEST(MinCostFlow, MatchesBruteForceOnRandomInstances) {
  int optimal = 0, infeasible = 0;
  for (int seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(1000 + seed);
    const int n = Uniform(rng, 1, 6);
    const int m = Uniform(rng, 0, 8);
    std::vector<Arc> arcs;
    for (int k = 0; k < m; ++k) {
      Arc a{Uniform(rng, 0, n - 1), Uniform(rng, 0, n - 1), Uniform(rng, 0, 2),
            Uniform(rng, -5, 10)};
      if (a.capacity > 0 && Uniform(rng, 0, 3) == 0) a.lower = Uniform(rng, 1, a.capacity);
      arcs.push_back(a);
    }
    std::vector<int64_t> supply(n, 0);
    for (int v = 0; v + 1 < n; ++v) supply[v] = Uniform(rng, -2, 2);
    for (int v = 0; v + 1 < n; ++v) supply[n - 1] -= supply[v];

    const FlowResult r = MinCostFlow(n, arcs, supply);
    const std::optional<int64_t> best = BruteForceMinCost(n, arcs, supply);
    if (!best) {
      EXPECT_EQ(r.status, Status::kInfeasible) << r.error;
      ++infeasible;
      continue;
    }
    ExpectValidFlow(n, arcs, supply, r);
    EXPECT_EQ(r.total_cost, *best);
    ++optimal;
  }
  // Both outcomes must have been exercised for the comparison to mean something.
  EXPECT_GE(optimal, 40);
  EXPECT_GE(infeasible, 40);
}

TEST(MinCostFlow, IsDeterministic) {
  // Many optima (every cost is 0): the same input must still give the same flow.
  std::vector<Arc> arcs;
  for (int u = 0; u < 6; ++u) {
    for (int v = 6; v < 12; ++v) arcs.push_back({u, v, 1, 0});
  }
  std::vector<int64_t> supply(12, 0);
  for (int u = 0; u < 6; ++u) supply[u] = 1, supply[6 + u] = -1;
  const FlowResult a = MinCostFlow(12, arcs, supply), b = MinCostFlow(12, arcs, supply);
  ASSERT_EQ(a.status, Status::kOptimal) << a.error;
  EXPECT_EQ(a.flow, b.flow);
}

TEST(MinCostFlow, RejectsInvalidInput) {
  struct Case {
    int num_nodes;
    std::vector<Arc> arcs;
    std::vector<int64_t> supply;
    const char* error;
  };
  const int64_t max_cost = (int64_t{1} << 61) / 3;  // for 2 nodes
  // Σ|supply| = 2 · big > 2^62.
  const int64_t big = (int64_t{1} << 61) + 1;
  const std::vector<Case> cases = {
      {-1, {}, {}, "num_nodes is -1"},
      {2, {}, {0}, "supply has 1 entries for 2 nodes"},
      {2, {{0, 1, 1, 0}, {2, 0, 1, 0}}, {0, 0}, "arc 1: from 2 is not a node in [0, 2)"},
      {2, {{0, -1, 1, 0}}, {0, 0}, "arc 0: to -1 is not a node in [0, 2)"},
      {2, {{0, 1, 1, 0, -1}}, {0, 0}, "arc 0: lower bound -1 is negative"},
      {2, {{0, 1, -1, 0}}, {0, 0}, "arc 0: capacity -1 is below its lower bound 0"},
      {2, {{0, 1, 2, 0, 3}}, {0, 0}, "arc 0: capacity 2 is below its lower bound 3"},
      {2, {{0, 1, 1, max_cost + 1}}, {0, 0}, "arc 0: |cost|"},
      {2, {{0, 1, 1, -max_cost - 1}}, {0, 0}, "arc 0: |cost|"},
      {2, {{0, 1, 5, 1}}, {3, -2}, "supplies sum to 1, not 0"},
      {2, {{0, 1, kUnlimited, 1}}, {big, -big}, "exceeds 2^62"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    const FlowResult r = MinCostFlow(c.num_nodes, c.arcs, c.supply);
    EXPECT_EQ(r.status, Status::kInvalidInput);
    EXPECT_THAT(r.error, HasSubstr(c.error));
    EXPECT_TRUE(r.flow.empty());
  }
  // At the cost limit it is solved exactly ...
  const FlowResult at_limit = MinCostFlow(2, {{0, 1, 5, max_cost}}, {1, -1});
  ASSERT_EQ(at_limit.status, Status::kOptimal) << at_limit.error;
  EXPECT_EQ(at_limit.total_cost, max_cost);
  // ... but a total beyond int64 is refused rather than wrapped.
  const FlowResult too_costly = MinCostFlow(2, {{0, 1, 100, max_cost}}, {100, -100});
  EXPECT_EQ(too_costly.status, Status::kInvalidInput);
  EXPECT_THAT(too_costly.error, HasSubstr("does not fit in int64"));
}

TEST(Status, HasNames) {
  EXPECT_EQ(ToString(Status::kOptimal), "optimal");
  EXPECT_EQ(ToString(Status::kInfeasible), "infeasible");
  EXPECT_EQ(ToString(Status::kUnbounded), "unbounded");
  EXPECT_EQ(ToString(Status::kInvalidInput), "invalid input");
}

}  // namespace
}  // namespace tessera::flow
