#include "sim/contention_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/cluster.h"
#include "predict/interference.h"
#include "predict/matrix.h"

namespace tessera::sim {
namespace {

// A campaign directory written by the test: profile.csv and interference.csv.
class ContentionCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-contention-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

// One application that no MPS share speeds up: 100 samples/s at 100, 50 and 25 %, so
// t(p) = a / p + b fits a = 0, b = 10 ms. Beside itself at 50/50 MPS it was measured at 90
// (10 % lost). The model (noise off), the measured 100/s at 50 % keeping 95 % of its time as
// the fixed part (Physics: fixed = min(b, 0.95 t) = 9.5 ms, SM-bound 0.5 ms):
//   the aggressor's fixed duty 9.5 ms × 100/s = 0.95, rho = 0.49 × 0.95 = 0.4655,
//   fixed 9.5 / (1 − 0.4655) = 17.774 ms; SM duty 0.05, SM-bound 0.5 × (1 + 1.5 × 0.05)
//   = 0.5375 ms; t = 18.311 ms: 54.61 samples/s, 39.3 % below the measured 90.
TEST_F(ContentionCheckTest, ThesisConstantsByHandAndAFitThatMatches) {
  Write("profile.csv",
        "row,column,value,count,variance\n"
        "x,H200-141GB/whole/100,100,5,0\n"
        "x,H200-141GB/whole/50,100,5,0\n"
        "x,H200-141GB/whole/25,100,5,0\n");
  Write("interference.csv",
        "kind,victim,aggressor,value,count,variance\n"
        "mps,x,x,0.1,10,0\n");
  auto check = CheckContention(dir_.string(), ConstantPart::kFixed);
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_EQ(check->gpu, "H200-141GB");
  ASSERT_EQ(check->rooflines.size(), 1u);
  EXPECT_NEAR(check->rooflines[0].a, 0, 1e-12);
  EXPECT_NEAR(check->rooflines[0].b, 0.01, 1e-12);
  ASSERT_EQ(check->kinds.size(), 1u);
  const ContentionKindCheck& mps = check->kinds[0];
  ASSERT_EQ(mps.pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(mps.pairs[0].measured_qps, 90);
  EXPECT_NEAR(mps.pairs[0].predicted_qps, 54.61, 0.01);
  EXPECT_NEAR(mps.default_median, (90 - 54.61) / 90, 1e-3);
  // One pair: some constants reproduce it (front_kappa near 0.11 with no SM channel: 9.5 /
  // (1 − 0.95 κ) + 0.5 = 11.11 ms); the grid's steps of 0.01 leave under 1 %.
  EXPECT_LT(mps.all.train_median, 0.01);
  EXPECT_LT(mps.fitted_pairs[0].error(), 0.01);
}

// Time-slicing (Physics's kTimeSlice): a guaranteed client's kernels wait out the other's
// slices. Reading b as fixed time that is engine-active (fixed_active 1), each stretches by
// 1 + the other's active fraction (≈ 1): about half the alone rate.
TEST_F(ContentionCheckTest, TimeSlicedPairsUseTheTimeSliceModel) {
  Write("profile.csv",
        "row,column,value,count,variance\n"
        "x,H200-141GB/whole/100,100,5,0\n"
        "x,H200-141GB/whole/50,100,5,0\n");
  Write("interference.csv",
        "kind,victim,aggressor,value,count,variance\n"
        "timeslice,x,x,0.5,10,0\n");
  auto check = CheckContention(dir_.string(), ConstantPart::kFixed);
  ASSERT_TRUE(check) << check.error().message;
  ASSERT_EQ(check->kinds.size(), 1u);
  EXPECT_EQ(check->kinds[0].kind, "timeslice");
  EXPECT_NEAR(check->kinds[0].pairs[0].predicted_qps, 50, 0.5);
}

TEST_F(ContentionCheckTest, BadCampaignsAreOneErrorNamingTheFile) {
  Write("profile.csv",
        "row,column,value,count,variance\n"
        "x,H200-141GB/whole/100,100,5,0\n"
        "x,A100-40GB/whole/50,100,5,0\n");
  Write("interference.csv", "kind,victim,aggressor,value,count,variance\nmps,x,x,0.1,10,0\n");
  auto two = CheckContention(dir_.string(), ConstantPart::kFixed);
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("two GPU models"), std::string::npos) << two.error().message;

  Write("profile.csv", "row,column,value,count,variance\nx,H200-141GB/whole/100,100,5,0\n");
  Write("interference.csv", "kind,victim,aggressor,value,count,variance\nmps,x,y,0.1,10,0\n");
  auto missing = CheckContention(dir_.string(), ConstantPart::kFixed);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("interference.csv"), std::string::npos);
  EXPECT_NE(missing.error().message.find("no alone rate at 50 %"), std::string::npos)
      << missing.error().message;

  std::filesystem::remove(dir_ / "profile.csv");
  auto none = CheckContention(dir_.string(), ConstantPart::kFixed);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("profile.csv"), std::string::npos) << none.error().message;
}

// The H200 campaign in data/ (docs/simulator.md, "Measured on an H200"): the thesis's V100
// constants miss its pairs by a median of over 30 %; constants fitted on one half of the pairs
// predict the other half within 10 % (median), whichever way the constant part is read.
TEST(ContentionCheckH200, FittedConstantsPredictHeldOutPairsWithinTenPercent) {
  for (ConstantPart part : {ConstantPart::kFixed, ConstantPart::kMemory}) {
    auto check = CheckContention(std::string(TESSERA_SOURCE_DIR) + "/data/h200-campaign", part);
    ASSERT_TRUE(check) << check.error().message;
    ASSERT_FALSE(check->kinds.empty());
    const ContentionKindCheck& mps = check->kinds[0];
    ASSERT_EQ(mps.kind, "mps");
    EXPECT_EQ(mps.pairs.size(), 32u);  // 2 batch sizes × 4 models: 16 ordered pairs each
    EXPECT_GT(mps.default_median, 0.3);
    EXPECT_LT(mps.held_out_median, 0.10);
  }
}

// The fitted constants apply to their GPU model only: the thesis's V100 keeps its own.
TEST(MeasuredMpsConstants, ApplyOnlyToTheirGpuModel) {
  auto catalog = ParseAppCatalog(R"(
reference_gpu: A100-40GB
apps:
  - key: x
    compute_s: 0.004
    memory_s: 0.002
    fixed_s: 0.004
    footprint_mib: 1000
)",
                                 "test.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  auto rate = [&](const PhysicsOptions& o, const char* gpu) {
    model::ClusterState c;
    EXPECT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel(gpu), 1, 64000, 1 << 20)));
    model::Workload w;
    w.app = "x";
    w.queries = 10;
    w.gpu.count = 1;
    w.id = 1;
    EXPECT_TRUE(c.Place(w, {1, 0, {{0, 500, 0}}}));
    w.id = 2;
    EXPECT_TRUE(c.Place(w, {2, 0, {{0, 500, 0}}}));
    return Physics(*catalog, 1, o).Rate(*c.Find(1), c).qps;
  };
  PhysicsOptions plain{.noise_sd = 0};
  PhysicsOptions measured = plain;
  measured.mps_by_gpu = MeasuredMpsConstants();
  EXPECT_DOUBLE_EQ(rate(measured, "V100-32GB"), rate(plain, "V100-32GB"));
  EXPECT_GT(rate(measured, "H200-141GB"), rate(plain, "H200-141GB"));  // less contention
  PhysicsOptions none = plain;
  none.mps_by_gpu = {{"H200-141GB", {.front_kappa = 0, .sm_kappa = 0}}};
  PhysicsOptions off = plain;
  off.mps_front_kappa = off.mps_sm_kappa = 0;
  EXPECT_DOUBLE_EQ(rate(none, "H200-141GB"), rate(off, "H200-141GB"));
}

}  // namespace
}  // namespace tessera::sim

namespace tessera::sim {
namespace {

// The H200 campaign's shape and plausibility (data/h200-campaign/SOURCE.md): 8 applications ×
// 3 whole-GPU settings of 5 windows each; batching raises every model's throughput on the whole
// GPU; no model is much faster on a share than on the whole GPU (at most 20 %, the noise of
// 0.4 s windows at batch 1); interference losses are fractions, 32 cells of each kind.
TEST(H200Campaign, ShapeAndPlausibility) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/data/h200-campaign/";
  auto profile = predict::SparseMatrix::LoadCsv(dir + "profile.csv");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->rows(), 8);
  EXPECT_EQ(profile->cols(), 3);
  EXPECT_EQ(profile->ObservedCount(), 24);
  auto qps = [&](const std::string& app, int pct) {
    const auto r = profile->FindRow(app);
    const auto c = profile->FindCol("H200-141GB/whole/" + std::to_string(pct));
    EXPECT_TRUE(r && c) << app << " " << pct;
    EXPECT_EQ(profile->Count(*r, *c), 5);
    return profile->Mean(*r, *c);
  };
  for (const std::string model : {"resnet50", "mobilenet_v2", "ssd", "bert-base"}) {
    const std::string seq = model == "bert-base" ? "/seq128" : "";
    const std::string bs1 = model + "/bs1" + seq, bs8 = model + "/bs8" + seq;
    EXPECT_GT(qps(bs8, 100), qps(bs1, 100)) << model;
    for (const std::string& app : {bs1, bs8}) {
      EXPECT_GT(qps(app, 100), 1) << app;
      EXPECT_LT(qps(app, 100), 100000) << app;
      for (int pct : {50, 25}) EXPECT_LT(qps(app, pct), 1.2 * qps(app, 100)) << app << pct;
    }
  }
  auto pairs = predict::InterferenceMatrices::LoadCsv(dir + "interference.csv");
  ASSERT_TRUE(pairs) << pairs.error().message;
  for (const char* kind : {"mps", "timeslice"}) {
    const predict::SparseMatrix* m = pairs->Find(kind);
    ASSERT_NE(m, nullptr) << kind;
    EXPECT_EQ(m->ObservedCount(), 32) << kind;
    for (int r = 0; r < m->rows(); ++r) {
      for (int c = 0; c < m->cols(); ++c) {
        if (!m->Has(r, c)) continue;
        EXPECT_GE(m->Mean(r, c), 0);
        EXPECT_LE(m->Mean(r, c), 1);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::sim
