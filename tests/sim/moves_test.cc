// Arrive-only replay with moves (sim/moves.h): a move worked by hand, and random replays that
// keep every cluster invariant, never lose a workload and never spend more than the budget.
#include "sim/moves.h"

#include <gtest/gtest.h>

#include "openb_pods.h"
#include "policy/registry.h"

namespace tessera::sim {
namespace {

struct Replayed {
  ReplayResult result;
  MoveStats stats;
};

Replayed ReplayMoves(
    const std::vector<model::NodeSpec>& nodes, const std::vector<model::Workload>& pods,
    const std::string& policy_name, double budget, model::ClusterState* out = nullptr,
    const std::function<void(const ReplayEvent&, const model::ClusterState&)>& check = {}) {
  model::ClusterState cluster;
  for (const model::NodeSpec& n : nodes) EXPECT_TRUE(cluster.AddNode(n));
  Rng rng(1);
  auto policy = policy::MakePolicy(policy_name, {.rng = &rng}, nullptr);
  EXPECT_TRUE(policy) << policy.error().message;
  Replayed r;
  r.result =
      ReplayWithMoves(cluster, **policy, rng, pods, {budget}, r.stats, [&](const ReplayEvent& e) {
        if (check) check(e, cluster);
      });
  if (out != nullptr) *out = cluster;
  return r;
}

// Two one-GPU nodes, first-fit. 0.6 and 0.3 go to A (0.1 left), 0.4 to B (0.6 left); 0.7 fits
// neither. Freeing A's GPU for it takes the 0.6 share (the 0.3 alone leaves 0.4), which fits
// B: one move, then 0.7 on A — every pod placed, 2,000 of 2,000 milli, where the arrive-only
// replay stops at 1,300. Freeing B (its 0.4 share) would not do: A has no room for it.
TEST(MovesTest, OneMoveMakesRoomByHand) {
  const model::GpuModelId t4 = *model::FindGpuModel("T4");
  const std::vector<model::NodeSpec> nodes = {model::UniformNode("a", t4, 1, 8000, 65536),
                                              model::UniformNode("b", t4, 1, 8000, 65536)};
  const std::vector<model::Workload> pods = {OpenbPod(1, 1, 600), OpenbPod(2, 1, 300),
                                             OpenbPod(3, 1, 400), OpenbPod(4, 1, 700)};
  const Replayed none = ReplayMoves(nodes, pods, "first-fit", 0);
  EXPECT_EQ(none.result.failed, 1u);
  EXPECT_DOUBLE_EQ(none.result.allocated_gpu_milli, 1300);
  model::ClusterState cluster;
  const Replayed moved = ReplayMoves(nodes, pods, "first-fit", 100, &cluster);
  EXPECT_EQ(moved.result.failed, 0u);
  EXPECT_DOUBLE_EQ(moved.result.allocated_gpu_milli, 2000);
  EXPECT_EQ(moved.stats.moves, 1u);
  EXPECT_EQ(moved.stats.rescued, 1u);
  EXPECT_DOUBLE_EQ(moved.stats.moved_gpu_milli, 600);
  EXPECT_EQ(cluster.Find(1)->placement.node, *cluster.FindNode("b"));
  EXPECT_EQ(cluster.Find(4)->placement.node, *cluster.FindNode("a"));
  // With a budget of 1 per 100 arrivals, four arrivals allow no move.
  EXPECT_EQ(ReplayMoves(nodes, pods, "first-fit", 1).stats.moves, 0u);
}

// 40 random replays (3–6 nodes of 1–4 GPUs and 8–32 cores; 40–100 pods, shares, whole GPUs,
// CPU-only ones) under fgd and best-fit with 20 moves per 100 arrivals: after every arrival the
// cluster's invariants hold, every placed arrival is still placed (a move never loses one),
// allocation is the placed pods' requests, and moves never pass the budget so far.
TEST(MovesTest, RandomReplaysKeepEveryInvariant) {
  Rng rng(11);
  const model::GpuModelId models[] = {*model::FindGpuModel("T4"),
                                      *model::FindGpuModel("V100-32GB")};
  const int shares[] = {200, 300, 450, 500, 650, 800, 1000};
  size_t moves = 0;
  for (int c = 0; c < 40; ++c) {
    std::vector<model::NodeSpec> nodes;
    for (int n = 0, count = 3 + static_cast<int>(rng.Below(4)); n < count; ++n) {
      nodes.push_back(model::UniformNode("n" + std::to_string(n), models[rng.Below(2)],
                                         1 + static_cast<int>(rng.Below(4)),
                                         8000 * (1 + static_cast<int64_t>(rng.Below(4))), 65536));
    }
    std::vector<model::Workload> pods;
    for (int i = 0, count = 40 + static_cast<int>(rng.Below(61)); i < count; ++i) {
      const double kind = rng.Uniform();
      const int64_t cpu = 1000 * (1 + static_cast<int64_t>(rng.Below(6)));
      pods.push_back(kind < 0.1    ? OpenbPod(i + 1, 0, 0, cpu)
                     : kind < 0.85 ? OpenbPod(i + 1, 1, shares[rng.Below(7)], cpu)
                                   : OpenbPod(i + 1, 2, 1000, cpu));
    }
    for (const char* policy : {"fgd", "best-fit"}) {
      std::vector<model::WorkloadId> placed;
      double requested = 0;
      const Replayed r = ReplayMoves(nodes, pods, policy, 20, nullptr,
                                     [&](const ReplayEvent& e, const model::ClusterState& cluster) {
                                       auto ok = cluster.CheckInvariants();
                                       ASSERT_TRUE(ok) << ok.error().message;
                                       if (e.placed) {
                                         placed.push_back(e.workload->id);
                                         requested += RequestedGpuMilli(*e.workload);
                                       }
                                       EXPECT_EQ(cluster.placed_count(), placed.size());
                                       for (model::WorkloadId id : placed) {
                                         EXPECT_NE(cluster.Find(id), nullptr) << "lost " << id;
                                       }
                                       EXPECT_NEAR(cluster.allocated_gpu_milli(), requested, 1e-6);
                                     });
      EXPECT_LE(r.stats.moves, pods.size() * 20 / 100);
      EXPECT_LE(r.stats.rescued, r.stats.moves);
      moves += r.stats.moves;
    }
  }
  EXPECT_GT(moves, 0u);  // the replays did move pods
  std::printf("%zu moves over 80 replays\n", moves);
}

}  // namespace
}  // namespace tessera::sim
