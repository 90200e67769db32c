// gpushare (Alibaba's gpushare-scheduler-extender, seed 003's baseline): binpack by requested
// memory, on hand-built V100-32GB GPUs (32,768 MiB each).
#include "policy/gpushare.h"

#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/rng.h"
#include "policy/registry.h"
#include "policy/usage_view.h"
#include "sched/scheduler.h"
#include "usage_fixtures.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using testing::AddV100Nodes;
using testing::kV100Mib;
using testing::MemoryPod;

class GpushareTest : public ::testing::Test {
 protected:
  // Places a memory share of `mib` on GPU g, reserving its request as gpushare does.
  void Hold(GpuIndex g, model::WorkloadId id, int64_t mib) {
    const Workload w = MemoryPod(id, mib);
    model::Slice s{ClusterState::PartitionOf(g, 0), 1000, mib, true};
    ASSERT_TRUE(c_.Place(w, {w.id, c_.gpu(g).node, {s}}));
  }
  GpuIndex GpuOf(const Candidate& cand) const {
    return c_.partition(cand.placement.slices.at(0).partition).gpu;
  }
  ClusterState c_;
  Gpushare policy_;
};

TEST_F(GpushareTest, BinpacksOntoTheFittingGpuWithTheLeastFreeMemory) {
  AddV100Nodes(c_, 1, 4);
  Hold(0, 100, 24576);  // 8,192 MiB free
  Hold(1, 101, 16384);  // 16,384 free
  Hold(2, 102, 28672);  // 4,096 free; GPU 3: 32,768 free
  // 7,168 MiB fits GPUs 0, 1 and 3; GPU 0 has the least free (8,192).
  EXPECT_EQ(Gpushare::BinpackGpu(MemoryPod(1, 7168), 0, c_), 0);
  auto cand = policy_.Score(MemoryPod(1, 7168), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(GpuOf(*cand), 0);
  // The slice reserves the request and caps threads at the request's share, reserving none.
  const model::Slice& s = cand->placement.slices[0];
  EXPECT_EQ(s.memory_mib, 7168);
  EXPECT_EQ(s.milli, 1000);
  EXPECT_TRUE(s.best_effort);
  ASSERT_TRUE(c_.Place(MemoryPod(1, 7168), cand->placement));
  EXPECT_EQ(c_.EnvironmentOf(cand->placement).mps_pinned_mem_limit, "0=7168M");
  // GPU 0 now has 1,024 free: 8,192 goes to GPU 1 (16,384), 16,385 only to the idle GPU 3.
  EXPECT_EQ(Gpushare::BinpackGpu(MemoryPod(2, 8192), 0, c_), 1);
  EXPECT_EQ(Gpushare::BinpackGpu(MemoryPod(3, 16385), 0, c_), 3);
  // More than any GPU has: filtered, saying why.
  EXPECT_EQ(policy_.Filter(MemoryPod(4, kV100Mib + 1), 0, c_).reason,
            "no GPU with enough unrequested memory");
  ASSERT_TRUE(c_.CheckInvariants());
}

TEST_F(GpushareTest, TiesGoToTheLowestGpuAndNodesScoreByTheirTightestGpu) {
  AddV100Nodes(c_, 2, 2);
  // Node 0: two idle GPUs (a tie: GPU 0). Node 1: GPU 2 holds 22,528 (10,240 free).
  EXPECT_EQ(Gpushare::BinpackGpu(MemoryPod(1, 7168), 0, c_), 0);
  Hold(2, 100, 22528);
  auto on0 = policy_.Score(MemoryPod(1, 7168), 0, c_);
  auto on1 = policy_.Score(MemoryPod(1, 7168), 1, c_);
  ASSERT_TRUE(on0 && on1);
  EXPECT_EQ(GpuOf(*on1), 2);
  EXPECT_GT(on1->score, on0->score);  // 3,072 left beats 25,600 left
}

TEST_F(GpushareTest, WholeGpuRequestsStayExclusiveAndSharesKeepOffThem) {
  AddV100Nodes(c_, 1, 2);
  Workload whole = MemoryPod(1, 0);  // a whole GPU, no memory stated: nvidia.com/gpu
  EXPECT_FALSE(SharesByMemory(whole));
  auto cand = policy_.Score(whole, 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_FALSE(cand->placement.slices[0].best_effort);
  ASSERT_TRUE(c_.Place(whole, cand->placement));
  // GPU 0 is held whole: a share goes to GPU 1 even though GPU 0 would be tighter.
  EXPECT_EQ(Gpushare::BinpackGpu(MemoryPod(2, 1024), 0, c_), 1);
  Hold(1, 100, 1024);
  // Neither GPU is idle now: a second whole-GPU request does not fit.
  EXPECT_FALSE(policy_.Filter(MemoryPod(3, 0), 0, c_).ok());
}

// Seed 003 §6.1: ssd-mobilenet needs about 7 GB; gpushare co-locates 4 engines on a 32 GB V100
// at 0 % over-provisioning (7 GB requests), 3 at 50 % (10.5 GB), 2 at 100 % (14 GB) and one at
// 150 % and above — whatever the engines actually use.
TEST_F(GpushareTest, CoLocatesAsManyAsTheRequestsFitLikeSeed003) {
  const std::pair<int, int> cases[] = {{0, 4}, {50, 3}, {100, 2}, {150, 1}, {250, 1}};
  for (const auto& [overprovision, colocated] : cases) {
    ClusterState c;
    AddV100Nodes(c, 1, 1);
    Gpushare p;
    ManualClock clock;
    Rng rng(1);
    sched::Scheduler s(c, p, clock, rng, {});
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(s.Submit(MemoryPod(i + 1, 7168 * (100 + overprovision) / 100)));
    }
    s.RunCycle();
    EXPECT_EQ(static_cast<int>(c.placed_count()), colocated) << overprovision << " %";
    ASSERT_TRUE(c.CheckInvariants());
  }
}

TEST_F(GpushareTest, IsRegisteredWithoutOptions) {
  Rng rng(1);
  auto made = MakePolicy("gpushare", {.rng = &rng}, {});
  ASSERT_TRUE(made.has_value()) << made.error().message;
  EXPECT_EQ((*made)->name(), "gpushare");
}

}  // namespace
}  // namespace tessera::policy
