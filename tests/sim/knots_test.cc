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
// keeps its objective over its execution (80 % of its rate alone; noise is at most 4 %). End to
// end it misses some: pods queue behind whole GPUs, and their queries wait with them.
TEST_F(KnotsTest, UniformNeverCrashesNorMissesAnObjectiveWhileItRuns) {
  const KnotsRun r = Run("whole-gpu");
  EXPECT_EQ(r.oom_kills, 0);
  EXPECT_EQ(r.qos_violations_run, 0);
  EXPECT_GT(r.qos_violations, 0);
  EXPECT_LE(r.qos_violations, scenario_.inference_pods);
  EXPECT_GT(r.jct_s_mean, 0);
}

// The heavily loaded batch-heavy mix (3 × 90 pods in 30 min, about 3.5× what 10 whole GPUs
// serve): Uniform's makespan is at least the work over 10 GPUs, so sharing shortens it well
// beyond the light mixes' 1.2-1.4×. Where the batch jobs' idle time is GPU work on the shared
// front end (`batch=gpu`), jobs run long enough for their bursts to meet, and PP's next-peak
// forecast, which leaves room for them, crashes fewer pods than CBP; its inference pods wait
// less.
TEST_F(KnotsTest, InTheHeavyMixPpCrashesFewerPodsThanCbpAndBothOutrunUniform) {
  scenario_ = *KnotsScenarioOf("batch-heavy", *KnotsReading::Parse("batch=gpu"));
  const KnotsRun uniform = Run("whole-gpu");
  const KnotsRun cbp = Run("knots-cbp");
  const KnotsRun pp = Run("knots-pp");
  EXPECT_LT(pp.oom_kills, cbp.oom_kills);
  EXPECT_LT(pp.inference_jct_s_mean, cbp.inference_jct_s_mean);
  EXPECT_GT(pp.gpu_util_mean, 1.3 * uniform.gpu_util_mean);
  EXPECT_GT(uniform.makespan_s, 1.3 * pp.makespan_s);
}

// The same mix in the default world (`batch=host`): CBP refuses the inference pods whose use
// correlates with a GPU's, and they wait; PP admits them when no memory peak is impending, so
// none of its inference pods misses (issue #38's bar: at least 2× fewer than CBP) and its GPUs
// do more than 1.3× Uniform's SM work.
TEST_F(KnotsTest, InTheHeavyMixPpKeepsTheInferencePodsThatCbpMakesWait) {
  scenario_ = *KnotsScenarioOf("batch-heavy");
  const KnotsRun uniform = Run("whole-gpu");
  const KnotsRun cbp = Run("knots-cbp");
  const KnotsRun pp = Run("knots-pp");
  EXPECT_GT(cbp.qos_violations, 0);
  EXPECT_LE(2 * pp.qos_violations, cbp.qos_violations);
  EXPECT_LT(pp.inference_jct_s_mean, cbp.inference_jct_s_mean);
  EXPECT_GT(pp.gpu_util_mean, 1.3 * uniform.gpu_util_mean);
}

// Between bursts a batch job's GPU idles: its host time (data/apps.yaml `host_s`) loads no
// shared channel, so an inference pod beside batch jobs keeps its objective while it runs. With
// that time as latency-bound GPU work (`batch=gpu`) the batch jobs crowd the MPS front end and
// the djinn/pos pods fall below 80 % of their rate alone.
TEST_F(KnotsTest, ABatchJobsHostTimeSlowsNoInferencePodBesideIt) {
  const AppCatalog sharing = SharingCatalog(catalog_);
  for (const std::string& key : scenario_.batch_apps) {
    EXPECT_EQ(sharing.Find(key)->fixed_s, 0) << key;
    EXPECT_GT(sharing.Find(key)->host_s, 0.9 * 0.05) << key;  // ≥ 90 % of a 50-ms iteration
  }
  scenario_ = *KnotsScenarioOf("batch-heavy");
  const KnotsRun host = Run("knots-pp");
  scenario_ = *KnotsScenarioOf("batch-heavy", *KnotsReading::Parse("batch=gpu"));
  const KnotsRun gpu = Run("knots-pp");
  EXPECT_EQ(host.qos_violations_run, 0);
  EXPECT_GT(gpu.qos_violations_run, 0);
}

// `priority=inference`: the inference pods outrank the batch jobs in every policy's queue. Under
// Uniform, which queues every pod for a whole GPU, they no longer wait behind the batch jobs
// that arrived before them: their time from arrival to end falls by more than half, and fewer
// miss their objective end to end.
TEST_F(KnotsTest, InferencePodsAtAHigherPriorityStopWaitingBehindBatchJobs) {
  scenario_ = *KnotsScenarioOf("batch-heavy");
  const KnotsRun fifo = Run("whole-gpu");
  scenario_ = *KnotsScenarioOf("batch-heavy", *KnotsReading::Parse("priority=inference"));
  const KnotsRun first = Run("whole-gpu");
  EXPECT_LT(first.inference_jct_s_mean, 0.5 * fifo.inference_jct_s_mean);
  EXPECT_LT(first.qos_violations, fifo.qos_violations);
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

// The three mixes over 30 min, in different proportions: 90 pods each under load=even (round
// 3), and the batch-heavy mix 3 × 90 under load=heavy (the default).
TEST_F(KnotsTest, TheThreeMixesSplitTheirPods) {
  const std::map<std::string, std::pair<int, int>> even = {
      {"inference-heavy", {30, 60}}, {"mixed", {60, 30}}, {"batch-heavy", {80, 10}}};
  auto heavy = even;
  heavy["batch-heavy"] = {240, 30};
  ASSERT_EQ(KnotsMixes().size(), even.size());
  for (const auto& [reading, want] : {std::pair{"load=even", even}, std::pair{"", heavy}}) {
    auto r = KnotsReading::Parse(reading);
    ASSERT_TRUE(r) << r.error().message;
    for (std::string_view mix : KnotsMixes()) {
      auto s = KnotsScenarioOf(mix, *r);
      ASSERT_TRUE(s) << s.error().message;
      EXPECT_EQ(s->mix, mix);
      EXPECT_EQ(std::pair(s->batch_jobs, s->inference_pods), want.at(std::string(mix)))
          << mix << " " << reading;
    }
  }
  EXPECT_EQ(KnotsReading::Parse("load=heavy")->batch_heavy_factor, 3);
  auto odd = KnotsReading::Parse("load=huge");
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().message,
            "--reading: 'load=huge' is not one of load=heavy|even, priority=none|inference, "
            "batch=host|gpu (experiment knots)");
  EXPECT_TRUE(KnotsReading::Parse("")->batch_host_time);
  EXPECT_FALSE(KnotsScenarioOf("mixed", *KnotsReading::Parse("batch=gpu"))->batch_host_time);
  EXPECT_FALSE(KnotsReading::Parse("batch=cpu"));
  auto both = KnotsReading::Parse("load=even,priority=inference");
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->batch_heavy_factor, 1);
  EXPECT_EQ(KnotsScenarioOf("mixed", *both)->inference_priority, 1000);
  EXPECT_EQ(KnotsScenarioOf("mixed")->inference_priority, 0);
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
