// resource-aware (seed 003 §5) against hand-worked numbers on a V100-32GB (32,768 MiB). Every
// GPU here already holds a pod that asked for 24,576 MiB, so the resource-agnostic check leaves
// 8,192 MiB and bigger pods need CBP or peak prediction.
//
// CBP window [6000, 7000, 8000, 7000, 9000] MiB: mean 7,400, σ = √(5,200,000/5) = 1,019.8,
// CV = 0.1378 < 0.2; sorted [6000, 7000, 7000, 8000, 9000], p80 at rank 0.8·4 = 3.2:
// 8000 + 0.2·1000 = 8,200 MiB → 32,768 − 8,200 = 24,568 MiB free.
// Ramp [2000, 4000, …, 14000] (7 samples): CV = 4000/8000 = 0.5 ≥ 0.2 (CBP refuses); deviations
// −6..6 (×1000) give r_1 = 64/112 = 0.571 > 0.5; AR(1) fits Y_t = 2000 + 1·Y_{t−1} exactly and
// forecasts 16,000 MiB → 16,768 free.
// Approach [12000, 16000, 18000, 19000, 19500]: Y_t = 10000 + 0.5·Y_{t−1} exactly → forecast
// 10000 + 0.5·19500 = 19,750 MiB → 13,018 free; mean 16,900, deviations (−4.9, −0.9, 1.1, 2.1,
// 2.6)·1000 give r_1 = 11.19/37.2 = 0.3008.
#include "policy/resource_aware.h"

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
using testing::AddV100Nodes;
using testing::FeedMemory;
using testing::kApproach;
using testing::MemoryPod;

constexpr double kCbpWindow[] = {6000, 7000, 8000, 7000, 9000};
constexpr double kRamp[] = {2000, 4000, 6000, 8000, 10000, 12000, 14000};

class ResourceAwareTest : public ::testing::Test {
 protected:
  // GPUs that each hold a pod of 24,576 MiB requested, reserving none (as resource-aware does).
  void SetUpGpus(int gpus) {
    AddV100Nodes(c_, 1, gpus);
    for (GpuIndex g = 0; g < gpus; ++g) Hold(g, 100 + g, 24576);
  }
  void Hold(GpuIndex g, model::WorkloadId id, int64_t mib) {
    const Workload w = MemoryPod(id, mib);
    ASSERT_TRUE(c_.Place(w, MemorySharePlacement(w, g, 0, c_)));
  }
  const std::string& Uuid(GpuIndex g) const { return c_.gpu(g).uuid; }

  ClusterState c_;
  telemetry::StaticTelemetry telemetry_;
};

TEST_F(ResourceAwareTest, ResourceAgnosticFitCountsRequestsNotReservations) {
  SetUpGpus(1);
  ResourceAware p(&telemetry_);
  // 32,768 − 24,576 = 8,192 MiB unrequested: 8,192 fits, 8,193 does not (and nothing else
  // can judge: no telemetry yet).
  const ResourceAware::Verdict in = p.Judge(MemoryPod(1, 8192), 0, c_);
  EXPECT_EQ(in.by, ResourceAware::Check::kAgnostic);
  EXPECT_EQ(in.left_mib, 0);
  EXPECT_EQ(p.Judge(MemoryPod(1, 8193), 0, c_).by, ResourceAware::Check::kNone);
  // The placement reserves no memory (no pinned limit) and caps threads at the request.
  auto cand = p.Score(MemoryPod(1, 8192), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].memory_mib, 0);
  EXPECT_TRUE(cand->placement.slices[0].best_effort);
}

TEST_F(ResourceAwareTest, CbpSizesASteadyGpuByThe80thPercentile) {
  SetUpGpus(1);
  FeedMemory(telemetry_, Uuid(0), 100, kCbpWindow);
  ResourceAware p(&telemetry_, {.cbp_window_s = 4});
  const ResourceAware::Verdict in = p.Judge(MemoryPod(1, 24560), 0, c_);
  EXPECT_EQ(in.by, ResourceAware::Check::kCbp) << in.detail;
  EXPECT_NEAR(in.left_mib, 24568 - 24560, 1e-6);
  EXPECT_THAT(in.detail, HasSubstr("CV 0.138 < 0.2, p80 8200 MiB + 0 MiB not yet seen"))
      << in.detail;
  EXPECT_EQ(p.Judge(MemoryPod(1, 24580), 0, c_).by, ResourceAware::Check::kNone);
  // A lower CV threshold refuses the same window, saying so.
  ResourceAware strict(&telemetry_, {.cv_threshold = 0.1, .cbp_window_s = 4});
  const ResourceAware::Verdict out = strict.Judge(MemoryPod(1, 24560), 0, c_);
  EXPECT_EQ(out.by, ResourceAware::Check::kNone);
  EXPECT_THAT(out.detail, HasSubstr("CBP: CV 0.138 ≥ 0.1")) << out.detail;
}

TEST_F(ResourceAwareTest, PeakPredictionForecastsARisingGpuWithAr1) {
  SetUpGpus(1);
  FeedMemory(telemetry_, Uuid(0), 100, kRamp);
  ResourceAware p(&telemetry_);  // defaults: 30 s windows hold all 7 samples
  const ResourceAware::Verdict in = p.Judge(MemoryPod(1, 16000), 0, c_);
  EXPECT_EQ(in.by, ResourceAware::Check::kPeakPrediction) << in.detail;
  EXPECT_NEAR(in.left_mib, 768, 1e-6);
  EXPECT_THAT(in.detail, HasSubstr("CBP: CV 0.500 ≥ 0.2")) << in.detail;
  EXPECT_THAT(in.detail, HasSubstr("r_1 0.571 > 0.5, AR(1) 2000.0 + 1.000·14000 = 16000 MiB"))
      << in.detail;
  EXPECT_EQ(p.Judge(MemoryPod(1, 16800), 0, c_).by, ResourceAware::Check::kNone);
}

TEST_F(ResourceAwareTest, PeakPredictionNeedsTheAutocorrelationAboveItsThreshold) {
  SetUpGpus(1);
  FeedMemory(telemetry_, Uuid(0), 100, kApproach);
  // r_1 = 0.3008: not above the default 0.5, so no forecast.
  ResourceAware dflt(&telemetry_, {.cbp = false});
  const ResourceAware::Verdict out = dflt.Judge(MemoryPod(1, 13000), 0, c_);
  EXPECT_EQ(out.by, ResourceAware::Check::kNone);
  EXPECT_THAT(out.detail, HasSubstr("r_1 0.301 ≤ 0.5")) << out.detail;
  // Above 0.25 it forecasts 19,750 MiB: 13,018 free.
  ResourceAware loose(&telemetry_, {.cbp = false, .autocorrelation_threshold = 0.25});
  const ResourceAware::Verdict in = loose.Judge(MemoryPod(1, 13000), 0, c_);
  EXPECT_EQ(in.by, ResourceAware::Check::kPeakPrediction) << in.detail;
  EXPECT_NEAR(in.left_mib, 18, 1e-6);
  EXPECT_EQ(loose.Judge(MemoryPod(1, 13100), 0, c_).by, ResourceAware::Check::kNone);
}

TEST_F(ResourceAwareTest, LargestRequestFirstThenArrival) {
  const Workload a = MemoryPod(1, 7168, "", 5), b = MemoryPod(2, 14336, "", 6),
                 c = MemoryPod(3, 7168, "", 4), d = MemoryPod(4, 14336, "", 6);
  std::vector<const Workload*> q = {&a, &b, &c, &d};
  ResourceAware(nullptr).Order(q);
  EXPECT_EQ(q, (std::vector<const Workload*>{&b, &d, &c, &a}));
}

TEST_F(ResourceAwareTest, AnEarlierCheckWinsAcrossGpus) {
  SetUpGpus(2);
  // Both GPUs steady at the CBP window. A 4,096 MiB pod passes the agnostic check on both,
  // leaving 4,096 on either: a tie, so GPU 0. Once GPU 1's pod is gone, a 20,000 MiB pod gets
  // into GPU 0 by CBP only (24,568 free) and into GPU 1 by the agnostic check: GPU 1 wins.
  FeedMemory(telemetry_, Uuid(0), 100, kCbpWindow);
  FeedMemory(telemetry_, Uuid(1), 100, kCbpWindow);
  ResourceAware p(&telemetry_, {.cbp_window_s = 4});
  auto small = p.Score(MemoryPod(1, 4096), 0, c_);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
  ASSERT_TRUE(c_.Remove(101));
  auto big = p.Score(MemoryPod(2, 20000), 0, c_);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->placement.slices[0].partition, ClusterState::PartitionOf(1, 0));
  EXPECT_GT(big->score, 67);
  const std::string why = p.Explain(MemoryPod(2, 20000), c_);
  EXPECT_THAT(why, HasSubstr("in by resource-agnostic fit")) << why;
  EXPECT_THAT(why, HasSubstr("in by CBP")) << why;
}

// Through the scheduler core: the first big pod gets in by CBP; the second, in the same cycle,
// must count the first at its request (the telemetry cannot show it yet) and waits. CBP's
// p80 over 30 s can show a pod only once (1 − 0.8)·30 = 6 s of samples follow its bind.
TEST_F(ResourceAwareTest, PodsTheTelemetryCannotShowYetCountAtTheirRequest) {
  SetUpGpus(1);
  std::vector<double> steady(30, 7000);
  FeedMemory(telemetry_, Uuid(0), 0, steady);  // t = 0..29
  ResourceAware p(&telemetry_);
  ManualClock clock(29.5);
  Rng rng(1);
  sched::Scheduler s(c_, p, clock, rng, {});
  ASSERT_TRUE(s.Submit(MemoryPod(1, 24576)));
  ASSERT_TRUE(s.Submit(MemoryPod(2, 24576)));
  EXPECT_EQ(s.RunCycle().bound, 1);
  ASSERT_TRUE(c_.CheckInvariants());
  const ResourceAware::Verdict waiting = p.Judge(MemoryPod(2, 24576), 0, c_);
  EXPECT_EQ(waiting.by, ResourceAware::Check::kNone);
  EXPECT_THAT(waiting.detail, HasSubstr("p80 7000 MiB + 24576 MiB not yet seen")) << waiting.detail;
  // Pod 1 was first seen when the newest sample was t = 29: still unseen at t = 35.
  for (double t = 30; t <= 35; ++t) telemetry_.AddMemorySample(Uuid(0), t, 7000);
  clock.Set(35.5);
  EXPECT_EQ(s.RunCycle().bound, 0);
  // At t = 36 it counts as shown (it allocated nothing yet — 003's restarts come from this).
  telemetry_.AddMemorySample(Uuid(0), 36, 7000);
  clock.Set(36.5);
  EXPECT_EQ(s.RunCycle().bound, 1);
  ASSERT_TRUE(c_.CheckInvariants());
}

// A pod whose own series ends at 0 MiB is restarting after a crash: the GPU's series shows its
// back-off as free memory, so the checks count it at its request (HoldsNothingNow; 003 does
// not). GPU steady at 7,000 MiB (CV 0, p80 7,000); a 20,000 MiB pod fits beside that
// (32,768 − 7,000 = 25,768 MiB free) but not once pod 100's 24,576 MiB are counted (1,192).
TEST_F(ResourceAwareTest, APodRestartingAfterACrashCountsAtItsRequest) {
  SetUpGpus(1);
  std::vector<double> steady(30, 7000);
  FeedMemory(telemetry_, Uuid(0), 0, steady);
  FeedMemory(telemetry_, "pod100", 0, steady);  // pod 100 holds the 7,000 MiB, running
  ResourceAware p(&telemetry_);
  const ResourceAware::Verdict running = p.Judge(MemoryPod(1, 20000), 0, c_);
  EXPECT_EQ(running.by, ResourceAware::Check::kCbp) << running.detail;
  EXPECT_THAT(running.detail, HasSubstr("p80 7000 MiB + 0 MiB not yet seen")) << running.detail;
  // It crashes: its own newest sample is 0; the GPU's window still reads 7,000 at p80.
  telemetry_.AddMemorySample("pod100", 30, 0);
  telemetry_.AddMemorySample(Uuid(0), 30, 0);
  const ResourceAware::Verdict crashed = p.Judge(MemoryPod(1, 20000), 0, c_);
  EXPECT_EQ(crashed.by, ResourceAware::Check::kNone) << crashed.detail;
  EXPECT_THAT(crashed.detail, HasSubstr("p80 7000 MiB + 24576 MiB not yet seen")) << crashed.detail;
  // Running again, it counts by its use.
  telemetry_.AddMemorySample("pod100", 31, 6500);
  telemetry_.AddMemorySample(Uuid(0), 31, 6500);
  EXPECT_EQ(p.Judge(MemoryPod(1, 20000), 0, c_).by, ResourceAware::Check::kCbp);
}

// `resize`: checks 2 and 3 size a pod by the most memory a pod of its application was seen
// holding. Two "ssd" pods asked for 24,576 MiB each (250 % over 7,000) and each holds 7,000: the
// GPU reads 14,000 steady (CV 0, p80 14,000), 18,768 MiB free. A third "ssd" pod asking
// 24,576 does not fit by its request, but sized at 7,000 it does, leaving 11,768. A pod of an
// application never seen keeps its request with `unseen_by_ratio` off; on (the default), it is
// sized by the largest use ÷ request seen, 7,000 / 24,576 = 0.2848: a 12,288 MiB "resnet" pod
// counts 3,500 MiB and leaves 18,768 − 3,500 = 15,268.
TEST_F(ResourceAwareTest, ResizeSizesAPodByItsApplicationsSeenPeak) {
  AddV100Nodes(c_, 1, 1);
  for (model::WorkloadId id : {100, 101}) {
    const Workload w = MemoryPod(id, 24576, "ssd");
    ASSERT_TRUE(c_.Place(w, MemorySharePlacement(w, 0, 0, c_)));
    FeedMemory(telemetry_, w.name, 0, std::vector<double>(30, 7000));
  }
  FeedMemory(telemetry_, Uuid(0), 0, std::vector<double>(30, 14000));
  ResourceAware p(&telemetry_);
  const ResourceAware::Verdict in = p.Judge(MemoryPod(1, 24576, "ssd"), 0, c_);
  EXPECT_EQ(in.by, ResourceAware::Check::kCbp) << in.detail;
  EXPECT_NEAR(in.left_mib, 11768, 1e-6);
  EXPECT_THAT(in.detail, HasSubstr("resized to its application's seen peak, 7000 MiB"));
  ResourceAware per_application(&telemetry_, {.unseen_by_ratio = false});
  EXPECT_EQ(per_application.Judge(MemoryPod(2, 24576, "resnet"), 0, c_).by,
            ResourceAware::Check::kNone);
  const ResourceAware::Verdict unseen = p.Judge(MemoryPod(2, 12288, "resnet"), 0, c_);
  EXPECT_EQ(unseen.by, ResourceAware::Check::kCbp) << unseen.detail;
  EXPECT_NEAR(unseen.left_mib, 15268, 1e-6);
  EXPECT_THAT(unseen.detail, HasSubstr("resized by the largest use ÷ request seen, 0.285, to 3500"))
      << unseen.detail;
  ResourceAware by_request(&telemetry_, {.resize = false});
  const ResourceAware::Verdict out = by_request.Judge(MemoryPod(1, 24576, "ssd"), 0, c_);
  EXPECT_EQ(out.by, ResourceAware::Check::kNone) << out.detail;
  EXPECT_THAT(out.detail, HasSubstr("→ 18768 MiB free < 24576")) << out.detail;
}

// `cover_growth` (ours): every pod counts at least at its size. Pod 100 ("ssd") holds 7,000;
// pod 101 ("ssd") was bound before the policy looked and shows 350 (loading). The GPU reads
// 7,000 for 27 s, then 7,350 for 3 (CV 0.014; p80 at rank 23.2 of 30: 7,000). A 20,000 MiB pod
// of no known application fits in 32,768 − 7,000 = 25,768; with pod 101's growth to come
// (7,000 − 350 = 6,650) counted, 19,118 are free and it waits. (Sized by its request:
// `unseen_by_ratio` off.)
TEST_F(ResourceAwareTest, CoverGrowthCountsALoadingPodAtItsApplicationsPeak) {
  AddV100Nodes(c_, 1, 1);
  for (model::WorkloadId id : {100, 101}) {
    const Workload w = MemoryPod(id, 24576, "ssd");
    ASSERT_TRUE(c_.Place(w, MemorySharePlacement(w, 0, 0, c_)));
  }
  FeedMemory(telemetry_, "pod100", 0, std::vector<double>(30, 7000));
  FeedMemory(telemetry_, "pod101", 27, std::vector<double>(3, 350));
  std::vector<double> gpu(30, 7000);
  for (size_t i = 27; i < 30; ++i) gpu[i] = 7350;
  FeedMemory(telemetry_, Uuid(0), 0, gpu);
  ResourceAware plain(&telemetry_, {.peak_prediction = false, .unseen_by_ratio = false});
  const ResourceAware::Verdict in = plain.Judge(MemoryPod(1, 20000), 0, c_);
  EXPECT_EQ(in.by, ResourceAware::Check::kCbp) << in.detail;
  EXPECT_NEAR(in.left_mib, 5768, 1e-6);
  ResourceAware covered(&telemetry_,
                        {.peak_prediction = false, .unseen_by_ratio = false, .cover_growth = true});
  const ResourceAware::Verdict out = covered.Judge(MemoryPod(1, 20000), 0, c_);
  EXPECT_EQ(out.by, ResourceAware::Check::kNone) << out.detail;
  EXPECT_THAT(out.detail, HasSubstr("p80 7000 MiB + 6650 MiB not yet seen → 19118 MiB free"))
      << out.detail;
}

TEST(HoldsNothingNowTest, OnlyAPodWhoseOwnSeriesEndsAtZero) {
  telemetry::StaticTelemetry t;
  const Workload w = MemoryPod(7, 1000);
  EXPECT_FALSE(HoldsNothingNow(w, &t));  // no series: not known to hold nothing
  EXPECT_FALSE(HoldsNothingNow(w, nullptr));
  t.AddMemorySample("pod7", 0, 0);
  EXPECT_TRUE(HoldsNothingNow(w, &t));  // starting: nothing allocated yet
  t.AddMemorySample("pod7", 1, 800);
  EXPECT_FALSE(HoldsNothingNow(w, &t));
  t.AddMemorySample("pod7", 2, 0);
  EXPECT_TRUE(HoldsNothingNow(w, &t));  // crashed
}

TEST_F(ResourceAwareTest, ABlockedHeadDoesNotBlockTheQueue) {
  SetUpGpus(1);
  ResourceAware p(nullptr);  // no telemetry: only the agnostic check
  ManualClock clock;
  Rng rng(1);
  sched::Scheduler s(c_, p, clock, rng, {});
  ASSERT_TRUE(s.Submit(MemoryPod(1, 16384)));  // first in the queue, fails every check
  ASSERT_TRUE(s.Submit(MemoryPod(2, 8192)));
  EXPECT_EQ(s.RunCycle().bound, 1);
  EXPECT_NE(c_.Find(2), nullptr);
  EXPECT_EQ(s.pending_count(), 1u);
}

TEST(ResourceAwareOptionsTest, OptionsAreCheckedAndNamed) {
  auto o = ParseResourceAwareOptions({{"percentile", 90}, {"lag", 2}, {"cbp", false}});
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->percentile, 90);
  EXPECT_EQ(o->lag, 2);
  EXPECT_FALSE(o->cbp);
  EXPECT_TRUE(o->resize);
  EXPECT_TRUE(o->unseen_by_ratio);
  EXPECT_FALSE(o->cover_growth);
  auto sizes = ParseResourceAwareOptions({{"resize", false}, {"cover_growth", true}});
  ASSERT_TRUE(sizes.has_value()) << sizes.error().message;
  EXPECT_FALSE(sizes->resize);
  EXPECT_TRUE(sizes->cover_growth);
  EXPECT_FALSE(ParseResourceAwareOptions({{"resize", "yes"}}).has_value());
  for (const auto& [key, value] : {std::pair<const char*, double>{"percentile", 101},
                                   {"cv_threshold", -0.1},
                                   {"autocorrelation_threshold", 1.5},
                                   {"min_samples", 2},
                                   {"cbp_window_s", 0}}) {
    auto bad = ParseResourceAwareOptions({{key, value}});
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_THAT(bad.error().message,
                HasSubstr("policy resource-aware: option '" + std::string(key) + "'"))
        << bad.error().message;
  }
  EXPECT_FALSE(ParseResourceAwareOptions({{"lag", 5}, {"min_samples", 5}}).has_value());
}

}  // namespace
}  // namespace tessera::policy
