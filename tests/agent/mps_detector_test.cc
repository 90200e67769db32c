#include "agent/mps_detector.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::agent {
namespace {

const MpsSample kTwoClients{.server = true, .clients = 2, .responsive = true};
const MpsSample kNoClients{.server = true, .clients = 0, .responsive = true};
const MpsSample kHung{.server = true, .clients = 2, .responsive = false};
const MpsSample kAbsent{.server = false, .clients = 0};
const MpsSample kNvml{.clients = 2};  // NVML: clients seen, server state and answers unknown

struct Step {
  double t;
  std::optional<MpsSample> mps;
  std::optional<double> activity;
  bool stuck;    // after this sample
  int streak;    // suspect samples in a row
  bool changed;  // Observe's answer
};

struct Case {
  const char* name;
  std::vector<Step> steps;
};

// min_samples 3, min_span_s 20: stuck at the third suspect sample in a row if the run then
// spans 20 s, else at the first sample that makes it span 20 s.
TEST(MpsStuckDetectorTest, TransitionsFollowTheRunOfSuspectSamples) {
  const Case cases[] = {
      {"clients without activity: stuck at the 3rd sample, 20 s after the 1st; activity clears",
       {{0, kTwoClients, 0.0, false, 1, false},
        {10, kTwoClients, 0.0, false, 2, false},
        {20, kTwoClients, 0.0, true, 3, true},
        {30, kTwoClients, 0.0, true, 4, false},
        {40, kTwoClients, 0.4, false, 0, true}}},
      {"1 s samples: three suspect samples span only 2 s; stuck at t = 20, the 21st",
       {{0, kTwoClients, 0.0, false, 1, false},
        {1, kTwoClients, 0.0, false, 2, false},
        {2, kTwoClients, 0.0, false, 3, false},
        {19, kTwoClients, 0.0, false, 4, false},
        {20, kTwoClients, 0.0, true, 5, true}}},
      {"30 s samples: two span 30 s but are fewer than 3; stuck at the 3rd, t = 60",
       {{0, kHung, std::nullopt, false, 1, false},
        {30, kHung, std::nullopt, false, 2, false},
        {60, kHung, std::nullopt, true, 3, true}}},
      {"a server that does not answer is suspect with or without clients and activity",
       {{0, MpsSample{.server = true, .clients = 0, .responsive = false}, 0.9, false, 1, false},
        {10, kHung, 0.5, false, 2, false},
        {20, kHung, std::nullopt, true, 3, true},
        {25, kTwoClients, std::nullopt, false, 0, true}}},
      {"unknown activity is no evidence and restarts the run at t = 20: stuck at t = 40, not 20",
       {{0, kTwoClients, 0.0, false, 1, false},
        {10, kTwoClients, 0.0, false, 2, false},
        {15, kTwoClients, std::nullopt, false, 0, false},
        {20, kTwoClients, 0.0, false, 1, false},
        {30, kTwoClients, 0.0, false, 2, false},
        {40, kTwoClients, 0.0, true, 3, true}}},
      {"an idle server without clients, no server, no reading: never suspect",
       {{0, kNoClients, 0.0, false, 0, false},
        {100, kAbsent, 0.0, false, 0, false},
        {200, std::nullopt, 0.0, false, 0, false},
        {300, kNoClients, 0.0, false, 0, false}}},
      {"NVML's reading (clients only) feeds the activity rule",
       {{0, kNvml, 0.0, false, 1, false},
        {10, kNvml, 0.0, false, 2, false},
        {20, kNvml, 0.0, true, 3, true},
        {30, std::nullopt, std::nullopt, false, 0, true}}},
  };
  for (const Case& c : cases) {
    MpsStuckDetector d({.min_samples = 3, .min_span_s = 20});
    for (const Step& s : c.steps) {
      const bool changed = d.Observe(s.t, s.mps, s.activity);
      EXPECT_EQ(d.stuck(), s.stuck) << c.name << " at t = " << s.t;
      EXPECT_EQ(d.streak(), s.streak) << c.name << " at t = " << s.t;
      EXPECT_EQ(changed, s.changed) << c.name << " at t = " << s.t;
    }
  }
}

TEST(MpsStuckDetectorTest, SaysWhyAndHowLong) {
  MpsStuckDetector d({.min_samples = 2, .min_span_s = 5});
  d.Observe(100, kTwoClients, 0.0);
  d.Observe(107.5, kTwoClients, 0.0);
  EXPECT_TRUE(d.stuck());
  EXPECT_EQ(d.reason(), "2 client(s) attached and no GPU activity");
  EXPECT_DOUBLE_EQ(d.streak_s(), 7.5);
  d.Observe(108, kHung, 0.0);
  EXPECT_EQ(d.reason(), "the MPS server did not answer");
  EXPECT_DOUBLE_EQ(d.streak_s(), 8);
  EXPECT_EQ(d.last(), kHung);
  d.Observe(109, kNoClients, 0.0);
  EXPECT_EQ(d.reason(), "");
  EXPECT_EQ(d.streak_s(), 0);
}

// One sample is enough when asked for, once the span is 0: min_samples 1, min_span_s 0.
TEST(MpsStuckDetectorTest, TheSmallestThresholdsAlarmOnTheFirstSuspectSample) {
  MpsStuckDetector d({.min_samples = 1, .min_span_s = 0});
  EXPECT_TRUE(d.Observe(0, kHung, std::nullopt));
  EXPECT_TRUE(d.stuck());
}

TEST(MpsStuckDetectorDeathTest, OutOfRangeOptionsAbort) {
  EXPECT_DEATH(MpsStuckDetector({.min_samples = 0, .min_span_s = 1}), "out of range");
  EXPECT_DEATH(MpsStuckDetector({.min_samples = 1, .min_span_s = -1}), "out of range");
}

}  // namespace
}  // namespace tessera::agent
