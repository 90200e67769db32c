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

// The 1-s forecast alone (peak_window_s 0): the next-peak forecast would read the alternation
// as a peak recurring every 2 samples (r_2 = 0.667) and admit the pod.
TEST(KnotsPpTest, NoPositiveAutocorrelationNoForecastAndThePodWaits) {
  KnotsScene s;
  s.Build();
  s.FeedGpu0(kAlternating, {}, kInPhase);  // bandwidth in phase: CBP refuses
  KnotsPp p(&s.t, {.peak_window_s = 0});
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

// A peak of 10 (over 0) every 10 samples, at 9, 19 and 29 of 30: mean 1, Σ(Y − Ȳ)² = 3·81 + 27 =
// 270. r_1 = (5 pairs across a burst edge · (−9) + 24 · 1)/270 = −21/270 ≤ 0, the fall; r_10 = (2 ·
// 81 + 18 · 1)/270 = 2/3, and every other lag up to 15 has more edge pairs (−9 each) than ones. Its
// excess over the last 10 samples: 10 − median 0.
TEST(RecurringPeakTest, TheIntervalIsTheBestLagAfterTheFall) {
  std::vector<double> v(30, 0);
  for (size_t i : {9, 19, 29}) v[i] = 10;
  const std::optional<RecurringPeak> p = RecurringPeakOf(v);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->interval, 10);
  EXPECT_NEAR(p->r, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(p->excess, 10);
  // One burst does not recur: mean 1/3, every r_k (k ≥ 1) has numerator −k/9 < 0.
  std::vector<double> once(30, 0);
  once[29] = 10;
  EXPECT_FALSE(RecurringPeakOf(once).has_value());
  EXPECT_FALSE(RecurringPeakOf(std::vector<double>(30, 5)).has_value());     // flat
  EXPECT_FALSE(RecurringPeakOf(std::vector<double>{0, 10, 0}).has_value());  // too short
}

// GPU 0 holds 20,000 MiB with bursts to 26,000 at t = 9, 29, 49 of 0..59 (its newest, t = 59,
// at 20,000). Scaled from RecurringPeakTest: deviations 5,700 and −300, r_20 = (2·5700² +
// 38·300²)/(3·5700² + 57·300²) = 68.4/102.6 = 0.667; excess 6,000. The last 5 s are flat, so
// the 1-s AR(1) forecasts nothing and CBP admits b (size 5,220 ≤ 12,768 free). At the next
// peak GPU 0 holds 20,000 + 6,000: 6,768 MiB free. A request of 7,000 is steered away; 6,500
// stays. Without the next-peak forecast (peak_window_s 0) CBP's word stands.
TEST(KnotsPpTest, SteersAPodThatWouldNotFitUnderTheGpusNextRecurringPeak) {
  KnotsScene s;
  s.Build();
  std::vector<double> memory(60, 20000);
  for (size_t i : {9, 29, 49}) memory[i] = 26000;
  testing::FeedMemory(s.t, s.c.gpu(0).uuid, 0, memory);
  KnotsPp p(&s.t);
  const KnotsCbp::Verdict away = p.Judge(MemoryPod(1, 7000, "b"), 0, s.c);
  EXPECT_EQ(away.by, KnotsCbp::Check::kNone) << away.detail;
  EXPECT_THAT(away.detail, HasSubstr(": in by CBP")) << away.detail;
  EXPECT_THAT(away.detail, HasSubstr("PP: a flat window has no r_k: no forecast")) << away.detail;
  EXPECT_THAT(away.detail,
              HasSubstr("PP: a memory peak recurs every 20 samples (r 0.667): 20000 + 6000 → "
                        "26000 MiB + 0 not yet seen → 6768 MiB free at the next peak < 7000 "
                        "requested: a peak is impending, PP steers it away"))
      << away.detail;
  EXPECT_EQ(p.Judge(MemoryPod(1, 6500, "b"), 0, s.c).by, KnotsCbp::Check::kCbp);
  KnotsPp one_second(&s.t, {.peak_window_s = 0});
  EXPECT_EQ(one_second.Judge(MemoryPod(1, 7000, "b"), 0, s.c).by, KnotsCbp::Check::kCbp);
}

TEST(KnotsPpOptionsTest, OptionsAreCheckedAndNamed) {
  auto o = ParseKnotsPpOptions(
      {{"lag", 2}, {"horizon_s", 3}, {"window_s", 10}, {"steer", false}, {"peak_window_s", 0}});
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_FALSE(o->steer);
  EXPECT_EQ(o->peak_window_s, 0);
  EXPECT_EQ(ParseKnotsPpOptions({})->peak_window_s, 120);
  EXPECT_EQ(o->lag, 2);
  EXPECT_EQ(o->horizon_s, 3);
  EXPECT_EQ(o->cbp.window_s, 10);
  for (const auto& [key, value] : {std::pair<const char*, double>{"lag", 3},
                                   {"horizon_s", 0},
                                   {"percentile", 200},
                                   {"peak_window_s", 2}}) {
    auto bad = ParseKnotsPpOptions({{key, value}});
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_THAT(bad.error().message,
                HasSubstr("policy knots-pp: option '" + std::string(key) + "'"))
        << bad.error().message;
  }
}

}  // namespace
}  // namespace tessera::policy
