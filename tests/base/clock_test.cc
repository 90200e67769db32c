#include "base/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace tessera {
namespace {

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock c(5);
  EXPECT_EQ(c.Now(), 5);
  c.Advance(2.5);
  EXPECT_EQ(c.Now(), 7.5);
  c.Set(1);
  EXPECT_EQ(c.Now(), 1);
}

TEST(ClockTest, SteadyClockStartsNearZeroAndIsMonotonic) {
  SteadyClock c;
  const double a = c.Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const double b = c.Now();
  EXPECT_GE(a, 0);
  EXPECT_LT(a, 1);
  EXPECT_GE(b - a, 0.002);
}

}  // namespace
}  // namespace tessera
