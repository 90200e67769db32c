#include "sim/replay.h"

#include <gtest/gtest.h>

#include "policy/first_fit.h"
#include "policy/policy.h"
#include "sim/packing.h"

namespace tessera::sim {
namespace {

model::Workload Share(model::WorkloadId id, int count, int milli) {
  model::Workload w;
  w.id = id;
  w.gpu.count = count;
  w.gpu.milli = milli;
  return w;
}

TEST(ReplayTest, ArriveOnlyFailuresAreFinal) {
  model::ClusterState c;
  ASSERT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel("T4"), 2, 8000, 8192)));
  // First-fit by hand: 600 -> GPU0 (400 left); 600 -> GPU1 (400 left); 600 fails (first
  // failure after 1800 arrived); 1000 fails (no idle GPU); 300 -> GPU0 (100 left).
  const std::vector<model::Workload> order = {Share(1, 1, 600), Share(2, 1, 600), Share(3, 1, 600),
                                              Share(4, 1, 1000), Share(5, 1, 300)};
  policy::FirstFit ff;
  Rng rng(1);
  std::vector<bool> placed;
  const ReplayResult r = ReplayArriveOnly(
      c, ff, rng, order, [&](const ReplayEvent& e) { placed.push_back(e.placed); });
  EXPECT_EQ(placed, (std::vector<bool>{true, true, false, false, true}));
  EXPECT_EQ(r.placed, 3u);
  EXPECT_EQ(r.failed, 2u);
  EXPECT_DOUBLE_EQ(r.arrived_gpu_milli, 3100);
  EXPECT_DOUBLE_EQ(r.allocated_gpu_milli, 1500);
  EXPECT_DOUBLE_EQ(r.first_failure_arrived_gpu_milli, 1800);
  EXPECT_EQ(c.gpu(0).free_milli, 100);
}

// A batch policy that places only the oldest pending pod, and only from its second cycle on:
// the first arrival waits in its own cycle. Before the scheduler dropped what a batch left
// waiting, the second arrival's cycle bound the first pod, the replay counted the second as
// placed, and openb-alloc's per-event callback dereferenced its missing placement (SIGSEGV,
// #33's `--policy drmaestro`).
class OldestFromSecondCycle final : public policy::Policy {
 public:
  std::string_view name() const override { return "oldest-from-second-cycle"; }
  std::optional<policy::Candidate> Score(const model::Workload&, model::NodeIndex,
                                         const model::ClusterState&) override {
    return std::nullopt;
  }
  bool Batches() const override { return true; }
  std::optional<std::vector<policy::Candidate>> PlaceBatch(
      std::span<const model::Workload* const> pending, const model::ClusterState&) override {
    if (cycles_++ == 0 || pending.empty()) return std::vector<policy::Candidate>{};
    const model::Workload& w = *pending.front();
    return std::vector<policy::Candidate>{
        {.score = 1,
         .placement = {w.id, 0, {{model::ClusterState::PartitionOf(0, 0), w.gpu.milli, 0}}}}};
  }

 private:
  int cycles_ = 0;
};

TEST(ReplayTest, ABatchThatLeavesAPodWaitingCountsItFailed) {
  model::ClusterState c;
  ASSERT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel("T4"), 1, 8000, 8192)));
  const std::vector<model::Workload> order = {Share(1, 1, 300), Share(2, 1, 300)};
  OldestFromSecondCycle policy;
  Rng rng(1);
  std::vector<bool> placed;
  const ReplayResult r = ReplayArriveOnly(c, policy, rng, order, [&](const ReplayEvent& e) {
    placed.push_back(e.placed);
    // What openb-alloc's callback does with a placed event.
    if (e.placed) {
      EXPECT_NE(c.Find(e.workload->id), nullptr);
    }
  });
  // Pod 1 is dropped in its own cycle; pod 2, then the oldest pending, is placed in its own.
  EXPECT_EQ(placed, (std::vector<bool>{false, true}));
  EXPECT_EQ(r.placed, 1u);
  EXPECT_EQ(c.Find(1), nullptr);
  EXPECT_NE(c.Find(2), nullptr);
}

TEST(PackingTest, WorkloadsAskForTheInflatedCapacityAndAreSeeded) {
  const model::ClusterState c = PackingCluster(10);
  EXPECT_EQ(c.gpu_count(), 8 * 8 + 2 * 4);  // nodes 1 and 6 have 4 GPUs
  const auto a = PackingWorkloads(c, 5, 1.3), b = PackingWorkloads(c, 5, 1.3);
  ASSERT_EQ(a.size(), b.size());
  double asked = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].gpu.milli, b[i].gpu.milli);
    EXPECT_TRUE(a[i].Validate());
    asked += RequestedGpuMilli(a[i]);
  }
  // Draws stop at the first that reaches 130% of 72 GPUs; the last adds at most 8 GPUs.
  EXPECT_GE(asked, 1.3 * 72000);
  EXPECT_LT(asked, 1.3 * 72000 + 8000);
  auto rows = RunPacking({"first-fit"}, {5}, 10);
  ASSERT_TRUE(rows);
  EXPECT_GT((*rows)[0].failed, 0u);  // 130% asked cannot all fit
  EXPECT_LE((*rows)[0].alloc_final_pct, 100.0);
}

}  // namespace
}  // namespace tessera::sim
