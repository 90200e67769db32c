#include "sim/knots.h"

#include <gtest/gtest.h>

#include <map>

#include "sim/embedded_apps.h"

namespace tessera::sim {
namespace {

class KnotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
    ASSERT_TRUE(c) << c.error().message;
    catalog_ = std::move(*c);
  }
  KnotsRun Run(std::string_view policy, uint64_t seed = 1) {
    auto r = RunKnots(policy, scenario_, seed, catalog_);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : KnotsRun{};
  }
  AppCatalog catalog_;
  KnotsScenario scenario_;
};

// 004's batch workloads peak far above their median (SM 90×, bandwidth 400×) for ~6 % of the
// time: data/apps.yaml's Rodinia-like apps, base 0.01 SM and 0.002 bandwidth.
TEST_F(KnotsTest, TheBatchAppsPeakAsSeed004Measured) {
  const AppCatalog sharing = SharingCatalog(catalog_);
  for (const std::string& key : scenario_.batch_apps) {
    const AppSpec* app = sharing.Find(key);
    ASSERT_NE(app, nullptr) << key;
    ASSERT_TRUE(app->usage.burst.has_value()) << key;
    const UsageBurst& b = *app->usage.burst;
    EXPECT_NEAR(b.duration_s / b.period_s, 0.06, 1e-9) << key;
    const UsagePoint base = app->usage.phases.front().use;
    EXPECT_GE(b.peak.sm / base.sm, 50) << key;
    EXPECT_GE(b.peak.bandwidth / base.bandwidth, 200) << key;
    // A burst outgrows what the pod asks for: the capacity violations of 004's Res-Ag.
    EXPECT_GT(b.peak.memory_mib, static_cast<double>(app->footprint_mib)) << key;
  }
}

// Uniform: a GPU per pod. Nothing shares, so nothing runs out of memory and every inference pod
// keeps its objective (80 % of its rate alone; noise is at most 4 %).
TEST_F(KnotsTest, UniformNeverCrashesNorMissesAnObjective) {
  const KnotsRun r = Run("whole-gpu");
  EXPECT_EQ(r.oom_kills, 0);
  EXPECT_EQ(r.qos_violations, 0);
  EXPECT_GT(r.jct_s_mean, 0);
}

// Res-Ag packs by request, and the bursts exceed the requests: it crashes pods. CBP and PP size
// by use and keep correlated or peaking pods apart: fewer crashes and violations, and batch jobs
// finish sooner than under Uniform, which queues them behind whole GPUs.
TEST_F(KnotsTest, ResAgCrashesAndTheUsageAwareSchemesBeatUniform) {
  const KnotsRun uniform = Run("whole-gpu");
  const KnotsRun resag = Run("knots-resag");
  EXPECT_GT(resag.oom_kills, 0);
  for (const char* policy : {"knots-cbp", "knots-pp"}) {
    const KnotsRun r = Run(policy);
    EXPECT_LT(r.oom_kills, resag.oom_kills) << policy;
    EXPECT_LE(r.qos_violations, resag.qos_violations) << policy;
    EXPECT_LT(r.jct_s_mean, uniform.jct_s_mean) << policy;
  }
  const KnotsRun again = Run("knots-resag");
  EXPECT_EQ(again.jct_s_mean, resag.jct_s_mean);
  EXPECT_EQ(again.energy_j, resag.energy_j);
}

// The three mixes: the same 90 pods over 30 min, in different proportions.
TEST_F(KnotsTest, TheThreeMixesSplitNinetyPods) {
  const std::map<std::string, std::pair<int, int>> want = {
      {"inference-heavy", {30, 60}}, {"mixed", {60, 30}}, {"batch-heavy", {80, 10}}};
  ASSERT_EQ(KnotsMixes().size(), want.size());
  for (std::string_view mix : KnotsMixes()) {
    auto s = KnotsScenarioOf(mix);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->mix, mix);
    EXPECT_EQ(std::pair(s->batch_jobs, s->inference_pods), want.at(std::string(mix))) << mix;
  }
  auto bad = KnotsScenarioOf("hpc");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "experiment knots: unknown mix 'hpc' (inference-heavy, mixed or batch-heavy)");
  // A run carries its mix.
  scenario_ = *KnotsScenarioOf("batch-heavy");
  EXPECT_EQ(Run("whole-gpu").mix, "batch-heavy");
}

TEST_F(KnotsTest, BadInputIsOneError) {
  EXPECT_FALSE(RunKnots("no-such-policy", scenario_, 1, catalog_));
  scenario_.gpu = "Z80";
  EXPECT_FALSE(RunKnots("knots-pp", scenario_, 1, catalog_));
  scenario_.gpu = "V100-16GB";
  scenario_.inference_apps = {"djinn/nothing"};
  auto r = RunKnots("knots-pp", scenario_, 1, catalog_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("djinn/nothing"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
