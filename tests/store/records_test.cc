#include "store/records.h"

#include <gtest/gtest.h>

#include "model/cluster.h"
#include "store/store_fixtures.h"

namespace tessera::store {
namespace {

TEST(RecordsTest, JsonRoundTripsAndMalformedInputNamesTheSource) {
  const NodeInventory inv = contract::TwoGpuNode("n1");
  auto back = InventoryFromJson(ToJson(inv), "k");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, inv);
  NodeInventory stuck = inv;  // an agent's verdict on a GPU's MPS server travels with it
  stuck.gpus[1].mps_stuck = true;
  EXPECT_EQ(*InventoryFromJson(ToJson(stuck), "k"), stuck);
  EXPECT_NE(*InventoryFromJson(ToJson(stuck), "k"), inv);
  // An older agent's inventory, without the key, reads as not stuck.
  auto old = InventoryFromJson(
      R"({"node": "n1", "gpus": [{"index": 0, "uuid": "GPU-o", "partitions": []}]})", "k");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_FALSE(old->gpus[0].mps_stuck);
  const PlacementRecord p = contract::Place("w", "n1", {{"MIG-n1-0a", 250, 1024}});
  EXPECT_EQ(*PlacementFromJson(ToJson(p), "k"), p);
  // A best-effort slice (muxflow's offline job) says so; a guaranteed one writes no flag, so
  // records written before the flag existed read back as guaranteed.
  const PlacementRecord be = contract::Place("w", "n1", {{"GPU-n1-1", 600, 6144, true}});
  EXPECT_NE(ToJson(be).find(R"("best_effort":true)"), std::string::npos);
  EXPECT_EQ(ToJson(p).find("best_effort"), std::string::npos);
  EXPECT_EQ(*PlacementFromJson(ToJson(be), "k"), be);
  EXPECT_FALSE(PlacementFromJson(
      R"({"workload":"w","slices":[{"partition_uuid":"g","milli":1,"memory_mib":0,"best_effort":"yes"}]})",
      "k"));
  // A remote slice (seed 002) names the node whose GPU it is; a local one writes nothing, so
  // older records read back as local. Remote on the placement's own node is refused.
  PlacementRecord remote = contract::Place("w", "n1", {{"GPU-n2-0", 1000, 0}});
  remote.slices[0].remote_node = "n2";
  EXPECT_NE(ToJson(remote).find(R"("remote_node":"n2")"), std::string::npos);
  EXPECT_EQ(ToJson(p).find("remote_node"), std::string::npos);
  EXPECT_EQ(*PlacementFromJson(ToJson(remote), "k"), remote);
  EXPECT_TRUE(Validate(remote));
  remote.slices[0].remote_node = "n1";
  ASSERT_FALSE(Validate(remote));
  EXPECT_NE(Validate(remote).error().message.find("remote on its own node n1"), std::string::npos);
  auto bad = InventoryFromJson(R"({"node": 3})", "tessera:node:x:inventory");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("tessera:node:x:inventory"), std::string::npos);
}

TEST(RecordsTest, InventoryBecomesANodeSpecTheClusterAccepts) {
  NodeInventory inv = contract::TwoGpuNode("n1");
  // Discovery order need not be start order: the spec sorts instances by start.
  std::swap(inv.gpus[0].partitions[0], inv.gpus[0].partitions[1]);
  auto spec = ToNodeSpec(inv);
  ASSERT_TRUE(spec) << spec.error().message;
  model::ClusterState cluster;
  ASSERT_TRUE(cluster.AddNode(*spec));
  auto p = cluster.FindPartition("MIG-n1-0b");
  ASSERT_TRUE(p);
  EXPECT_EQ(cluster.partition(*p).memory_mib, 10240);  // 2g.10gb
  EXPECT_EQ(cluster.partition(*p).start, 4);
  EXPECT_TRUE(cluster.FindPartition("GPU-n1-1"));
  inv.gpus[0].partitions[0].profile = "9g.99gb";
  EXPECT_FALSE(ToNodeSpec(inv));
}

}  // namespace
}  // namespace tessera::store
