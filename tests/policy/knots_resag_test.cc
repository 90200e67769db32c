// knots-resag (seed 004, resource-agnostic sharing): first-fit decreasing by requested GPU
// memory, worked by hand on two nodes of two V100-32GB GPUs (GPUs 0, 1 on node v0; 2, 3 on v1).
#include "policy/knots_resag.h"

#include <gtest/gtest.h>

#include <map>

#include "base/clock.h"
#include "base/rng.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "usage_fixtures.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using testing::AddV100Nodes;
using testing::MemoryPod;

// Pods of 8, 20, 12, 16, 4 and 10 GiB arrive in that order. Sorted decreasing: 20, 16, 12, 10,
// 8, 4. First fit on 32 GiB GPUs: 20 → GPU 0 (12 left); 16 → GPU 1 (16 left); 12 → GPU 0 (0
// left); 10 → GPU 1 (6 left); 8 → GPU 2 (24 left); 4 → GPU 1 (2 left). Arrival order would
// instead give 8, 20, 4 → GPU 0; 12, 16 → GPU 1; 10 → GPU 2.
TEST(KnotsResagTest, FirstFitDecreasingByRequestedMemory) {
  ClusterState c;
  AddV100Nodes(c, 2, 2);
  KnotsResag p;
  ManualClock clock;
  Rng rng(1);
  sched::Scheduler s(c, p, clock, rng, {}, {.tie_break = sched::TieBreak::kRandom});
  const int gib[] = {8, 20, 12, 16, 4, 10};
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(s.Submit(MemoryPod(i + 1, gib[i] * 1024, "", i)));
  EXPECT_EQ(s.RunCycle().bound, 6);
  ASSERT_TRUE(c.CheckInvariants());
  std::map<int, GpuIndex> gpu_of_gib;
  for (int i = 0; i < 6; ++i) {
    gpu_of_gib[gib[i]] = c.partition(c.Find(i + 1)->placement.slices.at(0).partition).gpu;
  }
  EXPECT_EQ(gpu_of_gib,
            (std::map<int, GpuIndex>{{20, 0}, {16, 1}, {12, 0}, {10, 1}, {8, 2}, {4, 1}}));
  // Requests are reserved: GPU 1 has 2 GiB unrequested, GPU 3 all 32.
  EXPECT_EQ(c.gpu(1).free_memory_mib, 2 * 1024);
  EXPECT_EQ(c.gpu(3).free_memory_mib, 32 * 1024);
  // The order alone, FIFO among equal requests.
  const Workload a = MemoryPod(1, 4096, "", 2), b = MemoryPod(2, 4096, "", 1),
                 d = MemoryPod(3, 8192, "", 3);
  std::vector<const Workload*> q = {&a, &b, &d};
  p.Order(q);
  EXPECT_EQ(q, (std::vector<const Workload*>{&d, &b, &a}));
}

TEST(KnotsResagTest, EarlierNodesScoreHigherAndFullGpusArePassedOver) {
  ClusterState c;
  AddV100Nodes(c, 2, 1);
  KnotsResag p;
  auto on0 = p.Score(MemoryPod(1, 30000), 0, c);
  auto on1 = p.Score(MemoryPod(1, 30000), 1, c);
  ASSERT_TRUE(on0 && on1);
  EXPECT_EQ(on0->score, 100);
  EXPECT_EQ(on1->score, 50);
  ASSERT_TRUE(c.Place(MemoryPod(1, 30000), on0->placement));
  EXPECT_EQ(p.Filter(MemoryPod(2, 4096), 0, c).reason, "no GPU with enough unrequested memory");
  EXPECT_TRUE(p.Filter(MemoryPod(2, 2768), 0, c).ok());
}

}  // namespace
}  // namespace tessera::policy
