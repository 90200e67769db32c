// knots-pp (seed 004, peak prediction) on the scene of usage_fixtures.h (KnotsScene): a b pod
// that CBP refuses on GPU 0 because their use correlates, and what the forecast makes of it.
//
// Rising GPU 0, 21,000 … 26,000 MiB at 1 Hz: deviations −2.5 … 2.5 (×1000) give r_1 =
// 8.75/17.5 = 0.5 > 0; AR(1) fits Y_t = 1000 + 1·Y_{t−1} exactly: 27,000 MiB 1 s ahead → 5,768
// free. Alternating 21,000 / 26,000: r_1 = −5·2.5²/(6·2.5²) = −0.833 ≤ 0: no forecast.
// Approach 12,000, 16,000, 18,000, 19,000, 19,500: Y_t = 10000 + 0.5·Y_{t−1}, r_1 = 0.3008;
// 1 s ahead 19,750 (13,018 free), 2 s ahead 10000 + 0.5·19750 = 19,875 (12,893 free).
#include "policy/knots_pp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "base/rng.h"
#include "sched/scheduler.h"
#include "usage_fixtures.h"

namespace tessera::policy {
namespace {

using ::testing::HasSubstr;

using testing::kApproach;
using testing::kInPhase;
using testing::KnotsScene;
using testing::kRising;
using testing::MemoryPod;

constexpr double kAlternating[] = {21000, 26000, 21000, 26000, 21000, 26000};

TEST(KnotsPpTest, ForecastsACorrelatedGpuOneSecondAheadAndPlacesIfTheRequestFits) {
  KnotsScene s;
  s.Build();
  s.FeedGpu0(kRising, {}, {});
  KnotsPp p(&s.t);
  const KnotsCbp::Verdict in = p.Judge(MemoryPod(1, 5000, "b"), 0, s.c);
  EXPECT_EQ(in.by, KnotsCbp::Check::kPeakPrediction) << in.detail;
  EXPECT_THAT(in.detail, HasSubstr("memory r 0.712 ≥ 0.5")) << in.detail;
  EXPECT_THAT(in.detail,
              HasSubstr("PP: r_1 0.500 > 0, AR(1) 1000.0 + 1.000·Y over 1 step from 26000 → 27000 "
                        "MiB + 0 not yet seen → 5768 MiB free ≥ 5000 requested: in by PP"))
      << in.detail;
  // The request must fit, not the size (5,220): 6,000 does not.
  EXPECT_EQ(p.Judge(MemoryPod(1, 6000, "b"), 0, s.c).by, KnotsCbp::Check::kNone);
  // knots-cbp alone refuses the same pod.
  KnotsCbp cbp(&s.t);
  EXPECT_EQ(cbp.Judge(MemoryPod(1, 5000, "b"), 0, s.c).by, KnotsCbp::Check::kNone);
  auto cand = p.Score(MemoryPod(1, 5000, "b"), 0, s.c);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].partition, model::ClusterState::PartitionOf(0, 0));
}

TEST(KnotsPpTest, NoPositiveAutocorrelationNoForecastAndThePodWaits) {
  KnotsScene s;
  s.Build();
  s.FeedGpu0(kAlternating, {}, kInPhase);  // bandwidth in phase: CBP refuses
  KnotsPp p(&s.t);
  const KnotsCbp::Verdict v = p.Judge(MemoryPod(1, 2000, "b"), 0, s.c);
  EXPECT_EQ(v.by, KnotsCbp::Check::kNone);
  EXPECT_THAT(v.detail, HasSubstr("bandwidth r 1.000 ≥ 0.5")) << v.detail;
  EXPECT_THAT(v.detail, HasSubstr("PP: r_1 -0.833 ≤ 0: no trend to forecast")) << v.detail;
  // GPU 1 has 2,768 MiB free, too little for the pod's 5,220: nowhere to go, it waits.
  ManualClock clock(9.5);
  Rng rng(1);
  sched::Scheduler core(s.c, p, clock, rng, {});
  ASSERT_TRUE(core.Submit(MemoryPod(1, 2000, "b")));
  EXPECT_EQ(core.RunCycle().bound, 0);
  EXPECT_EQ(core.pending_count(), 1u);
}

TEST(KnotsPpTest, TheHorizonIteratesTheFitOncePerSamplingInterval) {
  for (const auto& [horizon, free, steps] :
       {std::tuple<double, double, const char*>{1, 13018, "1 step"}, {2, 12893, "2 steps"}}) {
    KnotsScene s;
    s.Build();
    s.FeedGpu0(kApproach, {}, kInPhase);
    KnotsPp p(&s.t, {.horizon_s = horizon});
    const KnotsCbp::Verdict in =
        p.Judge(MemoryPod(1, static_cast<int64_t>(free) - 10, "b"), 0, s.c);
    EXPECT_EQ(in.by, KnotsCbp::Check::kPeakPrediction) << in.detail;
    EXPECT_THAT(in.detail,
                HasSubstr(fmt::format("r_1 0.301 > 0, AR(1) 10000.0 + 0.500·Y over {}", steps)))
        << in.detail;
    EXPECT_THAT(in.detail, HasSubstr(fmt::format("→ {:.0f} MiB free", free))) << in.detail;
    EXPECT_EQ(p.Judge(MemoryPod(1, static_cast<int64_t>(free) + 10, "b"), 0, s.c).by,
              KnotsCbp::Check::kNone);
  }
}

// Steering: GPU 0 rose 14,000 … 22,000 MiB and dipped to 18,000. Its memory does not move with
// b's history (r = 0.078 < 0.5), so CBP admits b (size 5,220 ≤ 14,768 free). But r_1 =
// 16/40 = 0.4 > 0, and AR(1) over the pairs (x̄ 18,000, z̄ 18,800, cov 3.2, var 8, ×10⁶) fits
// φ = 0.4, μ = 18,800 − 0.4·18,000 = 11,600: 1 s ahead 18,800 MiB, 13,968 free. A request of
// 14,500 does not fit that: PP sends the pod on; 13,900 does. With steer off, CBP's word stands.
TEST(KnotsPpTest, SteersAPodCbpAdmitsAwayFromAnImpendingPeak) {
  constexpr double kDipping[] = {14000, 16000, 18000, 20000, 22000, 18000};
  KnotsScene s;
  s.Build();
  s.FeedGpu0(kDipping, {}, {});
  KnotsPp p(&s.t);
  const KnotsCbp::Verdict away = p.Judge(MemoryPod(1, 14500, "b"), 0, s.c);
  EXPECT_EQ(away.by, KnotsCbp::Check::kNone) << away.detail;
  EXPECT_THAT(away.detail, HasSubstr("free 32768 − 18000 used − 0 not yet seen = 14768 MiB"));
  EXPECT_THAT(away.detail, HasSubstr("memory r 0.078 < 0.5")) << away.detail;
  EXPECT_THAT(away.detail, HasSubstr(": in by CBP")) << away.detail;
  EXPECT_THAT(away.detail,
              HasSubstr("PP: r_1 0.400 > 0, AR(1) 11600.0 + 0.400·Y over 1 step from 18000 → "
                        "18800 MiB + 0 not yet seen → 13968 MiB free < 14500 requested: a peak "
                        "is impending, PP steers it away"))
      << away.detail;
  const KnotsCbp::Verdict stays = p.Judge(MemoryPod(1, 13900, "b"), 0, s.c);
  EXPECT_EQ(stays.by, KnotsCbp::Check::kCbp) << stays.detail;
  EXPECT_THAT(stays.detail, HasSubstr("≥ 13900 requested: no peak impending")) << stays.detail;
  KnotsPp literal(&s.t, {.steer = false});
  EXPECT_EQ(literal.Judge(MemoryPod(1, 14500, "b"), 0, s.c).by, KnotsCbp::Check::kCbp);
  // CBP alone admits it as well.
  KnotsCbp cbp(&s.t);
  EXPECT_EQ(cbp.Judge(MemoryPod(1, 14500, "b"), 0, s.c).by, KnotsCbp::Check::kCbp);
}

TEST(KnotsPpOptionsTest, OptionsAreCheckedAndNamed) {
  auto o = ParseKnotsPpOptions({{"lag", 2}, {"horizon_s", 3}, {"window_s", 10}, {"steer", false}});
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_FALSE(o->steer);
  EXPECT_EQ(o->lag, 2);
  EXPECT_EQ(o->horizon_s, 3);
  EXPECT_EQ(o->cbp.window_s, 10);
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"lag", 3}, {"horizon_s", 0}, {"percentile", 200}}) {
    auto bad = ParseKnotsPpOptions({{key, value}});
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_THAT(bad.error().message,
                HasSubstr("policy knots-pp: option '" + std::string(key) + "'"))
        << bad.error().message;
  }
}

}  // namespace
}  // namespace tessera::policy
