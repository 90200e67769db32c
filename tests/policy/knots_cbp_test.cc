// knots-cbp (seed 004, correlation-based provisioning) against hand-worked numbers, on the
// scene of usage_fixtures.h (KnotsScene): application b's pods are sized at p90 = 5,220 MiB.
//
// Correlation with b's last 5 s of memory, (44, 45, 46, 47, 48, 90)·100 MiB, mean 53.33·100:
// against a GPU falling linearly by 1,000 MiB a second, Σ(b − b̄)(t − t̄) = 120 (×100),
// Σ(t − t̄)² = 17.5, Σ(b − b̄)² = 1,623.33 (×100²): r = −120/√(17.5 · 1,623.33) = −0.712; against
// one rising the same way, +0.712. Bandwidth 0.1, 0.3 alternating against 0.3, 0.1: r = −1;
// against itself: +1. A flat SM series correlates with nothing: 0.
#include "policy/knots_cbp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/rng.h"
#include "sched/scheduler.h"
#include "usage_fixtures.h"

namespace tessera::policy {
namespace {

using ::testing::HasSubstr;

using model::ClusterState;
using testing::kInPhase;
using testing::KnotsScene;
using testing::kRising;
using testing::MemoryPod;

constexpr double kFalling[] = {26000, 25000, 24000, 23000, 22000, 21000};
constexpr double kFlatSm[] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
constexpr double kAntiphase[] = {0.3, 0.1, 0.3, 0.1, 0.3, 0.1};

class KnotsCbpTest : public ::testing::Test {
 protected:
  void SetUp() override { scene_.Build(); }
  KnotsScene scene_;
  ClusterState& c_ = scene_.c;
};

TEST_F(KnotsCbpTest, SizesPodsAtThe90thPercentileOfTheirApplication) {
  KnotsCbp p(&scene_.t);
  p.AfterCycle(c_);  // observes the running pods' series
  std::string how;
  EXPECT_NEAR(p.SizeOf(MemoryPod(1, 16384, "b"), &how), 5220, 1e-6);
  EXPECT_EQ(how, "size 5220 MiB (p90 of 10 samples of b)");
  // No history: the request.
  EXPECT_EQ(p.SizeOf(MemoryPod(2, 16384, "new"), &how), 16384);
  EXPECT_EQ(how, "size 16384 MiB (its request: no history)");
  // The 50th percentile instead: (4400 + 4500) / 2.
  KnotsCbp median(&scene_.t, {.percentile = 50});
  median.AfterCycle(c_);
  EXPECT_NEAR(median.SizeOf(MemoryPod(1, 16384, "b")), 4450, 1e-6);
}

// The size is kept between samples (AppHistory::MemoryPercentile), never past one: an eleventh
// sample of 20,000 MiB makes the p90 of 11 samples the tenth smallest (rank 0.9 × 10 = 9), 9,000.
TEST_F(KnotsCbpTest, ASizeFollowsItsApplicationsNewestSample) {
  KnotsCbp p(&scene_.t);
  p.AfterCycle(c_);
  EXPECT_NEAR(p.SizeOf(MemoryPod(1, 16384, "b")), 5220, 1e-6);
  EXPECT_NEAR(p.SizeOf(MemoryPod(2, 4096, "b")), 5220, 1e-6);
  scene_.t.AddMemorySample("pod101", 10, 20000);
  p.AfterCycle(c_);
  std::string how;
  EXPECT_NEAR(p.SizeOf(MemoryPod(1, 16384, "b"), &how), 9000, 1e-6);
  EXPECT_EQ(how, "size 9000 MiB (p90 of 11 samples of b)");
}

TEST_F(KnotsCbpTest, CoLocatesAnUncorrelatedPodAtItsSize) {
  scene_.FeedGpu0(kFalling, kFlatSm, kAntiphase);
  KnotsCbp p(&scene_.t);
  // Free: 32,768 − 21,000 = 11,768 MiB; the pod asks 16,384 but counts at 5,220.
  const KnotsCbp::Verdict v = p.Judge(MemoryPod(1, 16384, "b"), 0, c_);
  EXPECT_EQ(v.by, KnotsCbp::Check::kCbp) << v.detail;
  EXPECT_EQ(v.free_mib, 11768);
  EXPECT_THAT(v.detail, HasSubstr("free 32768 − 21000 used − 0 not yet seen = 11768 MiB"))
      << v.detail;
  EXPECT_THAT(v.detail, HasSubstr("memory r -0.712 < 0.5; SM r 0.000 < 0.5; bandwidth r -1.000"))
      << v.detail;
  auto cand = p.Score(MemoryPod(1, 16384, "b"), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
  EXPECT_EQ(cand->placement.slices[0].memory_mib, 0);  // nothing reserved, no pinned limit
}

TEST_F(KnotsCbpTest, RefusesWhenAnyMetricCorrelates) {
  {
    KnotsScene rising;
    rising.Build();
    rising.FeedGpu0(kRising, kFlatSm, kAntiphase);
    KnotsCbp p(&rising.t);
    const KnotsCbp::Verdict v = p.Judge(MemoryPod(1, 4096, "b"), 0, rising.c);
    EXPECT_EQ(v.by, KnotsCbp::Check::kNone);
    EXPECT_THAT(v.detail, HasSubstr("memory r 0.712 ≥ 0.5")) << v.detail;
    EXPECT_THAT(v.detail, HasSubstr("CBP refuses (correlated)")) << v.detail;
  }
  scene_.FeedGpu0(kFalling, kFlatSm, kInPhase);
  KnotsCbp p(&scene_.t);
  const KnotsCbp::Verdict v = p.Judge(MemoryPod(1, 4096, "b"), 0, c_);
  EXPECT_EQ(v.by, KnotsCbp::Check::kNone);
  EXPECT_THAT(v.detail, HasSubstr("bandwidth r 1.000 ≥ 0.5")) << v.detail;
  // A higher threshold lets the same pod in.
  KnotsCbp loose(&scene_.t, {.correlation_threshold = 1.01});
  EXPECT_EQ(loose.Judge(MemoryPod(1, 4096, "b"), 0, c_).by, KnotsCbp::Check::kCbp);
}

TEST_F(KnotsCbpTest, APodWithoutHistoryGoesOnlyWhereNothingRuns) {
  scene_.FeedGpu0(kFalling, kFlatSm, kAntiphase);
  ASSERT_TRUE(scene_.c.AddNode(model::UniformNode("v1", *model::FindGpuModel("V100-32GB"), 1, 64000,
                                                  1 << 20)));  // GPU 2: idle, no data
  KnotsCbp p(&scene_.t);
  const KnotsCbp::Verdict busy = p.Judge(MemoryPod(1, 4096, "new"), 0, c_);
  EXPECT_EQ(busy.by, KnotsCbp::Check::kNone);
  EXPECT_THAT(busy.detail, HasSubstr("memory: too little data to correlate")) << busy.detail;
  const KnotsCbp::Verdict idle = p.Judge(MemoryPod(1, 4096, "new"), 2, c_);
  EXPECT_EQ(idle.by, KnotsCbp::Check::kCbp) << idle.detail;
  EXPECT_THAT(idle.detail, HasSubstr("no memory telemetry: free 32768 − 0 sized = 32768 MiB"))
      << idle.detail;
}

TEST_F(KnotsCbpTest, PrefersTheGpuWithTheMostFreeMemory) {
  scene_.FeedGpu0(kFalling, kFlatSm, kAntiphase);  // 11,768 free
  ASSERT_TRUE(scene_.c.AddNode(model::UniformNode("v1", *model::FindGpuModel("V100-32GB"), 1, 64000,
                                                  1 << 20)));  // GPU 2: 32,768 free
  KnotsCbp p(&scene_.t);
  auto on0 = p.Score(MemoryPod(1, 4096, "b"), 0, c_);
  auto on1 = p.Score(MemoryPod(1, 4096, "b"), 1, c_);
  ASSERT_TRUE(on0 && on1);
  EXPECT_GT(on1->score, on0->score);
  EXPECT_NEAR(on1->score / on0->score, 32768.0 / 11768.0, 1e-9);
}

// Three b pods in one cycle on GPU 0 (GPU 1 has 2,768 free): the first fits 11,768; the second
// counts the first at its size, 11,768 − 5,220 = 6,548 ≥ 5,220; the third sees 1,328 and waits.
TEST_F(KnotsCbpTest, PodsBoundThisCycleCountAtTheirSize) {
  scene_.FeedGpu0(kFalling, kFlatSm, kAntiphase);
  KnotsCbp p(&scene_.t);
  ManualClock clock(9.5);
  Rng rng(1);
  sched::Scheduler s(c_, p, clock, rng, {});
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(s.Submit(MemoryPod(i, 16384, "b")));
  EXPECT_EQ(s.RunCycle().bound, 2);
  ASSERT_TRUE(c_.CheckInvariants());
  const KnotsCbp::Verdict v = p.Judge(MemoryPod(3, 16384, "b"), 0, c_);
  EXPECT_EQ(v.by, KnotsCbp::Check::kNone);
  EXPECT_THAT(v.detail, HasSubstr("21000 used − 10440 not yet seen = 1328 MiB")) << v.detail;
}

TEST(KnotsCbpOptionsTest, OptionsAreCheckedAndNamed) {
  auto o = ParseKnotsCbpOptions("knots-cbp", {{"percentile", 95}, {"window_s", 10}});
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->percentile, 95);
  EXPECT_EQ(o->window_s, 10);
  for (const auto& [key, value] : {std::pair<const char*, double>{"correlation_threshold", 2},
                                   {"percentile", -1},
                                   {"window_s", 0},
                                   {"history_s", 2},
                                   {"min_samples", 1}}) {
    auto bad = ParseKnotsCbpOptions("knots-cbp", {{key, value}});
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_THAT(bad.error().message,
                HasSubstr("policy knots-cbp: option '" + std::string(key) + "'"))
        << bad.error().message;
  }
}

}  // namespace
}  // namespace tessera::policy
