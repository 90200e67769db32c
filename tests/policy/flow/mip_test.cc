// flow::SolveMinimum: small integer programs whose optimum is worked out by hand.
#include "policy/flow/mip.h"

#include <gtest/gtest.h>

#include <limits>

namespace tessera::flow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// min 3a + 5b  s.t. 2a + 4b ≥ 7, a, b ≥ 0 integer. The LP optimum is b = 1.75 (cost 8.75);
// the integer points: b = 2 costs 10, a = 2, b = 1 costs 11, a = 4 costs 12.
TEST(MipTest, IntegerOptimumIsNotTheRoundedRelaxation) {
  IntegerProgram p;
  p.cost = {3, 5};
  p.rows = {{{{0, 2}, {1, 4}}, 7, kInf}};
  const MipResult r = SolveMinimum(p);
  ASSERT_EQ(r.status, Status::kOptimal) << r.error;
  EXPECT_DOUBLE_EQ(r.objective, 10);
  EXPECT_TRUE(r.proven);
  EXPECT_DOUBLE_EQ(r.bound, 10);  // proven: nothing cheaper
  EXPECT_DOUBLE_EQ(r.values[0], 0);
  EXPECT_DOUBLE_EQ(r.values[1], 2);
}

// The same with b bounded by 1 and a continuous: a = 1.5, b = 1, cost 9.5.
TEST(MipTest, BoundsAndContinuousVariables) {
  IntegerProgram p;
  p.cost = {3, 5};
  p.upper_bound = {kInf, 1};
  p.integer = {false, true};
  p.rows = {{{{0, 2}, {1, 4}}, 7, kInf}};
  const MipResult r = SolveMinimum(p);
  ASSERT_EQ(r.status, Status::kOptimal) << r.error;
  EXPECT_NEAR(r.objective, 9.5, 1e-9);
  EXPECT_NEAR(r.values[0], 1.5, 1e-9);
}

TEST(MipTest, InfeasibleAndInvalidPrograms) {
  IntegerProgram p;
  p.cost = {1};
  p.upper_bound = {1};
  p.rows = {{{{0, 1}}, 2, kInf}};
  EXPECT_EQ(SolveMinimum(p).status, Status::kInfeasible);

  p.rows = {{{{3, 1}}, 0, 1}};
  const MipResult bad = SolveMinimum(p);
  EXPECT_EQ(bad.status, Status::kInvalidInput);
  EXPECT_EQ(bad.error, "row 0: variable 3 out of range");
}

}  // namespace
}  // namespace tessera::flow
