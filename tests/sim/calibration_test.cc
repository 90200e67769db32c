// Physics against every MIGProfiler measurement (within 5%, noise included; docs/simulator.md,
// "Calibration against MIGProfiler"), and the roofline fitter on data whose answer is known.
#include <gtest/gtest.h>

#include <filesystem>

#include "predict/migprofiler.h"
#include "sim/calibrate.h"
#include "sim/embedded_apps.h"
#include "sim/physics.h"
#include "shared_data.h"

namespace tessera::sim {
namespace {

const model::GpuModelId kA100 = *model::FindGpuModel("A100-40GB");

Measurement At(const char* profile, double qps) {
  return {kA100, *model::GetGpuModel(kA100).FindProfile(profile), 1000, qps};
}

TEST(FitRooflineTest, RecoversAnExactRoofline) {
  // a = 2 ms compute, b = 1 ms memory, c = 3 ms fixed. On 1g.5gb (1/7 SMs, 1/8 bandwidth):
  // 14 + 8 + 3 = 25 ms; 2g (2/7, 2/8): 7 + 4 + 3 = 14 ms; 3g (3/7, 4/8): 4.667 + 2 + 3 ms;
  // 7g: 2 + 1 + 3 = 6 ms.
  const std::vector<Measurement> pts = {At("1g.5gb", 1 / 0.025), At("2g.10gb", 1 / 0.014),
                                        At("3g.20gb", 1 / (0.014 / 3 + 0.005)),
                                        At("7g.40gb", 1 / 0.006)};
  auto fit = FitRoofline(pts, kA100);
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->compute_s, 0.002, 1e-9);
  EXPECT_NEAR(fit->memory_s, 0.001, 1e-9);
  EXPECT_NEAR(fit->fixed_s, 0.003, 1e-9);
  EXPECT_LT(fit->max_relative_error, 1e-9);
}

TEST(FitRooflineTest, ASaturatedAppIsAllFixedCost) {
  // The same throughput on every slice: no share of the GPU helps, t = c = 10 ms.
  auto fit = FitRoofline({At("1g.5gb", 100), At("3g.20gb", 100), At("7g.40gb", 100)}, kA100);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->compute_s, 0, 1e-12);
  EXPECT_NEAR(fit->memory_s, 0, 1e-12);
  EXPECT_NEAR(fit->fixed_s, 0.01, 1e-12);
  EXPECT_FALSE(FitRoofline({}, kA100));
}

TEST(ConfigKeyTest, ParsesAndRejects) {
  auto m = ParseConfigKey("A100-80GB/3g.40gb/100");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->gpu, *model::FindGpuModel("A100-80GB"));
  EXPECT_EQ(model::GetGpuModel(m->gpu).mig_profiles[m->profile].name, "3g.40gb");
  auto mps = ParseConfigKey("V100-32GB/whole/25");
  ASSERT_TRUE(mps);
  EXPECT_EQ(mps->profile, -1);
  EXPECT_EQ(mps->milli, 250);
  EXPECT_FALSE(ParseConfigKey("A100-40GB/9g.99gb/100"));
  EXPECT_FALSE(ParseConfigKey("nope/whole/100"));
  EXPECT_FALSE(ParseConfigKey("A100-40GB/whole/0"));
  EXPECT_FALSE(ParseConfigKey("A100-40GB"));
}

TEST(CalibrationTest, PhysicsReproducesEveryMigProfilerPointWithinFivePercent) {
  const std::string dir = TESSERA_SHARED_DIR "/data/migprofiler";
  TESSERA_NEED_DATA(dir);
  auto matrix = predict::LoadMigProfiler(dir);
  ASSERT_TRUE(matrix) << matrix.error().message;
  auto catalog = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  Physics physics(*catalog, 2026);  // with its default noise
  int checked = 0;
  double worst = 0;
  for (int r = 0; r < matrix->rows(); ++r) {
    for (int c = 0; c < matrix->cols(); ++c) {
      if (!matrix->Has(r, c)) continue;
      const std::string& app = matrix->row_keys()[r];
      auto slot = ParseConfigKey(matrix->col_keys()[c]);
      ASSERT_TRUE(slot);
      const model::GpuModel& gpu = model::GetGpuModel(slot->gpu);
      model::ClusterState cluster;
      ASSERT_TRUE(cluster.AddNode(model::UniformNode(
          "n", slot->gpu, 1, 64000, 1 << 20,
          model::MigLayout{{{slot->profile, gpu.mig_profiles[slot->profile].starts[0]}}})));
      model::Workload w;
      w.id = checked + 1;
      w.app = app;
      w.queries = 1;
      w.gpu.count = 1;
      ASSERT_TRUE(cluster.Place(w, {w.id, 0, {{0, 1000, 0}}}));
      const RunRate rate = physics.Rate(*cluster.Find(w.id), cluster);
      ASSERT_FALSE(rate.fails) << app << " on " << matrix->col_keys()[c] << ": " << rate.failure;
      const double err = std::abs(rate.qps - matrix->Mean(r, c)) / matrix->Mean(r, c);
      EXPECT_LE(err, 0.05) << app << " on " << matrix->col_keys()[c];
      worst = std::max(worst, err);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 296);  // every measured cell (docs/prediction.md: 296 cells)
  RecordProperty("worst_relative_error", std::to_string(worst));
}

}  // namespace
}  // namespace tessera::sim
