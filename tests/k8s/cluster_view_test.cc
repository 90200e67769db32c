// The store <-> ClusterState translation both Kubernetes drivers share.
#include "k8s/cluster_view.h"

#include <gtest/gtest.h>

#include "a100_inventory.h"

namespace tessera::k8s {
namespace {

using testing_support::A100Inventory;

TEST(ClusterViewTest, WorkloadIdsAreStablePerUidInOrderOfFirstSight) {
  WorkloadIds ids;
  EXPECT_EQ(ids.Find("a"), std::nullopt);
  EXPECT_EQ(ids.IdOf("a"), 1);
  EXPECT_EQ(ids.IdOf("b"), 2);
  EXPECT_EQ(ids.IdOf("a"), 1);
  EXPECT_EQ(ids.Find("b"), 2);
  EXPECT_EQ(ids.Find("c"), std::nullopt);
}

class ClusterViewPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = store::ToNodeSpec(A100Inventory("gpu-0", 2));
    ASSERT_TRUE(spec.has_value()) << spec.error().message;
    ASSERT_TRUE(cluster_.AddNode(*spec).has_value());
  }
  model::ClusterState cluster_;
};

TEST_F(ClusterViewPlacementTest, RecordAndPlacementTranslateBothWays) {
  // 250 milli and 1 GiB of the second A100 (uuid GPU-gpu-0-1, as its agent names it).
  const model::Placement p{7, 0, {{model::ClusterState::PartitionOf(1, 0), 250, 1024}}};
  const store::PlacementRecord rec = RecordOf({"inference", "p-0", "uid-7"}, p, cluster_);
  EXPECT_EQ(rec, (store::PlacementRecord{
                     "uid-7", "gpu-0", "p-0", "inference", {{"GPU-gpu-0-1", 250, 1024}}}));
  EXPECT_EQ(SlicesText(rec.slices), "GPU-gpu-0-1 (250 milli, 1024 MiB)");

  // Back: the same placement, and a workload whose GPU request is what the record holds, so
  // the cluster accepts it.
  model::Workload w;
  w.id = 7;
  auto back = PlacementFromRecord(rec, cluster_, w);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->workload, 7);
  EXPECT_EQ(back->node, 0);
  ASSERT_EQ(back->slices.size(), 1u);
  EXPECT_EQ(back->slices[0].partition, model::ClusterState::PartitionOf(1, 0));
  EXPECT_EQ(back->slices[0].milli, 250);
  EXPECT_EQ(back->slices[0].memory_mib, 1024);
  EXPECT_EQ(w.gpu.count, 1);
  EXPECT_EQ(w.gpu.milli, 250);
  EXPECT_EQ(w.gpu.memory_mib, 1024);
  ASSERT_TRUE(cluster_.Place(w, *back).has_value());
  EXPECT_EQ(cluster_.gpu(1).free_milli, 750);
}

// A pod that asked for one whole GPU and holds all of the A100's 40 GB keeps its own request
// through a rebuild: it asked for no memory, so a policy may still move it to a smaller GPU.
TEST_F(ClusterViewPlacementTest, APodsOwnRequestSurvivesItsRecord) {
  const store::PlacementRecord rec{
      "uid-3", "gpu-0", "web", "inference", {{"GPU-gpu-0-0", 1000, 40960}}};
  model::Workload w;
  w.id = 3;
  w.gpu = {.count = 1, .milli = 1000, .memory_mib = 0};
  auto back = PlacementFromRecord(rec, cluster_, w);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ASSERT_EQ(back->slices.size(), 1u);
  EXPECT_EQ(back->slices[0].memory_mib, 40960);  // what it holds
  EXPECT_EQ(w.gpu.count, 1);
  EXPECT_EQ(w.gpu.milli, 1000);
  EXPECT_EQ(w.gpu.memory_mib, 0);  // what it asked for
  ASSERT_TRUE(cluster_.Place(w, *back).has_value());
  EXPECT_EQ(cluster_.gpu(0).free_milli, 0);
}

// Seed 002's remote slices: CPU and memory on gpu-1, the GPU on gpu-0; the record names the
// GPU's node, and a record whose slice is not where it says is refused.
TEST_F(ClusterViewPlacementTest, ARemoteSliceNamesItsGpusNode) {
  auto spec = store::ToNodeSpec(A100Inventory("gpu-1", 1));
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_TRUE(cluster_.AddNode(*spec).has_value());
  const model::Placement p{
      8, 1, {{model::ClusterState::PartitionOf(1, 0), 1000, 2048, false, /*remote=*/true}}};
  const store::PlacementRecord rec = RecordOf({"batch", "r-0", "uid-8"}, p, cluster_);
  ASSERT_EQ(rec.node, "gpu-1");
  ASSERT_EQ(rec.slices.size(), 1u);
  EXPECT_EQ(rec.slices[0].remote_node, "gpu-0");
  EXPECT_EQ(SlicesText(rec.slices), "GPU-gpu-0-1 (1000 milli, 2048 MiB, remote on gpu-0)");
  model::Workload w;
  w.id = 8;
  auto back = PlacementFromRecord(rec, cluster_, w);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, p);
  ASSERT_TRUE(cluster_.Place(w, *back).has_value());
  // The same slice written as local to gpu-1, or remote on the wrong node: refused.
  store::PlacementRecord local = rec;
  local.slices[0].remote_node.clear();
  EXPECT_FALSE(PlacementFromRecord(local, cluster_, w).has_value());
  store::PlacementRecord elsewhere = rec;
  elsewhere.slices[0].remote_node = "gpu-7";
  auto wrong = PlacementFromRecord(elsewhere, cluster_, w);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().message.find("inventory has it on gpu-0"), std::string::npos)
      << wrong.error().message;
}

TEST_F(ClusterViewPlacementTest, ARecordNamingWhatTheInventoryLacksIsRefused) {
  model::Workload w;
  w.id = 1;
  store::PlacementRecord rec{"uid-1", "gpu-0", "p", "ns", {{"GPU-gone", 100, 0}}};
  auto missing_partition = PlacementFromRecord(rec, cluster_, w);
  ASSERT_FALSE(missing_partition.has_value());
  EXPECT_NE(missing_partition.error().message.find("partition GPU-gone"), std::string::npos)
      << missing_partition.error().message;
  rec.node = "gpu-9";
  auto missing_node = PlacementFromRecord(rec, cluster_, w);
  ASSERT_FALSE(missing_node.has_value());
  EXPECT_NE(missing_node.error().message.find("node gpu-9"), std::string::npos)
      << missing_node.error().message;
  EXPECT_EQ(w.gpu.count, 0);  // untouched on failure
}

}  // namespace
}  // namespace tessera::k8s
