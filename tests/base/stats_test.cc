#include "base/stats.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(StatsTest, QuantilesInterpolateBetweenClosestRanks) {
  // Sorted 1, 2, 3, 4, 10: the median is the third value; p90 sits at rank 0.9 × 4 = 3.6,
  // 4 + 0.6 × (10 − 4) = 7.6; the ends are the extremes.
  const std::vector<double> v = {10, 2, 4, 1, 3};
  EXPECT_DOUBLE_EQ(Median(v), 3.0);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.9), 7.6);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(Quantile(v, 1.0), 10.0);
  // An even count: the median is the mean of the two middle values, (2 + 3) / 2.
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7.0);
}

}  // namespace
}  // namespace tessera
