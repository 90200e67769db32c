// The planner's solvers on problems built by hand: optima worked out on paper, the packing's
// validity, and the heuristic against the exact optimum on random instances.
#include "plan/solve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "model/mig.h"

namespace tessera::plan {
namespace {

model::GpuModelId Id(const char* name) { return *model::FindGpuModel(name); }

int KindOf(const Problem& p, const std::string& config) {
  for (size_t k = 0; k < p.kinds.size(); ++k) {
    if (p.kinds[k].config == config) return static_cast<int>(k);
  }
  ADD_FAILURE() << "no kind " << config;
  return 0;
}

void AddService(Problem& p, double demand, std::vector<std::pair<std::string, double>> rates,
                int min_replicas = 1) {
  ServiceNeed need{demand, min_replicas, {}};
  for (const auto& [config, rate] : rates) need.options.push_back({KindOf(p, config), rate});
  p.services.push_back(std::move(need));
}

// Every service served, every MIG GPU cut into a layout NVIDIA accepts with one replica per
// instance of the right profile, every MPS GPU at most 100 % shared.
void ExpectValid(const Problem& p, const Plan& plan) {
  for (size_t s = 0; s < p.services.size(); ++s) {
    EXPECT_GE(plan.capacity[s], p.services[s].demand * (1 - 1e-9)) << "service " << s;
    EXPECT_GE(plan.replicas[s], p.services[s].min_replicas);
  }
  double cost = 0;
  for (const PlannedGpu& g : plan.gpus) {
    const model::GpuModel& m = model::GetGpuModel(p.gpus[static_cast<size_t>(g.gpu)].model);
    cost += p.gpus[static_cast<size_t>(g.gpu)].price;
    if (g.mig) {
      EXPECT_TRUE(model::ValidateLayout(m, *g.mig).has_value());
      std::vector<int> used(g.mig->instances.size(), 0);
      for (const Seat& s : g.seats) {
        ASSERT_GE(s.instance, 0);
        EXPECT_EQ(++used[static_cast<size_t>(s.instance)], 1);
        EXPECT_EQ(p.kinds[static_cast<size_t>(s.kind)].profile,
                  g.mig->instances[static_cast<size_t>(s.instance)].profile);
      }
    } else {
      int percent = 0;
      for (const Seat& s : g.seats) percent += p.kinds[static_cast<size_t>(s.kind)].mps_percent;
      EXPECT_LE(percent, 100);
    }
  }
  EXPECT_NEAR(plan.cost, cost, 1e-9);
}

// One A30 (four 1g.6gb, or 2g.12gb + two 1g.6gb, or two 2g.12gb, or 4g.24gb). Service a needs
// 30 QPS at 10 per 1g.6gb (3 instances) or 16 per 2g.12gb (2); service b 12 QPS at 12 per
// 1g.6gb. 3 + 1 one-slice instances fill one A30: the optimum is 1 GPU, 3 × 1g for a.
TEST(PlanSolveTest, ExactFillsOneA30ByHand) {
  Problem p = MenuProblem({{Id("A30-24GB"), 1}});
  AddService(p, 30, {{"A30-24GB/1g.6gb/100", 10}, {"A30-24GB/2g.12gb/100", 16}});
  AddService(p, 12, {{"A30-24GB/1g.6gb/100", 12}});
  auto exact = SolveExact(p);
  ASSERT_TRUE(exact) << exact.error().message;
  EXPECT_EQ(exact->solver, "exact");
  EXPECT_EQ(exact->gpu_count(), 1);
  EXPECT_EQ(exact->replicas, (std::vector<int>{3, 1}));
  ExpectValid(p, *exact);
  const Plan heuristic = SolveHeuristic(p);
  EXPECT_EQ(heuristic.gpu_count(), 1);
  ExpectValid(p, heuristic);
}

// Prices decide: a V100 at 3 against an A30 at 2. A service of 40 QPS that runs 25 on a whole
// V100, 20 on a whole A30 and 10 on a 1g.6gb: two A30s (4) beat two V100s (6) and mixing
// (5); four 1g.6gb fill one A30 (2), the optimum.
TEST(PlanSolveTest, ExactWeighsPricesByHand) {
  Problem p = MenuProblem({{Id("V100-32GB"), 3}, {Id("A30-24GB"), 2}});
  AddService(
      p, 40,
      {{"V100-32GB/whole/100", 25}, {"A30-24GB/whole/100", 20}, {"A30-24GB/1g.6gb/100", 10}});
  auto exact = SolveExact(p);
  ASSERT_TRUE(exact) << exact.error().message;
  EXPECT_DOUBLE_EQ(exact->cost, 2);
  EXPECT_EQ(exact->replicas[0], 4);
  ExpectValid(p, *exact);
}

// MPS quarters pack exactly: 3 × 50 % and 2 × 25 % on V100s are 2 GPUs.
TEST(PlanSolveTest, MpsSharesPackIntoWholeGpus) {
  Problem p = MenuProblem({{Id("V100-32GB"), 1}});
  AddService(p, 30, {{"V100-32GB/whole/50", 10}});
  AddService(p, 10, {{"V100-32GB/whole/25", 5}});
  const Plan plan = SolveHeuristic(p);
  EXPECT_EQ(plan.replicas, (std::vector<int>{3, 2}));
  EXPECT_EQ(plan.gpu_count(), 2);
  ExpectValid(p, plan);
}

// A random instance of at most 20 services and 3 GPU models: a menu drawn from six models at
// prices 1–5, each service's rate on a whole GPU, and how little a smaller slice loses (a
// fixed part 0–0.9 of its time; thesis Ch. 6.2: host-bound engines barely slow down on a small
// slice); half the services are refused MPS shares below 100 %.
Problem RandomInstance(Rng& rng, double exact_time_limit_s) {
  const char* models[] = {"V100-32GB", "A30-24GB", "A100-40GB", "A100-80GB", "H100-80GB", "T4"};
  std::vector<GpuOffer> menu;
  const int gpus = 1 + static_cast<int>(rng.Below(3));
  std::vector<int> pick = {0, 1, 2, 3, 4, 5};
  rng.Shuffle(pick);
  for (int g = 0; g < gpus; ++g) {
    menu.push_back({Id(models[pick[static_cast<size_t>(g)]]), rng.Uniform(1, 5)});
  }
  Problem p = MenuProblem(menu, {.exact_time_limit_s = exact_time_limit_s});
  const int services = 1 + static_cast<int>(rng.Below(20));
  for (int s = 0; s < services; ++s) {
    const double fixed = rng.Uniform(0, 0.9);
    ServiceNeed need{rng.Uniform(5, 400), 1 + static_cast<int>(rng.Below(2)), {}};
    for (size_t k = 0; k < p.kinds.size(); ++k) {
      const SliceKind& kind = p.kinds[k];
      const double whole = 50 * menu[static_cast<size_t>(kind.gpu)].price * rng.Uniform(0.6, 1.2);
      const double share = static_cast<double>(kind.units) / kind.units_per_gpu;
      if (kind.mps_percent < 100 && rng.Uniform() < 0.5) continue;  // no MPS for some
      need.options.push_back({static_cast<int>(k), whole / (fixed + (1 - fixed) / share)});
    }
    p.services.push_back(std::move(need));
  }
  return p;
}

// The bar: on 100 random instances the heuristic within 5 % of the exact optimum. The
// optimum is bounded below by CBC's bound (the optimum itself when proven, as all 100 are in
// well under a second each), so the heuristic ≤ 1.05 × bound means within 5 % of the optimum
// and ≥ bound means it never claims a plan cheaper than possible. Measured on this seed: worst
// +2.5 %, mean +0.15 %; over six seeds of this generator (600 instances) worst +4.1 %, 520
// optimal (docs/planning.md).
TEST(PlanSolveTest, HeuristicWithinFivePercentOfExactOnRandomInstances) {
  Rng rng(42);
  double worst = 0, sum = 0;
  int proven = 0;
  constexpr int kInstances = 100;
  for (int instance = 0; instance < kInstances; ++instance) {
    const Problem p = RandomInstance(rng, 10);
    auto exact = SolveExact(p);
    ASSERT_TRUE(exact) << exact.error().message;
    const Plan heuristic = SolveHeuristic(p);
    ExpectValid(p, *exact);
    ExpectValid(p, heuristic);
    ASSERT_GT(exact->lower_bound, 0);
    EXPECT_LE(exact->lower_bound, exact->cost + 1e-9);
    EXPECT_GE(heuristic.cost, exact->lower_bound - 1e-6) << "instance " << instance;
    const double gap = heuristic.cost / exact->lower_bound - 1;
    EXPECT_LE(gap, 0.05) << "instance " << instance << ": heuristic " << heuristic.cost
                         << ", exact " << exact->cost << " (" << exact->solver << ")";
    if (exact->solver == "exact") ++proven;
    worst = std::max(worst, gap);
    sum += gap;
  }
  std::printf(
      "heuristic over the optimum's bound: worst %+.2f %%, mean %+.2f %%, %d of %d proven\n",
      100 * worst, 100 * sum / kInstances, proven, kInstances);
}

}  // namespace
}  // namespace tessera::plan
