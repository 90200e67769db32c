#include "model/cluster.h"

#include <gtest/gtest.h>

namespace tessera::model {
namespace {

GpuModelId Id(const char* name) { return *FindGpuModel(name); }

Workload Sharing(WorkloadId id, int milli, int64_t gpu_mem, int64_t cpu = 1000) {
  Workload w;
  w.id = id;
  w.cpu_milli = cpu;
  w.memory_mib = 1024;
  w.gpu.count = 1;
  w.gpu.milli = milli;
  w.gpu.memory_mib = gpu_mem;
  return w;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.AddNode(UniformNode("v100", Id("V100-32GB"), 2, 8000, 65536)));
    ASSERT_TRUE(c_.AddNode(
        UniformNode("a100", Id("A100-40GB"), 1, 8000, 65536,
                    *ParseLayout(GetGpuModel(Id("A100-40GB")), "3g.20gb@0,2g.10gb@4,1g.5gb@6"))));
  }
  void ExpectUnchanged() {
    EXPECT_TRUE(c_.CheckInvariants()) << c_.CheckInvariants().error().message;
  }
  ClusterState c_;
};

TEST_F(ClusterTest, BuildsPartitionsFromTheLayout) {
  EXPECT_EQ(c_.gpu_count(), 3);
  EXPECT_EQ(c_.node(0).idle_gpus, 2);
  const Gpu& a100 = c_.gpu(2);
  ASSERT_EQ(a100.partition_count, 3);
  const auto parts = c_.partitions_of(2);
  EXPECT_EQ(parts[0].memory_mib, 20 * 1024);
  EXPECT_NEAR(parts[0].compute_share, 3.0 / 7, 1e-12);
  EXPECT_EQ(parts[2].uuid.rfind("MIG-", 0), 0u);
  EXPECT_EQ(c_.gpu(0).uuid.rfind("GPU-", 0), 0u);
  // All three instances free: (3+2+1)/7 of the GPU = 857 milli; memory 20+10+5 GiB.
  EXPECT_EQ(a100.free_milli, 857);
  EXPECT_EQ(a100.free_memory_mib, 35 * 1024);
  ExpectUnchanged();
}

TEST_F(ClusterTest, PlaceAndRemoveKeepIndicesExact) {
  const Workload w = Sharing(1, 300, 4096);
  ASSERT_TRUE(c_.Place(w, {1, 0, {{ClusterState::PartitionOf(0, 0), 300, 4096}}}));
  EXPECT_EQ(c_.gpu(0).free_milli, 700);
  EXPECT_EQ(c_.gpu(0).free_memory_mib, 32 * 1024 - 4096);
  EXPECT_EQ(c_.node(0).idle_gpus, 1);
  EXPECT_EQ(c_.node(0).used_cpu_milli, 1000);
  EXPECT_DOUBLE_EQ(c_.allocated_gpu_milli(), 300);
  ExpectUnchanged();
  // A 1g.5gb instance is 1/7 of the GPU: a whole-instance client allocates 1000/7 GPU-milli.
  ASSERT_TRUE(
      c_.Place(Sharing(2, 1000, 5120), {2, 1, {{ClusterState::PartitionOf(2, 2), 1000, 5120}}}));
  EXPECT_NEAR(c_.allocated_gpu_milli(), 300 + 1000.0 / 7, 1e-9);
  EXPECT_EQ(c_.gpu(2).free_milli, 714);  // (3+2)/7
  ASSERT_TRUE(c_.Remove(1));
  EXPECT_EQ(c_.gpu(0).free_milli, 1000);
  EXPECT_EQ(c_.node(0).idle_gpus, 2);
  EXPECT_FALSE(c_.Remove(1));
  ExpectUnchanged();
}

TEST_F(ClusterTest, RefusesWhatBreaksAnInvariantAndChangesNothing) {
  ASSERT_TRUE(c_.Place(Sharing(1, 600, 20000), {1, 0, {{0, 600, 20000}}}));
  struct Case {
    const char* what;
    Workload w;
    Placement p;
  };
  Workload multi = Sharing(9, 1000, 0);
  multi.gpu.count = 2;
  Workload t4_only = Sharing(8, 100, 0);
  t4_only.gpu.models = {Id("T4")};
  Workload mig_req = Sharing(10, 1000, 0);
  mig_req.gpu.mig_profile = "3g.20gb";
  const std::vector<Case> cases = {
      {"over 1000 milli", Sharing(2, 500, 100), {2, 0, {{0, 500, 100}}}},
      {"over partition memory", Sharing(3, 100, 20000), {3, 0, {{0, 100, 20000}}}},
      {"already placed", Sharing(1, 100, 0), {1, 0, {{7, 100, 0}}}},
      {"node CPU", Sharing(4, 100, 0, 7001), {4, 0, {{7, 100, 0}}}},
      {"GPU of another node",
       Sharing(5, 100, 0),
       {5, 0, {{ClusterState::PartitionOf(2, 0), 100, 0}}}},
      {"unused partition slot",
       Sharing(6, 100, 0),
       {6, 0, {{ClusterState::PartitionOf(1, 3), 100, 0}}}},
      {"two slices one GPU", multi, {9, 0, {{7, 1000, 0}, {7, 1000, 0}}}},
      {"slice count", multi, {9, 0, {{7, 1000, 0}}}},
      {"disallowed model", t4_only, {8, 0, {{7, 100, 0}}}},
      {"wrong MIG profile", mig_req, {10, 1, {{ClusterState::PartitionOf(2, 1), 1000, 0}}}},
      {"milli zero", Sharing(11, 100, 0), {11, 0, {{7, 0, 0}}}},
      {"workload mismatch", Sharing(12, 100, 0), {13, 0, {{7, 100, 0}}}},
  };
  for (const Case& k : cases) {
    const double before = c_.allocated_gpu_milli();
    const size_t placed = c_.placed_count();
    auto r = c_.Place(k.w, k.p);
    EXPECT_FALSE(r.has_value()) << k.what;
    if (!r) {
      EXPECT_FALSE(r.error().message.empty());
    }
    EXPECT_EQ(c_.allocated_gpu_milli(), before) << k.what;
    EXPECT_EQ(c_.placed_count(), placed) << k.what;
    ExpectUnchanged();
  }
  // The right MIG instance is accepted.
  EXPECT_TRUE(c_.Place(mig_req, {10, 1, {{ClusterState::PartitionOf(2, 0), 1000, 0}}}));
  // An unavailable GPU accepts nothing.
  c_.SetGpuAvailable(1, false);
  EXPECT_EQ(c_.node(0).idle_gpus, 0);
  EXPECT_FALSE(c_.Place(Sharing(20, 100, 0), {20, 0, {{7, 100, 0}}}));
  ExpectUnchanged();
}

TEST_F(ClusterTest, ReshapeOnlyAnIdleGpu) {
  const GpuModel& a100 = GetGpuModel(Id("A100-40GB"));
  ASSERT_TRUE(c_.Place(Sharing(1, 1000, 0), {1, 1, {{ClusterState::PartitionOf(2, 1), 1000, 0}}}));
  auto busy = c_.Reshape(2, *ParseLayout(a100, "7g.40gb"));
  ASSERT_FALSE(busy.has_value());
  EXPECT_NE(busy.error().message.find("idle"), std::string::npos);
  EXPECT_EQ(c_.gpu(2).partition_count, 3);
  ASSERT_TRUE(c_.Remove(1));
  ASSERT_TRUE(c_.Reshape(2, *ParseLayout(a100, "3g.20gb,3g.20gb")));
  EXPECT_EQ(c_.gpu(2).partition_count, 2);
  EXPECT_EQ(c_.gpu(2).free_milli, 857);                        // 6 of 7 slices
  EXPECT_FALSE(c_.Reshape(0, *ParseLayout(a100, "7g.40gb")));  // V100 has no MIG
  ASSERT_TRUE(c_.Reshape(2, std::nullopt));                    // MIG off: one whole GPU
  EXPECT_EQ(c_.partition(ClusterState::PartitionOf(2, 0)).uuid, c_.gpu(2).uuid);
  EXPECT_EQ(c_.gpu(2).free_milli, 1000);
  ExpectUnchanged();
}

TEST_F(ClusterTest, EnvironmentNamesThePartitionAndTheMpsLimits) {
  ASSERT_TRUE(
      c_.Place(Sharing(1, 250, 4096), {1, 1, {{ClusterState::PartitionOf(2, 0), 250, 4096}}}));
  const Environment env = c_.EnvironmentOf(c_.Find(1)->placement);
  EXPECT_EQ(env.cuda_visible_devices, c_.partition(ClusterState::PartitionOf(2, 0)).uuid);
  EXPECT_EQ(env.mps_active_thread_percentage, 25);
  EXPECT_EQ(env.mps_pinned_mem_limit, "0=4096M");
  // A whole GPU, exclusively: no MPS variables.
  Workload whole = Sharing(2, 1000, 0);
  ASSERT_TRUE(c_.Place(whole, {2, 0, {{7, 1000, 0}}}));
  const Environment e2 = c_.EnvironmentOf(c_.Find(2)->placement);
  EXPECT_EQ(e2.cuda_visible_devices, c_.gpu(1).uuid);
  EXPECT_FALSE(e2.mps_active_thread_percentage.has_value());
  EXPECT_EQ(e2.Variables().size(), 1u);
}

TEST_F(ClusterTest, ResizeRewritesMpsLimitsInPlaceOrRefuses) {
  ASSERT_TRUE(c_.Place(Sharing(1, 1000, 16384), {1, 0, {{0, 1000, 16384}}}));
  // A second client needs room: shrink the first to half, then place beside it.
  EXPECT_FALSE(c_.Place(Sharing(2, 500, 8192), {2, 0, {{0, 500, 8192}}}));
  ASSERT_TRUE(c_.Resize(1, {{0, 500, 8192}}));
  EXPECT_EQ(c_.gpu(0).free_milli, 500);
  EXPECT_DOUBLE_EQ(c_.allocated_gpu_milli(), 500);
  ASSERT_TRUE(c_.Place(Sharing(2, 500, 8192), {2, 0, {{0, 500, 8192}}}));
  // Growing back would exceed 1000 milli; moving to another partition is not a resize.
  EXPECT_FALSE(c_.Resize(1, {{0, 600, 8192}}));
  EXPECT_FALSE(c_.Resize(1, {{7, 500, 8192}}));
  EXPECT_FALSE(c_.Resize(1, {{0, 500, 8192}, {7, 1, 0}}));
  EXPECT_FALSE(c_.Resize(3, {{0, 1, 0}}));
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 500);
  ExpectUnchanged();
}

TEST_F(ClusterTest, BestEffortSharesCapButReserveOnlyMemory) {
  // An online service holds all of GPU 0's compute and 20 GiB of its 32 GiB.
  ASSERT_TRUE(c_.Place(Sharing(1, 1000, 20480), {1, 0, {{0, 1000, 20480}}}));
  // A guaranteed offline client finds no compute; a best-effort one at 60 % (its cap) does.
  EXPECT_FALSE(c_.Place(Sharing(2, 600, 8192), {2, 0, {{0, 600, 8192}}}));
  ASSERT_TRUE(c_.Place(Sharing(2, 600, 8192), {2, 0, {{0, 600, 8192, true}}}));
  EXPECT_EQ(c_.partition(0).used_milli, 1000);
  EXPECT_EQ(c_.partition(0).used_memory_mib, 20480 + 8192);
  EXPECT_DOUBLE_EQ(c_.allocated_gpu_milli(), 1000);  // oversold compute is not allocated
  // Its memory is reserved all the same: 32768 - 28672 = 4096 MiB left.
  EXPECT_FALSE(c_.Place(Sharing(3, 100, 8192), {3, 0, {{0, 100, 8192, true}}}));
  // Dynamic SM: its cap follows the service (here 100 % - 35 % = 65 %), beyond what is free.
  const uint64_t version = c_.node(0).version;
  ASSERT_TRUE(c_.Resize(2, {{0, 650, 8192, true}}));
  EXPECT_NE(c_.node(0).version, version);  // a resize changes the node: caches keyed on it
  EXPECT_EQ(c_.partition(0).used_milli, 1000);
  // Neither kind may be turned into the other by a resize.
  EXPECT_FALSE(c_.Resize(2, {{0, 650, 8192, false}}));
  EXPECT_FALSE(c_.Resize(1, {{0, 1000, 20480, true}}));
  const Environment e = c_.EnvironmentOf(c_.Find(2)->placement);
  EXPECT_EQ(e.mps_active_thread_percentage, 65);
  ASSERT_TRUE(c_.Remove(2));
  EXPECT_EQ(c_.partition(0).used_memory_mib, 20480);
  EXPECT_DOUBLE_EQ(c_.allocated_gpu_milli(), 1000);
  ExpectUnchanged();
}

// Seed 002's disaggregated GPUs: a workload's CPU and memory on node v100, one GPU local and
// one remote on node a100's 3g.20gb instance. The CPU node counts the CPU, each GPU's node counts
// its GPU busy; a remote slice must be on another node, a local one on the placement's.
TEST_F(ClusterTest, RemoteSlicesLeaveCpuOnThePlacementsNodeAndGpusOnTheirs) {
  Workload w = Sharing(1, 1000, 8192, 2000);
  w.gpu.count = 2;
  const PartitionIndex local = ClusterState::PartitionOf(0, 0);
  const PartitionIndex remote = ClusterState::PartitionOf(2, 0);
  ASSERT_FALSE(c_.Place(w, {1, 0, {{local, 1000, 8192}, {remote, 1000, 8192}}}))
      << "a slice on another node must say it is remote";
  ASSERT_FALSE(c_.Place(w, {1, 0, {{local, 1000, 8192, false, true}, {remote, 1000, 8192}}}))
      << "a remote slice on its own node";
  ExpectUnchanged();
  const Placement p{1, 0, {{local, 1000, 8192}, {remote, 1000, 8192, false, true}}};
  EXPECT_TRUE(p.has_remote());
  // One network stream: node v100 (0, the CPU) to node a100 (1, the remote GPU).
  EXPECT_EQ(c_.RemoteStreams(p), (std::vector<std::pair<NodeIndex, NodeIndex>>{{0, 1}}));
  ASSERT_TRUE(c_.Place(w, p));
  EXPECT_EQ(c_.node(0).used_cpu_milli, 2000);
  EXPECT_EQ(c_.node(1).used_cpu_milli, 0);
  EXPECT_EQ(c_.node(0).idle_gpus, 1);  // GPU 0 busy, GPU 1 idle
  EXPECT_EQ(c_.node(1).idle_gpus, 0);  // the A100 holds the remote slice
  EXPECT_EQ(c_.partition(remote).clients.size(), 1u);
  ExpectUnchanged();
  // The container sees its local GPU as device 0 and reaches the remote one through the
  // middleware: it is named, with its node and index there, but not made visible.
  const Environment env = c_.EnvironmentOf(p);
  EXPECT_EQ(env.cuda_visible_devices, c_.partition(local).uuid);
  ASSERT_EQ(env.remote_gpus.size(), 1u);
  EXPECT_EQ(env.remote_gpus[0],
            (RemoteGpu{c_.node(1).name, c_.gpu(2).index, c_.partition(remote).uuid}));
  EXPECT_EQ(env.mps_pinned_mem_limit, "0=8192M");  // the local slice is shared: its ordinal 0
  const auto vars = env.Variables();
  const auto var = [&](const std::string& name) {
    for (const auto& [k, v] : vars) {
      if (k == name) return v;
    }
    return std::string("(unset)");
  };
  EXPECT_EQ(var("TESSERA_REMOTE_GPUS"), c_.partition(remote).uuid + "@" + c_.node(1).name);
  EXPECT_EQ(var("RCUDA_DEVICE_COUNT"), "1");
  EXPECT_EQ(var("RCUDA_DEVICE_0"), c_.node(1).name + ":" + std::to_string(c_.gpu(2).index));
  // A resize keeps a slice remote; it cannot turn it local.
  EXPECT_TRUE(c_.Resize(1, {{local, 500, 8192}, {remote, 500, 4096, false, true}}));
  EXPECT_FALSE(c_.Resize(1, {{local, 500, 8192}, {remote, 500, 4096}}));
  ExpectUnchanged();
  // A node whose GPU is lent out cannot go down quietly for new remote placements.
  c_.SetNodeReady(1, false);
  Workload v = Sharing(2, 300, 1024);
  EXPECT_FALSE(c_.Place(v, {2, 0, {{ClusterState::PartitionOf(2, 1), 300, 1024, false, true}}}));
  c_.SetNodeReady(1, true);
  ASSERT_TRUE(c_.Remove(1));
  EXPECT_EQ(c_.node(0).idle_gpus, 2);
  EXPECT_EQ(c_.node(1).idle_gpus, 1);
  EXPECT_EQ(c_.node(0).used_cpu_milli, 0);
  ExpectUnchanged();
}

TEST_F(ClusterTest, AddNodeRefusesBadSpecs) {
  EXPECT_FALSE(c_.AddNode(UniformNode("v100", Id("T4"), 1, 1, 1)));  // duplicate name
  NodeSpec bad = UniformNode("x", Id("A30-24GB"), 1, 1, 1);
  bad.gpus[0].mig = MigLayout{{{*GetGpuModel(Id("A30-24GB")).FindProfile("4g.24gb"), 0},
                               {*GetGpuModel(Id("A30-24GB")).FindProfile("1g.6gb"), 3}}};
  EXPECT_FALSE(c_.AddNode(bad));
  EXPECT_EQ(c_.node_count(), 2);
  EXPECT_EQ(c_.FindNode("a100"), 1);
  EXPECT_FALSE(c_.FindNode("x").has_value());
}

TEST(UuidTest, DeterministicAndWellFormed) {
  const std::string u = MakeUuid("GPU", "node-1/0");
  EXPECT_EQ(u, MakeUuid("GPU", "node-1/0"));
  EXPECT_NE(u, MakeUuid("GPU", "node-1/1"));
  EXPECT_EQ(u.size(), 4u + 36u);
  EXPECT_EQ(u[12], '-');
}

}  // namespace
}  // namespace tessera::model

namespace tessera::model {
namespace {

TEST(NodeVersionTest, ChangesWithEveryChangeAndNeverRepeatsAcrossCopies) {
  ClusterState c;
  ASSERT_TRUE(c.AddNode(UniformNode("a", *FindGpuModel("T4"), 2, 8000, 65536)));
  ASSERT_TRUE(c.AddNode(UniformNode("b", *FindGpuModel("T4"), 2, 8000, 65536)));
  const uint64_t a0 = c.node(0).version, b0 = c.node(1).version;
  EXPECT_NE(a0, 0u);
  EXPECT_NE(a0, b0);
  Workload w;
  w.id = 1;
  w.gpu.count = 1;
  w.gpu.milli = 500;
  ASSERT_TRUE(c.Place(w, {1, 0, {{ClusterState::PartitionOf(0, 0), 500, 0}}}));
  const uint64_t a1 = c.node(0).version;
  EXPECT_NE(a1, a0);
  EXPECT_EQ(c.node(1).version, b0);  // untouched node keeps its version
  ClusterState copy = c;
  EXPECT_EQ(copy.node(0).version, a1);  // same state, same version
  ASSERT_TRUE(copy.Remove(1));
  ASSERT_TRUE(c.Remove(1));
  EXPECT_NE(copy.node(0).version, c.node(0).version);  // diverged states never share one
  c.SetNodeReady(1, false);
  EXPECT_NE(c.node(1).version, b0);
}

TEST(NodeVersionTest, ASuccessorContinuesItsPredecessorsVersions) {
  const NodeSpec spec = UniformNode("a", *FindGpuModel("T4"), 1, 8000, 65536);
  ClusterState old_state, rebuilt;
  ASSERT_TRUE(old_state.AddNode(spec));
  ASSERT_TRUE(rebuilt.AddNode(spec));
  // Built apart, both count from the start: a cache keyed on node 0's version could not tell
  // them apart.
  EXPECT_EQ(rebuilt.node(0).version, old_state.node(0).version);
  old_state.SetNodeReady(0, false);  // the predecessor's last version: 2
  rebuilt.ContinueVersionsOf(old_state);
  EXPECT_GT(rebuilt.node(0).version, old_state.node(0).version);
  EXPECT_EQ(rebuilt.version(), rebuilt.node(0).version);
  // From now on the two draw from one counter: they never hand out the same version.
  old_state.SetNodeReady(0, true);
  rebuilt.SetNodeReady(0, false);
  EXPECT_NE(rebuilt.node(0).version, old_state.node(0).version);
}

TEST_F(ClusterTest, FindPartitionFollowsReshapes) {
  const GpuModel& a100 = GetGpuModel(Id("A100-40GB"));
  const std::string v100_uuid = c_.gpu(1).uuid, a100_uuid = c_.gpu(2).uuid;
  EXPECT_EQ(c_.FindPartition(v100_uuid), ClusterState::PartitionOf(1, 0));
  std::vector<std::string> mig_uuids;
  for (const Partition& p : c_.partitions_of(2)) mig_uuids.push_back(p.uuid);
  ASSERT_EQ(mig_uuids.size(), 3u);
  EXPECT_EQ(c_.FindPartition(mig_uuids[2]), ClusterState::PartitionOf(2, 2));
  EXPECT_EQ(c_.FindPartition(a100_uuid), std::nullopt);  // MIG on: no whole-GPU partition
  EXPECT_EQ(c_.FindPartition("GPU-nonexistent"), std::nullopt);

  ClusterState before = c_;
  // MIG off: the instances' uuids go, the GPU's own uuid names slot 0.
  ASSERT_TRUE(c_.Reshape(2, std::nullopt));
  for (const std::string& u : mig_uuids) EXPECT_EQ(c_.FindPartition(u), std::nullopt) << u;
  EXPECT_EQ(c_.FindPartition(a100_uuid), ClusterState::PartitionOf(2, 0));
  // Seven instances with discovered uuids, then three again with the old ones, reversed.
  std::vector<std::string> seven;
  for (int i = 0; i < 7; ++i) seven.push_back("MIG-seven-" + std::to_string(i));
  ASSERT_TRUE(
      c_.Reshape(2, *ParseLayout(a100, "1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb"), seven));
  EXPECT_EQ(c_.FindPartition(a100_uuid), std::nullopt);
  EXPECT_EQ(c_.FindPartition("MIG-seven-6"), ClusterState::PartitionOf(2, 6));
  const std::vector<std::string> reversed{mig_uuids[2], mig_uuids[1], mig_uuids[0]};
  ASSERT_TRUE(c_.Reshape(2, *ParseLayout(a100, "3g.20gb@0,2g.10gb@4,1g.5gb@6"), reversed));
  EXPECT_EQ(c_.FindPartition("MIG-seven-0"), std::nullopt);
  EXPECT_EQ(c_.FindPartition(mig_uuids[2]), ClusterState::PartitionOf(2, 0));
  EXPECT_EQ(c_.FindPartition(mig_uuids[0]), ClusterState::PartitionOf(2, 2));
  EXPECT_TRUE(c_.CheckInvariants()) << c_.CheckInvariants().error().message;
  // The copy taken before kept its own index.
  EXPECT_EQ(before.FindPartition(mig_uuids[0]), ClusterState::PartitionOf(2, 0));
  EXPECT_EQ(before.FindPartition("MIG-seven-6"), std::nullopt);
}

TEST(FindPartitionTest, ARepeatedUuidNamesTheLowestIndexUntilItGoes) {
  // Two nodes that report the same GPU uuid (a misconfigured inventory): the first one wins,
  // as a scan in index order would have it.
  ClusterState c;
  NodeSpec a = UniformNode("a", *FindGpuModel("A100-40GB"), 1, 8000, 65536);
  NodeSpec b = UniformNode("b", *FindGpuModel("A100-40GB"), 1, 8000, 65536);
  a.gpus[0].uuid = b.gpus[0].uuid = "GPU-same";
  ASSERT_TRUE(c.AddNode(a));
  ASSERT_TRUE(c.AddNode(b));
  EXPECT_EQ(c.FindPartition("GPU-same"), ClusterState::PartitionOf(0, 0));
  ASSERT_TRUE(c.Reshape(0, *ParseLayout(GetGpuModel(*FindGpuModel("A100-40GB")), "7g.40gb")));
  EXPECT_EQ(c.FindPartition("GPU-same"), ClusterState::PartitionOf(1, 0));
  EXPECT_TRUE(c.CheckInvariants()) << c.CheckInvariants().error().message;
}

}  // namespace
}  // namespace tessera::model
