// The FGD paper's baseline policies (ATC'23 §6.1) on hand-built nodes; every expected score is
// computed by hand from the formula in the policy's header.
#include <gtest/gtest.h>

#include "base/rng.h"
#include "policy/best_fit.h"
#include "policy/dot_product.h"
#include "policy/gpu_clustering.h"
#include "policy/gpu_packing.h"
#include "policy/random.h"
#include "policy/registry.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::FindGpuModel;
using model::UniformNode;

Workload Pod(model::WorkloadId id, int64_t cpu, int count, int milli) {
  Workload w;
  w.id = id;
  w.cpu_milli = cpu;
  w.memory_mib = 1024;
  w.gpu.count = count;
  w.gpu.milli = count == 0 ? 0 : milli;
  return w;
}

class BaselinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto t4 = *FindGpuModel("T4");
    ASSERT_TRUE(c_.AddNode(UniformNode("a", t4, 2, 64000, 262144)));  // node 0: GPUs 0, 1
    ASSERT_TRUE(c_.AddNode(UniformNode("b", t4, 4, 32000, 262144)));  // node 1: GPUs 2..5
    // Node 0: GPU 0 holds 600 milli (400 free), 16 cores used.
    ASSERT_TRUE(
        c_.Place(Pod(100, 16000, 1, 600), {100, 0, {{ClusterState::PartitionOf(0, 0), 600, 0}}}));
  }
  ClusterState c_;
};

TEST_F(BaselinesTest, BestFitScoresLeftoverCpuAndGpu) {
  // Node 0 after a 300-milli, 8-core pod: CPU 64000-16000-8000 = 40000, GPU 1400-300 = 1100.
  // 1 - (0.5 * 40000/128000 + 0.5 * 1100/8000) = 1 - 0.15625 - 0.06875 = 0.775 -> 77.
  EXPECT_EQ(BestFit::ScoreOf(48000, 1400, 8000, 300), 77);
  BestFit p;
  auto cand = p.Score(Pod(1, 8000, 1, 300), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->score, 77);
  // The share goes to the tighter GPU 0 (400 free), not the idle GPU 1.
  EXPECT_EQ(cand->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
  // Node 1: 32000-8000 = 24000, 4000-300 = 3700: 1 - 0.09375 - 0.23125 = 0.675 -> 67.
  EXPECT_EQ(p.Score(Pod(1, 8000, 1, 300), 1, c_)->score, 67);
}

TEST_F(BaselinesTest, DotProductPrefersLeastAlignedLeftovers) {
  // f = (48000/128000, 1400/8000) = (0.375, 0.175); r = (8000/128000, 300/8000) = (0.0625,
  // 0.0375); f.r = 0.0234375 + 0.0065625 = 0.03; 100 * (1 - 0.015) = 98.5 -> 98.
  EXPECT_EQ(DotProduct::ScoreOf(48000, 1400, 8000, 300), 98);
  // Node 1: f = (0.25, 0.5): f.r = 0.015625 + 0.01875 = 0.034375; 100 * (1 - 0.0171875) -> 98.
  EXPECT_EQ(DotProduct::ScoreOf(32000, 4000, 8000, 300), 98);
  // A whole GPU: node 1 (0.25, 0.5).(0.0625, 0.125) = 0.078125 -> 100 * 0.9609375 -> 96.
  DotProduct p;
  EXPECT_EQ(p.Score(Pod(1, 8000, 1, 1000), 1, c_)->score, 96);
}

TEST_F(BaselinesTest, GpuPackingTiers) {
  GpuPacking p;
  // Share on node 0: fits on the used GPU 0 (400 free): 100 - (400*100/1000)/10 = 96.
  EXPECT_EQ(p.Score(Pod(1, 1000, 1, 300), 0, c_)->score, 96);
  // A whole GPU on node 0 opens one idle GPU of a used node: 50 - 1 = 49.
  EXPECT_EQ(p.Score(Pod(1, 1000, 1, 1000), 0, c_)->score, 49);
  // Node 1 is idle with 4 GPUs: max(33 - 4, 4) = 29.
  EXPECT_EQ(p.Score(Pod(1, 1000, 1, 300), 1, c_)->score, 29);
  // CPU-only: 0.
  EXPECT_EQ(p.Score(Pod(1, 1000, 0, 0), 1, c_)->score, 0);
}

TEST_F(BaselinesTest, GpuClusteringAffinityTiers) {
  GpuClustering p;
  EXPECT_EQ(GpuClustering::NodeTags(c_, 0), 1u);  // a share
  EXPECT_EQ(GpuClustering::NodeTags(c_, 1), 0u);
  // Node 0 holds only shares: 25 * (8000 - 1400) / 8000 = 20 (integer) + 75 = 95.
  EXPECT_EQ(p.Score(Pod(1, 1000, 1, 300), 0, c_)->score, 95);
  // A whole GPU there: other tag only: 20 + 0.
  EXPECT_EQ(p.Score(Pod(1, 1000, 1, 1000), 0, c_)->score, 20);
  // Idle node 1: 25 * 4000 / 8000 = 12 + 25 = 37.
  EXPECT_EQ(p.Score(Pod(1, 1000, 1, 1000), 1, c_)->score, 37);
  // Two whole GPUs on node 1 make it a "2-gpu" node.
  ASSERT_TRUE(c_.Place(Pod(101, 1000, 2, 1000), {101,
                                                 1,
                                                 {{ClusterState::PartitionOf(2, 0), 1000, 0},
                                                  {ClusterState::PartitionOf(3, 0), 1000, 0}}}));
  EXPECT_EQ(GpuClustering::NodeTags(c_, 1), uint64_t{1} << 2);
}

TEST_F(BaselinesTest, RandomPicksOnlyFittingGpusAndIsSeeded) {
  Rng a(7), b(7);
  RandomFit pa(a), pb(b);
  int on_gpu0 = 0;
  for (int i = 0; i < 200; ++i) {
    // A 500-milli share fits only on node 0's idle GPU 1 (GPU 0 has 400 free).
    auto ca = pa.Score(Pod(1, 1000, 1, 500), 0, c_);
    auto cb = pb.Score(Pod(1, 1000, 1, 500), 0, c_);
    ASSERT_TRUE(ca && cb);
    EXPECT_EQ(ca->score, cb->score);
    EXPECT_EQ(ca->placement.slices[0].partition, ClusterState::PartitionOf(1, 0));
    // A 300-milli share fits on both GPUs of node 0: both get picked.
    on_gpu0 += pa.Score(Pod(1, 1000, 1, 300), 0, c_)->placement.slices[0].partition ==
               ClusterState::PartitionOf(0, 0);
    pb.Score(Pod(1, 1000, 1, 300), 0, c_);
  }
  EXPECT_GT(on_gpu0, 50);
  EXPECT_LT(on_gpu0, 150);
}

TEST(BaselinesRegistryTest, EveryBaselineIsRegistered) {
  Rng rng(1);
  for (const char* name :
       {"random", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "fgd"}) {
    auto p = MakePolicy(name, {&rng, nullptr});
    ASSERT_TRUE(p) << name << ": " << p.error().message;
    EXPECT_EQ((*p)->name(), name);
  }
  EXPECT_FALSE(MakePolicy("random", {nullptr, nullptr}));
  EXPECT_FALSE(MakePolicy("best-fit", {&rng, nullptr}, {{"bogus", 1}}));
}

}  // namespace
}  // namespace tessera::policy
