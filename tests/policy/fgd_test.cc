// FGD (ATC'23 §4.2) and Tessera's frag-pack, on a cluster small enough to derive every
// fragment by hand (policy/frag.h): one typical pod, a 500-milli share with 1 core.
#include "policy/fgd.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/rng.h"
#include "policy/fit.h"
#include "policy/frag_pack.h"
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

ShapeDistribution OneShape() { return ShapeDistribution({PodShape{1000, 1, 500, 0, 1}}); }

class FgdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto t4 = *FindGpuModel("T4");
    ASSERT_TRUE(c_.AddNode(UniformNode("a", t4, 2, 64000, 262144)));  // GPUs 0, 1
    ASSERT_TRUE(c_.AddNode(UniformNode("b", t4, 4, 64000, 262144)));  // GPUs 2..5
    ASSERT_TRUE(
        c_.Place(Pod(100, 1000, 1, 600), {100, 0, {{ClusterState::PartitionOf(0, 0), 600, 0}}}));
  }
  ClusterState c_;
};

TEST(FgdScoreTest, SigmoidOfTheFragmentDropTruncated) {
  EXPECT_EQ(Fgd::ScoreOf(500, 500), 50);   // sigmoid(0) = 0.5
  EXPECT_EQ(Fgd::ScoreOf(1300, 300), 73);  // sigmoid(1) = 0.7311
  EXPECT_EQ(Fgd::ScoreOf(300, 1300), 26);  // sigmoid(-1) = 0.2689
  EXPECT_EQ(Fgd::ScoreOf(400, 100), 57);   // sigmoid(0.3) = 0.5744
}

TEST_F(FgdTest, PicksTheGpuAndNodeThatLowerFragmentationMost) {
  Fgd fgd(OneShape());
  // Node 0 has [400, 1000] free: fragment 400 (the 500 share fits on GPU 1 only).
  //  300 on GPU 0 -> [100, 1000]: fragment 100, drop 300 -> 57;
  //  300 on GPU 1 -> [400, 700]: fragment 400, drop 0 -> 50. GPU 0 wins.
  auto a = fgd.Score(Pod(1, 1000, 1, 300), 0, c_);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->score, 57);
  EXPECT_EQ(a->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
  // Node 1 is idle: fragment 0 before and after ([700, 1000, 1000, 1000]) -> 50.
  EXPECT_EQ(fgd.Score(Pod(1, 1000, 1, 300), 1, c_)->score, 50);
  // Cached offers follow the node: fill GPU 0 up and node 0 changes its answer.
  ASSERT_TRUE(
      c_.Place(Pod(101, 1000, 1, 400), {101, 0, {{ClusterState::PartitionOf(0, 0), 400, 0}}}));
  // Now [0, 1000]: fragment 0; 300 on GPU 1 -> [0, 700]: still 0 -> 50.
  auto again = fgd.Score(Pod(2, 1000, 1, 300), 0, c_);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->score, 50);
  EXPECT_EQ(again->placement.slices[0].partition, ClusterState::PartitionOf(1, 0));
}

TEST_F(FgdTest, WholeGpuRequestsTakeTheFirstIdleGpus) {
  Fgd fgd(OneShape());
  // Node 1 [1000 x 4] -> two whole GPUs taken: [0, 0, 1000, 1000], fragment 0 -> 50.
  auto c = fgd.Score(Pod(1, 1000, 2, 1000), 1, c_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->score, 50);
  EXPECT_EQ(c->placement.slices[0].partition, ClusterState::PartitionOf(2, 0));
  EXPECT_EQ(c->placement.slices[1].partition, ClusterState::PartitionOf(3, 0));
  // Node 0 has one idle GPU only.
  EXPECT_FALSE(fgd.Score(Pod(1, 1000, 2, 1000), 0, c_));
}

TEST_F(FgdTest, LearnsTypicalPodsOnlineWithoutTheOption) {
  Rng rng(1);
  auto p = MakePolicy("fgd", {&rng, nullptr});
  ASSERT_TRUE(p);
  auto* fgd = dynamic_cast<Fgd*>(p->get());
  ASSERT_NE(fgd, nullptr);
  EXPECT_TRUE(fgd->typical().empty());
  ASSERT_TRUE(fgd->Score(Pod(1, 1000, 1, 300), 1, c_));
  ASSERT_EQ(fgd->typical().shapes().size(), 1u);
  EXPECT_EQ(fgd->typical().shapes()[0].gpu_milli, 300);
  // Options are validated.
  EXPECT_FALSE(MakePolicy("fgd", {&rng, nullptr}, {{"typical_pods", "nope"}}));
  EXPECT_TRUE(MakePolicy("fgd", {&rng, nullptr}, {{"typical_pods", OneShape().ToJson()}}));
}

TEST_F(FgdTest, FragPackWasteTable) {
  FragPack p(OneShape());
  // W(L) = L below 500; W(L) = W(L - 500) from 500 on: W(1000) = W(500) = W(0) = 0,
  // W(700) = W(200) = 200.
  EXPECT_DOUBLE_EQ(p.Waste(1000), 0);
  EXPECT_DOUBLE_EQ(p.Waste(700), 200);
  EXPECT_DOUBLE_EQ(p.Waste(400), 400);
  // Node 0, 300 milli on GPU 0: FGD's 57 (the best), then minus 1e-6 * (W(100) - W(400)) =
  // 57 + 3e-4.
  auto a = p.Score(Pod(1, 1000, 1, 300), 0, c_);
  ASSERT_TRUE(a);
  EXPECT_NEAR(a->score, 57 + 300e-6, 1e-9);
  EXPECT_EQ(a->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
}

TEST_F(FgdTest, FragPackSendsCpuHeavyPodsWhereCpuIsToSpare) {
  // One typical pod, 1 core per 500 milli: rho = 1000 / 500 = 2 CPU milli per GPU milli.
  FragPack p(OneShape());
  EXPECT_DOUBLE_EQ(p.CpuPerGpuMilli(), 2);
  // A CPU-only pod of 60 cores. fgd sees no fragment change on either node (1 core still fits
  // the typical pod): 50 on both, a tie.
  Fgd fgd(OneShape());
  const Workload heavy = Pod(1, 60000, 0, 0);
  EXPECT_EQ(fgd.Score(heavy, 0, c_)->score, 50);
  EXPECT_EQ(fgd.Score(heavy, 1, c_)->score, 50);
  // frag-pack. Node 0: [400, 1000] free, 63 -> 3 cores: 3000 / 2 = 1500 milli feedable >= 1400
  // free, nothing stranded -> 50. Node 1: [1000 x 4], 64 -> 4 cores: 2000 feedable of 4000,
  // S 0 -> 2000: floor(sigmoid(-2) * 100) = floor(11.92) = 11.
  NodeFree after = NodeFreeOf(c_, 1);
  after.cpu_milli = 4000;
  EXPECT_DOUBLE_EQ(p.Stranded(NodeFreeOf(c_, 1)), 0);
  EXPECT_DOUBLE_EQ(p.Stranded(after), 2000);
  EXPECT_DOUBLE_EQ(p.Score(heavy, 0, c_)->score, 50);
  EXPECT_DOUBLE_EQ(p.Score(heavy, 1, c_)->score, 11);
  // Weight 0 is FGD's score again.
  FragPack off(OneShape(), /*stranding_weight=*/0);
  EXPECT_DOUBLE_EQ(off.Score(heavy, 1, c_)->score, 50);
  // Weight 0.5 counts half the stranded milli: floor(sigmoid(-1) * 100) = 26.
  FragPack half(OneShape(), 0.5);
  EXPECT_DOUBLE_EQ(half.Score(heavy, 1, c_)->score, 26);
}

TEST(FragPackOptionsTest, BothTermsOffScoreExactlyAsFgdOnRandomClusters) {
  // The ablation's base: frag-pack without stranding and look-ahead is fgd, score and GPU.
  Rng rng(11);
  const ShapeDistribution typical(
      {PodShape{4000, 1, 1000, 0, 5}, PodShape{2000, 1, 500, 0, 3}, PodShape{8000, 0, 0, 0, 2}});
  const auto t4 = *FindGpuModel("T4");
  int placed = 0;
  for (int trial = 0; trial < 30; ++trial) {
    ClusterState c;
    for (int n = 0; n < 4; ++n) {
      ASSERT_TRUE(
          c.AddNode(UniformNode("n" + std::to_string(n), t4, static_cast<int>(1 + rng.Below(4)),
                                static_cast<int64_t>(8000 * (1 + rng.Below(4))), 262144)));
    }
    Fgd fgd(typical);
    FragPack plain(typical, 0, false);
    for (model::WorkloadId id = 1; id <= 12; ++id) {
      const int kind = static_cast<int>(rng.Below(3));
      const Workload w = Pod(id, static_cast<int64_t>(1000 * (1 + rng.Below(8))), kind == 2 ? 0 : 1,
                             kind == 0 ? 1000 : static_cast<int>(100 * (1 + rng.Below(9))));
      std::optional<Candidate> best;
      for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
        if (!NodeFits(w, n, c).ok()) continue;  // the core's filter, before any score
        auto a = fgd.Score(w, n, c);
        auto b = plain.Score(w, n, c);
        ASSERT_EQ(a.has_value(), b.has_value());
        if (!a) continue;
        EXPECT_EQ(a->score, b->score) << "trial " << trial << " pod " << id;
        ASSERT_EQ(a->placement.slices.size(), b->placement.slices.size());
        for (size_t i = 0; i < a->placement.slices.size(); ++i) {
          EXPECT_EQ(a->placement.slices[i].partition, b->placement.slices[i].partition);
        }
        if (!best || a->score > best->score) best = a;
      }
      if (best) {
        ASSERT_TRUE(c.Place(w, best->placement));
        ++placed;
      }
    }
  }
  EXPECT_GT(placed, 200);  // of 360: the clusters fill, so fragments and CPU shortages occur
  // Options: the weight is bounded, the look-ahead a bool.
  EXPECT_FALSE(MakePolicy("frag-pack", {}, {{"stranding_weight", -1}}));
  EXPECT_FALSE(MakePolicy("frag-pack", {}, {{"stranding_weight", 11}}));
  EXPECT_FALSE(MakePolicy("frag-pack", {}, {{"lookahead", "yes"}}));
  EXPECT_TRUE(MakePolicy("frag-pack", {}, {{"stranding_weight", 0.5}, {"lookahead", false}}));
}

// Two typical shapes, weights 3:1 -> 0.75, 0.25.
ShapeDistribution TwoShapes() {
  return ShapeDistribution({PodShape{1000, 1, 500, 0, 3}, PodShape{2000, 0, 0, 0, 1}});
}

TEST(TypicalPodsTest, TheContextsWhenTheOptionIsAbsentTheOptionOverrides) {
  const ShapeDistribution typical = TwoShapes();
  PolicyContext ctx;
  ctx.typical_pods = &typical;
  for (const char* name : {"fgd", "frag-pack"}) {
    auto p = MakePolicy(name, ctx);
    ASSERT_TRUE(p.has_value()) << name;
    auto* frag = dynamic_cast<FragmentationPolicy*>(p->get());
    ASSERT_NE(frag, nullptr) << name;
    ASSERT_EQ(frag->typical().shapes().size(), 2u) << name;
    EXPECT_EQ(frag->typical().shapes()[0].gpu_milli, 500);
    EXPECT_EQ(frag->typical().shapes()[0].weight, 0.75);
    EXPECT_EQ(frag->typical().shapes()[1].cpu_milli, 2000);
    EXPECT_EQ(frag->typical().shapes()[1].weight, 0.25);

    // The option wins over the context: one 300-milli shape.
    const ShapeDistribution one({PodShape{1000, 1, 300, 0, 1}});
    auto q = MakePolicy(name, ctx, {{"typical_pods", one.ToJson()}});
    ASSERT_TRUE(q.has_value()) << name;
    auto* given = dynamic_cast<FragmentationPolicy*>(q->get());
    ASSERT_EQ(given->typical().shapes().size(), 1u);
    EXPECT_EQ(given->typical().shapes()[0].gpu_milli, 300);
    EXPECT_EQ(given->typical().shapes()[0].weight, 1.0);
  }
}

TEST(TypicalPodsTest, TheContextsGiveTheWeightsTheOptionWould) {
  // Seven equal weights renormalise to 1/7 each, which sum to 0.9999999999999998, not 1: the
  // option path (FromJson) renormalises once more, and so must the context path, or a driver
  // moving from the option to the context would move the weights' last bit.
  std::vector<PodShape> seven;
  for (int i = 1; i <= 7; ++i) seven.push_back(PodShape{0, 1, 100 * i, 0, 1});
  const ShapeDistribution typical(seven);
  PolicyContext ctx;
  ctx.typical_pods = &typical;
  auto from_context = TypicalPods("fgd", ctx, nullptr);
  auto from_option = TypicalPods("fgd", {}, {{"typical_pods", typical.ToJson()}});
  ASSERT_TRUE(from_context.has_value());
  ASSERT_TRUE(from_option.has_value());
  ASSERT_EQ(from_context->shapes().size(), 7u);
  ASSERT_EQ(from_option->shapes().size(), 7u);
  EXPECT_NE(from_option->shapes()[0].weight, typical.shapes()[0].weight);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(from_context->shapes()[i].weight, from_option->shapes()[i].weight) << i;
    EXPECT_TRUE(from_context->shapes()[i].SameShape(from_option->shapes()[i])) << i;
  }
  // Neither: empty, so the policy learns the mix online.
  auto none = TypicalPods("fgd", {}, nullptr);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace tessera::policy
