#include "policy/fit.h"

#include <gtest/gtest.h>

#include "policy/first_fit.h"
#include "policy/registry.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::FindGpuModel;
using model::GetGpuModel;
using model::ParseLayout;
using model::UniformNode;

Workload Request(model::WorkloadId id, int count, int milli, int64_t gpu_mem = 0) {
  Workload w;
  w.id = id;
  w.cpu_milli = 1000;
  w.memory_mib = 1024;
  w.gpu.count = count;
  w.gpu.milli = milli;
  w.gpu.memory_mib = gpu_mem;
  return w;
}

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto a100 = *FindGpuModel("A100-40GB");
    ASSERT_TRUE(c_.AddNode(UniformNode("t4", *FindGpuModel("T4"), 2, 4000, 16384)));
    ASSERT_TRUE(c_.AddNode(UniformNode("a100", a100, 1, 32000, 65536,
                                       *ParseLayout(GetGpuModel(a100), "3g.20gb,2g.10gb,1g.5gb"))));
  }
  ClusterState c_;
};

TEST_F(FitTest, ShareOfAGpuOnAMigInstanceScalesByItsComputeShare) {
  const auto parts = c_.partitions_of(2);
  // 300 milli of a GPU on a 3g instance (3/7 of the SMs) = ceil(300 * 7 / 3) = 700 milli of it.
  EXPECT_EQ(PartitionMilliFor(300, parts[0]), 700);
  // 200 milli on 1g (1/7) = 1400 > 1000: does not fit there.
  EXPECT_EQ(PartitionMilliFor(200, parts[2]), 1400);
  EXPECT_EQ(PartitionMilliFor(300, c_.partition(0)), 300);
}

TEST_F(FitTest, FirstFitSlicesPerRequestKind) {
  // Whole GPUs: two idle, MIG-off GPUs exist only on node t4.
  auto two = FirstFitPlacement(Request(1, 2, 1000), 0, c_);
  ASSERT_TRUE(two);
  ASSERT_EQ(two->slices.size(), 2u);
  EXPECT_EQ(two->slices[1].partition, ClusterState::PartitionOf(1, 0));
  EXPECT_EQ(two->slices[0].memory_mib, 16 * 1024);              // exclusive: all the memory
  EXPECT_FALSE(FirstFitPlacement(Request(1, 1, 1000), 1, c_));  // only MIG instances there
  // A MIG instance by profile.
  Workload mig = Request(2, 1, 1000);
  mig.gpu.mig_profile = "2g.10gb";
  auto inst = FirstFitPlacement(mig, 1, c_);
  ASSERT_TRUE(inst);
  EXPECT_EQ(inst->slices[0].partition, ClusterState::PartitionOf(2, 1));
  // A share with memory: 400 milli, 12 GiB -> on 3g.20gb ceil(400*7/3) = 934 milli of the
  // instance; on 2g.10gb it would need 1400 milli (and 12 GiB > 10 GiB): only 3g fits.
  auto share = FirstFitPlacement(Request(3, 1, 400, 12 * 1024), 1, c_);
  ASSERT_TRUE(share);
  EXPECT_EQ(share->slices[0].partition, ClusterState::PartitionOf(2, 0));
  EXPECT_EQ(share->slices[0].milli, 934);
  EXPECT_EQ(share->slices[0].memory_mib, 12 * 1024);
  // 600 milli of a GPU is 1400 milli of 3g: more than any instance here has.
  EXPECT_FALSE(FirstFitPlacement(Request(4, 1, 600), 1, c_));
}

TEST_F(FitTest, NodeFitsNamesTheReason) {
  EXPECT_EQ(NodeFits(Request(1, 3, 1000), 0, c_).reason, "too few GPUs");
  Workload cpu = Request(1, 0, 1000);
  cpu.cpu_milli = 5000;
  EXPECT_EQ(NodeFits(cpu, 0, c_).reason, "not enough CPU");
  Workload v100 = Request(1, 1, 500);
  v100.gpu.models = {*FindGpuModel("V100-32GB")};
  EXPECT_EQ(NodeFits(v100, 0, c_).reason, "GPU model not allowed");
  EXPECT_EQ(NodeFits(Request(1, 1, 500, 17 * 1024), 0, c_).reason, "no GPU with enough free share");
  EXPECT_TRUE(NodeFits(Request(1, 1, 500), 0, c_).ok());
}

TEST_F(FitTest, RegistryMakesPoliciesByNameAndRejectsUnknowns) {
  Rng rng(1);
  PolicyContext ctx{&rng, nullptr};
  auto ff = MakePolicy("first-fit", ctx);
  ASSERT_TRUE(ff);
  EXPECT_EQ((*ff)->name(), "first-fit");
  auto unknown = MakePolicy("no-such-policy", ctx);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("first-fit"), std::string::npos);
  EXPECT_FALSE(MakePolicy("first-fit", ctx, {{"bogus", 1}}));
  EXPECT_FALSE(Policies().empty());
}

TEST_F(FitTest, FirstFitExplainListsEveryNode) {
  FirstFit ff;
  const std::string text = ff.Explain(Request(7, 1, 1000), c_);
  EXPECT_NE(text.find("t4"), std::string::npos);
  EXPECT_NE(text.find("a100"), std::string::npos);
  EXPECT_NE(text.find("filtered"), std::string::npos);
}

}  // namespace
}  // namespace tessera::policy
