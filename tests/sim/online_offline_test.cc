#include "sim/online_offline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/cluster.h"
#include "model/gpu_model.h"
#include "sim/embedded_apps.h"

namespace tessera::sim {
namespace {

// The latency model by hand: M/M/1, a request's sojourn host + Exp(μ − λ).
TEST(LatencyModelTest, MeanAndQuantileOfOneQueue) {
  const QueueObservation q{.weight = 1, .lambda = 50, .mu = 100};
  EXPECT_DOUBLE_EQ(SojournRate(q), 50);
  EXPECT_DOUBLE_EQ(MeanLatency(std::span(&q, 1), 0.010), 0.010 + 1.0 / 50);
  // P(T > host + x) = e^{−50 x} = 0.01: x = ln(100) / 50.
  EXPECT_NEAR(LatencyQuantile(std::span(&q, 1), 0.010, 0.99), 0.010 + std::log(100.0) / 50, 1e-9);
}

TEST(LatencyModelTest, TheDayWeighsQueuesByTheirRequestsAndCapsOverload) {
  // 3 requests at rate 50 − 20 = 30/s, 1 at 100 − 90 = 10/s: mean (3/30 + 1/10) / 4 = 0.05 s.
  const std::vector<QueueObservation> day = {{.weight = 3, .lambda = 20, .mu = 50},
                                             {.weight = 1, .lambda = 90, .mu = 100}};
  EXPECT_NEAR(MeanLatency(day, 0), 0.05, 1e-12);
  // The p99 solves (3 e^{−30x} + e^{−10x}) / 4 = 0.01; check the tail there.
  const double x = LatencyQuantile(day, 0, 0.99);
  EXPECT_NEAR((3 * std::exp(-30 * x) + std::exp(-10 * x)) / 4, 0.01, 1e-9);
  // λ ≥ μ: counted at ρ = 0.99, a sojourn rate of μ / 100.
  const QueueObservation over{.weight = 1, .lambda = 120, .mu = 100};
  EXPECT_DOUBLE_EQ(SojournRate(over), 1);
  EXPECT_DOUBLE_EQ(MeanLatency(std::span(&over, 1), 0.01), 1.01);
}

// 001 eq. 3 by hand: jobs of 100 s and 50 s alone that took 200 s and 50 s got 150 / 250 of a
// GPU; a job that got its exclusive speed counts 1, and no finished job gives 0.
TEST(OversoldGpuTest, ExclusiveTimeOverRealTime) {
  const std::vector<OfflineTimes> jobs = {{.exclusive_s = 100, .real_s = 200},
                                          {.exclusive_s = 50, .real_s = 50}};
  EXPECT_DOUBLE_EQ(OversoldGpu(jobs), 0.6);
  EXPECT_DOUBLE_EQ(OversoldGpu(std::span(jobs).subspan(1)), 1.0);
  EXPECT_DOUBLE_EQ(OversoldGpu({}), 0.0);
}

TEST(OnlineOfflineTest, DefaultServicesShareTheGpusAndFollow001sRange) {
  const std::vector<OnlineService> s = DefaultServices(128);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].replicas + s[1].replicas + s[2].replicas, 128);
  EXPECT_EQ(s[0].replicas, 43);
  EXPECT_DOUBLE_EQ(s[0].load.trough_qps, 20);  // 001 §7.1: QPS from 20 to 190
  EXPECT_DOUBLE_EQ(s[0].load.peak_qps, 190);
}

class OnlineOfflineRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
    ASSERT_TRUE(c) << c.error().message;
    catalog_ = std::move(*c);
    // Small: 2 nodes × 2 T4, 30 jobs over 2 h, 6 h simulated.
    scenario_.nodes = 2;
    scenario_.gpus_per_node = 2;
    scenario_.horizon_s = 6 * 3600;
    scenario_.offline_jobs = 30;
    scenario_.submit_window_s = 2 * 3600;
    scenario_.duration_median_s = 900;
    scenario_.duration_max_s = 3600;
  }
  OnlineOfflineRun RunPolicy(std::string_view policy, uint64_t seed = 1) {
    auto r = RunOnlineOffline(policy, scenario_, seed, catalog_);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : OnlineOfflineRun{};
  }
  AppCatalog catalog_;
  OnlineOfflineScenario scenario_;
};

TEST_F(OnlineOfflineRunTest, TheInferenceCatalogueKeepsTrainingApart) {
  EXPECT_EQ(catalog_.training.size(), 4u);
  EXPECT_EQ(catalog_.Find("train/resnet50"), nullptr);  // the inference experiments see none
}

TEST_F(OnlineOfflineRunTest, OnlineOnlyRunsNoOfflineWorkAndSharingRaisesUtilisation) {
  scenario_.service_memory.resident = false;  // memory=footprint: each service its footprint
  const OnlineOfflineRun alone = RunPolicy("online-only");
  EXPECT_EQ(alone.executions, 0);
  EXPECT_EQ(alone.offline_jobs, 0);
  EXPECT_GT(alone.online_latency_mean_ms, scenario_.host_latency_ms);
  EXPECT_GE(alone.online_latency_p99_ms, alone.online_latency_mean_ms);
  ASSERT_EQ(alone.timeline.size(), 6u);
  // The services hold their footprints all day: memory in use is theirs over the 4 GPUs'.
  double footprints = 0;
  for (const OnlineService& s : DefaultServices(4)) {
    footprints += s.replicas * static_cast<double>(catalog_.Find(s.app)->footprint_mib);
  }
  const double t4_memory =
      static_cast<double>(model::GetGpuModel(*model::FindGpuModel("T4")).memory_mib);
  EXPECT_NEAR(alone.gpu_memory_mean, footprints / (4 * t4_memory), 1e-9);
  EXPECT_EQ(alone.oversold_gpu, 0);  // no offline job
  for (std::string_view p : {"ts", "pb-ts", "muxflow", "muxflow-S-M"}) {
    SCOPED_TRACE(p);
    const OnlineOfflineRun shared = RunPolicy(p);
    EXPECT_EQ(shared.offline_jobs, 30);
    EXPECT_GT(shared.offline_jobs_done, 0);
    EXPECT_GE(shared.executions, shared.offline_jobs_done);
    EXPECT_GT(shared.gpu_util_mean, alone.gpu_util_mean);
    // Nobody serves the services faster than they run alone.
    EXPECT_GE(shared.online_latency_mean_ms, alone.online_latency_mean_ms - 1e-9);
    // Sharing, the jobs get part of a GPU, and their memory adds to the services'.
    EXPECT_GT(shared.oversold_gpu, 0);
    EXPECT_LE(shared.oversold_gpu, 1.04);  // at most its exclusive speed, with the ±4 % noise
    EXPECT_GT(shared.gpu_memory_mean, alone.gpu_memory_mean);
  }
}

TEST(OnlineOfflineScenarioTest, TheReadingNamesTheClusterAndTheServicesMemory) {
  EXPECT_EQ(OnlineOfflineScenarioOf("")->second_gpu, "");
  EXPECT_TRUE(OnlineOfflineScenarioOf("")->service_memory.resident);
  EXPECT_EQ(OnlineOfflineScenarioOf("cluster=t4")->second_gpu, "");
  EXPECT_EQ(OnlineOfflineScenarioOf("cluster=t4-a10")->second_gpu, "A10");
  auto both = OnlineOfflineScenarioOf("cluster=t4-a10,memory=footprint");
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->second_gpu, "A10");
  EXPECT_FALSE(both->service_memory.resident);
  auto bad = OnlineOfflineScenarioOf("cluster=a100");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'cluster=a100' is not one of cluster=t4|t4-a10"),
            std::string::npos);
  EXPECT_FALSE(OnlineOfflineScenarioOf("cluster=t4,memory=lots"));
}

TEST(OnlineOfflineScenarioTest, TheReadingNamesTheTrainersDutyCycle) {
  EXPECT_DOUBLE_EQ(OnlineOfflineScenarioOf("")->trainer_duty, 0.68);  // 001 §7.5
  EXPECT_DOUBLE_EQ(OnlineOfflineScenarioOf("trainer_duty=1")->trainer_duty, 1);
  EXPECT_DOUBLE_EQ(OnlineOfflineScenarioOf("cluster=t4-a10,trainer_duty=0.5")->trainer_duty, 0.5);
  for (const char* bad : {"trainer_duty=0", "trainer_duty=1.5", "trainer_duty=", "trainer_duty=x",
                          "trainer_duty=0.5s", "trainer_duty=-0.5"}) {
    SCOPED_TRACE(bad);
    auto r = OnlineOfflineScenarioOf(bad);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("trainer_duty=D with 0 < D <= 1"), std::string::npos);
  }
}

// 001 §7.5: 26 % → 76 % GPU utilisation; a job alone on a T4 at trainer_duty 0.68 keeps it
// busy 68 % of the time, each app's step 1 / 0.68 its time on the GPU, the rest host time.
TEST(OnlineOfflineCatalogTest, TrainersKeepTheirGpuBusyTheirDutyCycle) {
  auto full = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
  ASSERT_TRUE(full) << full.error().message;
  const std::vector<OnlineService> services = DefaultServices(3);
  auto busy = OnlineOfflineCatalog(*full, services, {.resident = false}, "T4");
  auto piped = OnlineOfflineCatalog(*full, services, {.resident = false}, "T4", 0.68);
  ASSERT_TRUE(busy && piped);
  const model::GpuModelId t4 = *model::FindGpuModel("T4");
  const Physics before(*busy, 1, {.noise_sd = 0}), after(*piped, 1, {.noise_sd = 0});
  for (const AppSpec& t : full->training) {
    SCOPED_TRACE(t.key);
    EXPECT_EQ(busy->Find(t.key)->host_s, 0);
    const double engine_s = 1 / before.IsolatedQps(*busy->Find(t.key), t4, -1, 1000);
    EXPECT_NEAR(piped->Find(t.key)->host_s, engine_s * (1 / 0.68 - 1), 1e-12);
    EXPECT_NEAR(after.IsolatedQps(*piped->Find(t.key), t4, -1, 1000), 0.68 / engine_s, 1e-9);
    model::ClusterState c;
    ASSERT_TRUE(c.AddNode(model::UniformNode("n", t4, 1, 64000, 1 << 20)));
    model::Workload w;
    w.id = 1;
    w.name = "job";
    w.app = t.key;
    w.queries = 100;
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = t.footprint_mib};
    ASSERT_TRUE(c.Place(w, {1, 0, {{.partition = model::ClusterState::PartitionOf(0, 0)}}}));
    Physics p(*piped, 1, {.noise_sd = 0});
    EXPECT_NEAR(p.Rate(*c.Find(1), c).gpu_busy, 0.68, 1e-9);
  }
  // Services are left as they are.
  for (const OnlineService& s : services) EXPECT_EQ(piped->Find(s.app)->host_s, 0);
}

// memory=resident with no bursts: every replica holds 42 % of its T4 (001 §7.5's online-only
// GPUs) all day, whatever its footprint, and nothing offline runs: the mean is 0.42, but for
// the engine's last sample, which it counts for one more usage interval (10 s of 6 h).
TEST_F(OnlineOfflineRunTest, ResidentServicesHold42PercentOfTheirGpus) {
  scenario_.service_memory.burst_share = 0;
  EXPECT_NEAR(RunPolicy("online-only").gpu_memory_mean, 0.42 * (6 * 3600 + 10) / (6 * 3600), 1e-9);
}

// Every replica bursts once in the run (period 4 h < 6 h): +30 % of a T4 over 2 min. With an
// offline job at its ~36 % on top of 42 %, the burst would take the GPU past 100 %. SysMonitor
// (memory ≥ 95 %: Overlimit) evicts the job first and no service crashes; time-sharing, with
// no monitor, loses the service itself to OOM (the grower's allocation fails).
TEST_F(OnlineOfflineRunTest, SysMonitorEvictsBeforeABurstingServiceRunsOutOfMemory) {
  scenario_.service_memory.burst_period_s = 4 * 3600;
  const OnlineOfflineRun mux = RunPolicy("muxflow");
  EXPECT_GT(mux.evictions, 0);
  EXPECT_EQ(mux.online_oom_kills, 0);
  EXPECT_EQ(mux.executions, 30 + mux.evictions);  // every job started once, plus its restarts
  const OnlineOfflineRun ts = RunPolicy("ts");
  EXPECT_EQ(ts.evictions, 0);
  EXPECT_GT(ts.online_oom_kills, 0);
  // The old world (memory=footprint): nothing bursts, nothing is evicted or crashes.
  scenario_.service_memory.resident = false;
  const OnlineOfflineRun old = RunPolicy("muxflow");
  EXPECT_EQ(old.evictions, 0);
  EXPECT_EQ(old.online_oom_kills, 0);
}

// Half T4, half A10 (001 ≈205): node 0 holds T4s, node 1 A10s; the services' memory is over
// both models' memory, every job finishes, and each one's exclusive time is taken on the model
// it ran on (the oversold GPU stays within 1 and the noise).
// The cluster box's scenario (docs/cluster-box.md), by hand: both services burst once at 10 s,
// +0.6 % of the T4 a second from 42 % + a job's 34–38 %: 95 % at ≈ 35 s, evicting both jobs
// (SysMonitor's memory Overlimit) before they end at ≈ 47 s, 100 % ≈ 8 s later, which no service
// reaches; the burst ends at 70 s and both jobs come back and finish from their checkpoint.
TEST_F(OnlineOfflineRunTest, TheShortBurstScenarioEvictsBothJobsOnceAndFinishesThem) {
  scenario_ = ShortBurstScenario();
  const OnlineOfflineRun r = RunPolicy(R"(muxflow{"period_s":5,"base_hold_s":10})");
  EXPECT_EQ(r.evictions, 2);
  EXPECT_EQ(r.online_oom_kills, 0);
  EXPECT_EQ(r.executions, 4);
  EXPECT_EQ(r.offline_jobs_done, 2);
  EXPECT_GT(r.lost_iterations, 0);  // the work since each job's last checkpoint
  // One burst only: a run twice as long evicts no more.
  scenario_.horizon_s = 480;
  EXPECT_EQ(RunPolicy(R"(muxflow{"period_s":5,"base_hold_s":10})").evictions, 2);
}

// On a mixed cluster muxflow's normalised throughput is taken against the trace's GPU (the
// T4: the only exclusive speed the trace states), unless the variant names its own reference.
TEST_F(OnlineOfflineRunTest, AMixedClusterWeighsJobsAgainstTheTracesGpu) {
  scenario_.second_gpu = "A10";
  auto world = BuildOnlineOfflineWorld("muxflow-M", scenario_, 1, catalog_);
  ASSERT_TRUE(world) << world.error().message;
  EXPECT_NE(world->policy.find(R"("reference_gpu":"T4")"), std::string::npos) << world->policy;
  auto own = BuildOnlineOfflineWorld(R"(muxflow{"reference_gpu":""})", scenario_, 1, catalog_);
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_NE(own->policy.find(R"("reference_gpu":"")"), std::string::npos) << own->policy;
  scenario_.second_gpu.clear();  // one model: each GPU is its own reference
  auto t4 = BuildOnlineOfflineWorld("muxflow", scenario_, 1, catalog_);
  ASSERT_TRUE(t4) << t4.error().message;
  EXPECT_EQ(t4->policy.find("reference_gpu"), std::string::npos) << t4->policy;
}

TEST_F(OnlineOfflineRunTest, AMixedClusterCountsBothModelsAndFinishesItsJobs) {
  scenario_.second_gpu = "A10";
  scenario_.service_memory.resident = false;
  const OnlineOfflineRun alone = RunPolicy("online-only");
  double footprints = 0;
  for (const OnlineService& s : DefaultServices(4)) {
    footprints += s.replicas * static_cast<double>(catalog_.Find(s.app)->footprint_mib);
  }
  auto memory = [](const char* m) {
    return static_cast<double>(model::GetGpuModel(*model::FindGpuModel(m)).memory_mib);
  };
  EXPECT_NEAR(alone.gpu_memory_mean, footprints / (2 * memory("T4") + 2 * memory("A10")), 1e-9);
  const OnlineOfflineRun shared = RunPolicy("muxflow");
  EXPECT_EQ(shared.offline_jobs_done, 30);
  EXPECT_GT(shared.oversold_gpu, 0);
  EXPECT_LE(shared.oversold_gpu, 1.04);
  scenario_.second_gpu = "B200X";
  EXPECT_FALSE(RunOnlineOffline("muxflow", scenario_, 1, catalog_));
}

TEST_F(OnlineOfflineRunTest, TimeSharingSlowsTheServicesMoreThanPriorityOrMps) {
  const double ts = RunPolicy("ts").online_latency_mean_ms;
  EXPECT_GT(ts, RunPolicy("pb-ts").online_latency_mean_ms);
  EXPECT_GT(ts, RunPolicy("muxflow").online_latency_mean_ms);
}

TEST_F(OnlineOfflineRunTest, ARunIsAFunctionOfItsSeed) {
  const OnlineOfflineRun a = RunPolicy("muxflow", 7), b = RunPolicy("muxflow", 7);
  EXPECT_EQ(a.online_latency_mean_ms, b.online_latency_mean_ms);
  EXPECT_EQ(a.offline_jct_mean_s, b.offline_jct_mean_s);
  EXPECT_EQ(a.executions, b.executions);
}

TEST_F(OnlineOfflineRunTest, UnknownPoliciesAndBadOptionsAreRefused) {
  auto unknown = RunOnlineOffline("fifo", scenario_, 1, catalog_);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown policy 'fifo'"), std::string::npos);
  auto bad = RunOnlineOffline("muxflow{oops", scenario_, 1, catalog_);
  ASSERT_FALSE(bad);
  auto bad_option = RunOnlineOffline(R"(muxflow{"period_s":-1})", scenario_, 1, catalog_);
  ASSERT_FALSE(bad_option);
  EXPECT_NE(bad_option.error().message.find("period_s"), std::string::npos);
}

TEST_F(OnlineOfflineRunTest, MeansAreOverSeeds) {
  std::vector<OnlineOfflineRun> runs = {RunPolicy("muxflow", 1), RunPolicy("muxflow", 2)};
  const OnlineOfflineRun mean = MeanOf(runs);
  EXPECT_DOUBLE_EQ(mean.offline_jct_mean_s,
                   (runs[0].offline_jct_mean_s + runs[1].offline_jct_mean_s) / 2);
  EXPECT_DOUBLE_EQ(mean.timeline[3].latency_ms,
                   (runs[0].timeline[3].latency_ms + runs[1].timeline[3].latency_ms) / 2);
}

}  // namespace
}  // namespace tessera::sim
