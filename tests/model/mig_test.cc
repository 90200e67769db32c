#include "model/mig.h"

#include <gtest/gtest.h>

namespace tessera::model {
namespace {

const GpuModel& M(const char* name) { return GetGpuModel(*FindGpuModel(name)); }

MigLayout L(const GpuModel& m, const char* text) {
  auto layout = ParseLayout(m, text);
  EXPECT_TRUE(layout.has_value()) << text << ": " << (layout ? "" : layout.error().message);
  return layout.value_or(MigLayout{});
}

TEST(MigLayoutTest, A30HasTheFiveConfigurationsOfTheGuide) {
  // A30: 4 memory slices; 1g at {0,1,2,3}, 2g at {0,2}, 4g at {0}. Maximal layouts by hand:
  // 4g | 2g+2g | 2g@0+1g@2+1g@3 | 1g@0+1g@1+2g@2 | 1g x4.
  const GpuModel& a30 = M("A30-24GB");
  const std::vector<MigLayout> got = ValidLayouts(a30);
  std::vector<MigLayout> want = {
      L(a30, "4g.24gb@0"), L(a30, "2g.12gb@0,2g.12gb@2"), L(a30, "2g.12gb@0,1g.6gb@2,1g.6gb@3"),
      L(a30, "1g.6gb@0,1g.6gb@1,2g.12gb@2"), L(a30, "1g.6gb@0,1g.6gb@1,1g.6gb@2,1g.6gb@3")};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  // Two of them hold the same profiles (2g+1g+1g), so four distinct profile mixes.
  EXPECT_EQ(DistinctByProfiles(got).size(), 4u);
}

TEST(MigLayoutTest, A100WithoutOneGTenGbGivesTheGuidesNineteen) {
  // The guide's A100 figure (drivers before 1g.10gb) shows 19 configurations.
  const GpuModel& a100 = M("A100-40GB");
  std::vector<int> classic;
  for (const char* p : {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}) {
    classic.push_back(*a100.FindProfile(p));
  }
  const std::vector<MigLayout> layouts = ValidLayouts(a100, classic);
  EXPECT_EQ(layouts.size(), 19u);
  // By profile mix: 7 | 4+3 | 4+2+1 | 4+1+1+1 | 3+3 | 3+2+1 | 3+1+1+1 | 2+2+3 | 2+1+1+3
  // (two placements of 2,1,1 before a 3g) ... 14 distinct mixes in all.
  EXPECT_EQ(DistinctByProfiles(layouts).size(), 14u);
}

TEST(MigLayoutTest, CountsPerModelWithEveryPlainProfile) {
  // With the double-memory 1g profile (1g.10gb on A100-40GB, placements {0,2,4,6}) the 8-slice
  // parts have 78 maximal placed layouts (an independent enumeration agrees); the tables of
  // A100-80GB, H100 and H200 differ only in memory sizes, so their counts are equal.
  EXPECT_EQ(ValidLayouts(M("A100-40GB")).size(), 78u);
  EXPECT_EQ(ValidLayouts(M("A100-80GB")).size(), 78u);
  EXPECT_EQ(ValidLayouts(M("H100-80GB")).size(), 78u);
  EXPECT_EQ(ValidLayouts(M("H200-141GB")).size(), 78u);
  EXPECT_EQ(ValidLayouts(M("A30-24GB")).size(), 5u);
  for (const char* name : {"V100-32GB", "T4", "A10", "P100", "G1"}) {
    EXPECT_TRUE(ValidLayouts(M(name)).empty()) << name;
  }
}

TEST(MigLayoutTest, EveryEnumeratedLayoutValidatesAndIsFull) {
  for (const GpuModel& m : AllGpuModels()) {
    for (const MigLayout& l : ValidLayouts(m)) {
      EXPECT_TRUE(ValidateLayout(m, l).has_value()) << LayoutToString(m, l);
      // Round trip through the text form.
      EXPECT_EQ(L(m, LayoutToString(m, l).c_str()), l);
    }
  }
}

struct RuleCase {
  const char* model;
  const char* layout;
  bool valid;
};

class MigRuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(MigRuleTest, AcceptsExactlyWhatNvidiaSmiAccepts) {
  const RuleCase& c = GetParam();
  const GpuModel& m = M(c.model);
  MigLayout layout;
  // Built by hand (not ParseLayout) so invalid layouts reach ValidateLayout.
  std::string text = c.layout;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t at = item.find('@');
    layout.instances.push_back(
        {*m.FindProfile(item.substr(0, at)), std::stoi(item.substr(at + 1))});
    pos = end + 1;
  }
  EXPECT_EQ(ValidateLayout(m, layout).has_value(), c.valid) << c.layout;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, MigRuleTest,
    ::testing::Values(RuleCase{"A100-40GB", "4g.20gb@0,3g.20gb@4", true},
                      RuleCase{"A100-40GB", "3g.20gb@0,3g.20gb@4", true},
                      RuleCase{"A100-40GB", "1g.5gb@6", true},    // a partial layout is fine
                      RuleCase{"A100-40GB", "1g.5gb@7", false},   // 1g cannot start at slice 7
                      RuleCase{"A100-40GB", "2g.10gb@1", false},  // 2g starts at 0, 2 or 4
                      RuleCase{"A100-40GB", "3g.20gb@2", false},  // 3g starts at 0 or 4
                      RuleCase{"A100-40GB", "4g.20gb@0,2g.10gb@2", false},  // overlaps slices 2-3
                      RuleCase{"A100-40GB", "7g.40gb@0,1g.5gb@0", false},
                      RuleCase{"A100-40GB", "1g.5gb+me@0,1g.5gb+me@1", false},  // one +me per GPU
                      RuleCase{"A100-40GB", "1g.10gb@0,1g.10gb@2,1g.10gb@4,1g.10gb@6", true},
                      RuleCase{"A30-24GB", "1g.6gb+me@0,2g.12gb+me@2", false},
                      RuleCase{"A30-24GB", "2g.12gb@2,1g.6gb@0,1g.6gb@1", true},
                      RuleCase{"A30-24GB", "4g.24gb@0,1g.6gb@3", false}));

TEST(MigLayoutTest, ParseFillsStartsAndNamesErrors) {
  const GpuModel& a100 = M("A100-40GB");
  EXPECT_EQ(L(a100, "3g.20gb,3g.20gb"), L(a100, "3g.20gb@0,3g.20gb@4"));
  auto bad = ParseLayout(a100, "3g.20gb,9g.99gb");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("9g.99gb"), std::string::npos);
  EXPECT_FALSE(ParseLayout(a100, "4g.20gb,4g.20gb").has_value());
  EXPECT_FALSE(ParseLayout(M("T4"), "1g.5gb").has_value());
}

}  // namespace
}  // namespace tessera::model
