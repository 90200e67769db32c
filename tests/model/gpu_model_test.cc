#include "model/gpu_model.h"

#include <gtest/gtest.h>

namespace tessera::model {
namespace {

TEST(GpuCatalogTest, HasEveryModelTheIssueNames) {
  for (const char* name :
       {"V100-32GB", "T4", "A10", "A30-24GB", "A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB",
        "P100", "V100M16", "V100M32", "G1", "G2", "G3"}) {
    EXPECT_TRUE(FindGpuModel(name).has_value()) << name;
  }
  EXPECT_FALSE(FindGpuModel("RTX-9090").has_value());
}

TEST(GpuCatalogTest, AliasesAndCaseResolveToOneModel) {
  EXPECT_EQ(FindGpuModel("a100-sxm4-40gb"), FindGpuModel("A100-40GB"));
  EXPECT_EQ(FindGpuModel("V100M32"), FindGpuModel("V100-32GB"));
  EXPECT_EQ(FindGpuModel("NVIDIA H100 80GB HBM3"), FindGpuModel("H100-80GB"));
}

TEST(GpuCatalogTest, IdsIndexTheCatalog) {
  for (const GpuModel& m : AllGpuModels()) EXPECT_EQ(&GetGpuModel(m.id), &m);
}

TEST(GpuCatalogTest, DataSheetFigures) {
  const GpuModel& a100 = GetGpuModel(*FindGpuModel("A100-40GB"));
  EXPECT_EQ(a100.sms, 108);
  EXPECT_EQ(a100.memory_mib, 40 * 1024);
  EXPECT_DOUBLE_EQ(a100.relative_compute, 1.0);
  const GpuModel& h100 = GetGpuModel(*FindGpuModel("H100-80GB"));
  EXPECT_EQ(h100.sms, 132);
  EXPECT_NEAR(h100.relative_bandwidth, 3350.0 / 1555.0, 1e-12);
  EXPECT_TRUE(GetGpuModel(*FindGpuModel("G2")).opaque);
  EXPECT_FALSE(GetGpuModel(*FindGpuModel("T4")).mig_capable());
}

// MIG User Guide, "Supported MIG Profiles": profile, instance count, memory.
struct ProfileCase {
  const char* model;
  const char* profile;
  int compute_slices;
  int max_count;
  int64_t memory_gib;
};

class MigProfileTableTest : public ::testing::TestWithParam<ProfileCase> {};

TEST_P(MigProfileTableTest, MatchesTheUserGuide) {
  const ProfileCase& c = GetParam();
  const GpuModel& m = GetGpuModel(*FindGpuModel(c.model));
  const std::optional<int> i = m.FindProfile(c.profile);
  ASSERT_TRUE(i.has_value()) << c.profile;
  const MigProfile& p = m.mig_profiles[*i];
  EXPECT_EQ(p.compute_slices, c.compute_slices);
  EXPECT_EQ(p.max_count, c.max_count);
  EXPECT_EQ(p.memory_mib, c.memory_gib * 1024);
}

INSTANTIATE_TEST_SUITE_P(Guide, MigProfileTableTest,
                         ::testing::Values(ProfileCase{"A30-24GB", "1g.6gb", 1, 4, 6},
                                           ProfileCase{"A30-24GB", "1g.6gb+me", 1, 1, 6},
                                           ProfileCase{"A30-24GB", "2g.12gb", 2, 2, 12},
                                           ProfileCase{"A30-24GB", "4g.24gb", 4, 1, 24},
                                           ProfileCase{"A100-40GB", "1g.5gb", 1, 7, 5},
                                           ProfileCase{"A100-40GB", "1g.10gb", 1, 4, 10},
                                           ProfileCase{"A100-40GB", "2g.10gb", 2, 3, 10},
                                           ProfileCase{"A100-40GB", "3g.20gb", 3, 2, 20},
                                           ProfileCase{"A100-40GB", "4g.20gb", 4, 1, 20},
                                           ProfileCase{"A100-40GB", "7g.40gb", 7, 1, 40},
                                           ProfileCase{"A100-80GB", "1g.10gb", 1, 7, 10},
                                           ProfileCase{"A100-80GB", "7g.80gb", 7, 1, 80},
                                           ProfileCase{"H100-80GB", "3g.40gb", 3, 2, 40},
                                           ProfileCase{"H200-141GB", "1g.18gb", 1, 7, 18},
                                           ProfileCase{"H200-141GB", "7g.141gb", 7, 1, 141}));

}  // namespace
}  // namespace tessera::model
