// The thesis's baselines (seed 000, Ch. 9.2) and the Kubernetes default, driven through the
// real scheduler core on a small mixed cluster: one V100-32GB node (no MIG) and one A30-24GB
// node cut into two 2g.12gb instances (not min's layout, not max's).
#include <gtest/gtest.h>

#include "policy/max.h"
#include "policy/min.h"
#include "policy/registry.h"
#include "policy/round_robin.h"
#include "policy/whole_gpu.h"
#include "sched/scheduler.h"

namespace tessera::policy {
namespace {

using model::ClusterState;

Workload Share(model::WorkloadId id, int milli = 300) {
  Workload w;
  w.id = id;
  w.arrival_s = static_cast<double>(id);
  w.gpu.count = 1;
  w.gpu.milli = milli;
  return w;
}

class ThesisBaselinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.AddNode(
        model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
    const auto a30 = *model::FindGpuModel("A30-24GB");
    ASSERT_TRUE(c_.AddNode(
        model::UniformNode("a30", a30, 1, 64000, 1 << 20,
                           *model::ParseLayout(model::GetGpuModel(a30), "2g.12gb,2g.12gb"))));
  }
  // Submits n workloads and runs one cycle; returns how many were bound.
  int RunOnce(Policy& p, int n) {
    sched::Scheduler s(c_, p, clock_, rng_, {});
    for (int i = 1; i <= n; ++i) EXPECT_TRUE(s.Submit(Share(i)));
    const int bound = s.RunCycle().bound;
    pending_ = s.pending_count();
    return bound;
  }
  ClusterState c_;
  ManualClock clock_;
  Rng rng_{1};
  size_t pending_ = 0;
};

TEST_F(ThesisBaselinesTest, MinCutsMigSmallestAndGivesAGpuWithoutMigToOneAtAQuarter) {
  Min min;  // mps_slots 1: the device plugin ties one application to the V100 (Ch. 9.2.1)
  // V100: one 25% slot with 8 GiB. A30: idle, so the first workload that reaches it reshapes it
  // to 4 x 1g.6gb and the next three take the rest. Nine workloads: 1 + 4 bound, 4 wait.
  EXPECT_EQ(RunOnce(min, 9), 5);
  EXPECT_EQ(pending_, 4u);
  const model::Partition& v100 = c_.partition(ClusterState::PartitionOf(0, 0));
  ASSERT_EQ(v100.clients.size(), 1u);
  EXPECT_EQ(v100.clients[0].milli, 250);
  EXPECT_EQ(v100.clients[0].memory_mib, 8 * 1024);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  for (const model::Partition& p : c_.partitions_of(1)) EXPECT_EQ(p.clients.size(), 1u);
  EXPECT_TRUE(c_.CheckInvariants());
}

TEST_F(ThesisBaselinesTest, MinWithFourSlotsSharesOtherGpusInQuarters) {
  Min min(4);
  // V100: four 25% slots with 8 GiB each. A30: idle, so the first workload that reaches it
  // reshapes it to 4 x 1g.6gb (no reshape hook: at once) and the next three take the rest.
  // Nine workloads: 4 + 4 bound, 1 waits.
  EXPECT_EQ(RunOnce(min, 9), 8);
  EXPECT_EQ(pending_, 1u);
  const model::Partition& v100 = c_.partition(ClusterState::PartitionOf(0, 0));
  EXPECT_EQ(v100.clients.size(), 4u);
  EXPECT_EQ(v100.clients[0].milli, 250);
  EXPECT_EQ(v100.clients[0].memory_mib, 8 * 1024);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  for (const model::Partition& p : c_.partitions_of(1)) EXPECT_EQ(p.clients.size(), 1u);
  EXPECT_TRUE(c_.CheckInvariants());
  // The smallest layouts of the guide: A30 4 x 1g, A100 7 x 1g.5gb.
  EXPECT_EQ(
      Min::SmallestLayout(model::GetGpuModel(*model::FindGpuModel("A100-40GB"))).instances.size(),
      7u);
}

TEST_F(ThesisBaselinesTest, MaxGivesWholeGpusAndTurnsMigOff) {
  Max max;
  // V100 whole to workload 1; the A30 is idle but cut: offered with a reshape to MIG off.
  EXPECT_EQ(RunOnce(max, 3), 2);
  EXPECT_EQ(pending_, 1u);
  EXPECT_FALSE(c_.gpu(1).mig.has_value());
  const model::Partition& a30 = c_.partition(ClusterState::PartitionOf(1, 0));
  ASSERT_EQ(a30.clients.size(), 1u);
  EXPECT_EQ(a30.clients[0].milli, 1000);
  EXPECT_EQ(a30.clients[0].memory_mib, 24 * 1024);
  EXPECT_TRUE(c_.CheckInvariants());
}

TEST_F(ThesisBaselinesTest, WholeGpuNeverReshapesAndIgnoresTheShare) {
  WholeGpu whole;
  // Only the V100 is a whole GPU; the cut A30 is never touched.
  EXPECT_EQ(RunOnce(whole, 2), 1);
  EXPECT_EQ(c_.partition(0).clients[0].milli, 1000);
  EXPECT_TRUE(c_.gpu(1).mig.has_value());
  EXPECT_EQ(c_.gpu(1).partition_count, 2);
}

TEST_F(ThesisBaselinesTest, RoundRobinCutsTheV100InQuarterChunksAndSharesThemEqually) {
  RoundRobin rr;  // mps_chunks 4
  // Ring of 8: the V100's four 25% chunks, then the A30's four 1g.6gb. w1..w4 -> the V100's
  // chunks at 250 milli / 8 GiB; w5..w8 -> the A30 (cut by w5); w9 -> V100 chunk 0 again: it
  // and w1 get 125 milli and 4 GiB each, the other three keep 250.
  EXPECT_EQ(RunOnce(rr, 9), 9);
  const model::Partition& v100 = c_.partition(ClusterState::PartitionOf(0, 0));
  ASSERT_EQ(v100.clients.size(), 5u);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 125);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].memory_mib, 4 * 1024);
  EXPECT_EQ(c_.Find(9)->placement.slices[0].milli, 125);
  for (model::WorkloadId id : {2, 3, 4}) EXPECT_EQ(c_.Find(id)->placement.slices[0].milli, 250);
  EXPECT_EQ(v100.used_milli, 1000);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  for (int slot = 0; slot < 4; ++slot) {
    EXPECT_EQ(c_.partition(ClusterState::PartitionOf(1, slot)).clients.size(), 1u);
  }
  EXPECT_TRUE(c_.CheckInvariants());
}

TEST_F(ThesisBaselinesTest, RoundRobinWithOneChunkTakesChunksInTurnAndSharesThemEqually) {
  RoundRobin rr(1);
  // Chunks: the V100 whole (1) and the A30's four smallest instances (4) = a ring of 5.
  // w1 -> V100; w2 -> A30 chunk 0 (the idle A30 is cut to 4 x 1g.6gb first); w3..w5 -> A30
  // chunks 1..3; w6 -> V100 again: two clients, 500 milli and 16 GiB each (w1 resized);
  // w7 -> A30 chunk 0: 500 milli and 3 GiB each.
  EXPECT_EQ(RunOnce(rr, 7), 7);
  const model::Partition& v100 = c_.partition(ClusterState::PartitionOf(0, 0));
  ASSERT_EQ(v100.clients.size(), 2u);
  for (const model::Client& cl : v100.clients) {
    EXPECT_EQ(cl.milli, 500);
    EXPECT_EQ(cl.memory_mib, 16 * 1024);
  }
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 500);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  const model::Partition& first = c_.partition(ClusterState::PartitionOf(1, 0));
  ASSERT_EQ(first.clients.size(), 2u);
  EXPECT_EQ(first.clients[1].memory_mib, 3 * 1024);
  for (int slot = 1; slot < 4; ++slot) {
    EXPECT_EQ(c_.partition(ClusterState::PartitionOf(1, slot)).clients.size(), 1u);
  }
  EXPECT_TRUE(c_.CheckInvariants());
}

// In Kubernetes the MIG mode is fixed (the agent never changes it). One A30 with MIG off and
// one cut 2 x 2g.12gb: the first is never cut, the second never made whole, but it may still
// be cut differently.
class FixedMigModeTest : public ThesisBaselinesTest {
 protected:
  void SetUp() override {
    const auto a30 = *model::FindGpuModel("A30-24GB");
    ASSERT_TRUE(c_.AddNode(model::UniformNode("whole", a30, 1, 64000, 1 << 20)));
    ASSERT_TRUE(c_.AddNode(
        model::UniformNode("cut", a30, 1, 64000, 1 << 20,
                           *model::ParseLayout(model::GetGpuModel(a30), "2g.12gb,2g.12gb"))));
    c_.set_mig_mode_fixed(true);
  }
};

TEST_F(FixedMigModeTest, TheClusterRefusesAModeChange) {
  const auto a30 = model::GetGpuModel(*model::FindGpuModel("A30-24GB"));
  auto on = c_.Reshape(0, *model::ParseLayout(a30, "4g.24gb"));
  ASSERT_FALSE(on);
  EXPECT_NE(on.error().message.find("MIG mode is fixed (MIG off)"), std::string::npos)
      << on.error().message;
  EXPECT_FALSE(c_.Reshape(1, std::nullopt));
  EXPECT_TRUE(c_.Reshape(1, *model::ParseLayout(a30, "4g.24gb")));  // MIG stays on
  EXPECT_TRUE(c_.MayReshapeTo(0, false));
  EXPECT_FALSE(c_.MayReshapeTo(0, true));
}

TEST_F(FixedMigModeTest, MinSharesTheWholeGpuInQuartersAndCutsOnlyTheCutOne) {
  Min min(4);
  EXPECT_EQ(RunOnce(min, 9), 8);  // 4 quarters of the whole A30 + 4 x 1g.6gb
  EXPECT_FALSE(c_.gpu(0).mig.has_value());
  EXPECT_EQ(c_.partition(ClusterState::PartitionOf(0, 0)).clients.size(), 4u);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  EXPECT_FALSE(min.Reshape(0, c_).has_value());
  EXPECT_TRUE(c_.CheckInvariants());
}

TEST_F(FixedMigModeTest, MaxUsesOnlyTheWholeGpu) {
  Max max;
  EXPECT_EQ(RunOnce(max, 3), 1);  // not fixed, the cut A30 would be turned whole too
  EXPECT_TRUE(c_.gpu(1).mig.has_value());
  EXPECT_FALSE(max.Reshape(1, c_).has_value());
}

TEST_F(FixedMigModeTest, RoundRobinCountsTheWholeGpuAsOneChunk) {
  RoundRobin rr(1);
  // Ring: the whole A30 (1 chunk) and the cut one's 4 x 1g.6gb (cut first, MIG stays on).
  EXPECT_EQ(RunOnce(rr, 6), 6);
  EXPECT_FALSE(c_.gpu(0).mig.has_value());
  EXPECT_EQ(c_.partition(ClusterState::PartitionOf(0, 0)).clients.size(), 2u);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  EXPECT_TRUE(c_.CheckInvariants());
}

TEST(ThesisBaselinesRegistryTest, EveryBaselineIsRegistered) {
  Rng rng(1);
  for (const char* name : {"first-fit", "whole-gpu", "min", "max", "round-robin"}) {
    auto p = MakePolicy(name, {&rng, nullptr});
    ASSERT_TRUE(p) << name;
    EXPECT_EQ((*p)->name(), name);
  }
}

TEST(ThesisBaselinesRegistryTest, ReadingsOutsideTheThesisAreRefusedByName) {
  Rng rng(1);
  for (const auto& [name, options] :
       std::vector<std::pair<const char*, nlohmann::json>>{{"min", {{"mps_slots", 3}}},
                                                           {"round-robin", {{"mps_chunks", 0}}},
                                                           {"round-robin", {{"mps_chunks", 11}}}}) {
    auto p = MakePolicy(name, {&rng, nullptr}, options);
    ASSERT_FALSE(p) << name;
    EXPECT_NE(p.error().message.find(options.begin().key()), std::string::npos)
        << p.error().message;
  }
  EXPECT_TRUE(MakePolicy("min", {&rng, nullptr}, {{"mps_slots", 4}}));
  EXPECT_TRUE(MakePolicy("round-robin", {&rng, nullptr}, {{"mps_chunks", 1}}));
}

}  // namespace
}  // namespace tessera::policy
