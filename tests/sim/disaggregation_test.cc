#include "sim/disaggregation.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "sim/embedded_apps.h"

namespace tessera::sim {
namespace {

class DisaggregationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
    ASSERT_TRUE(c) << c.error().message;
    catalog_ = std::move(*c);
    scenario_.nodes = 4;  // 16 K80s, two nodes' CPUs held by the warm-up
    scenario_.jobs = 64;
  }
  DisaggregationRun Run(std::string_view policy, uint64_t seed = 1) {
    auto r = RunDisaggregation(policy, scenario_, seed, catalog_);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : DisaggregationRun{};
  }
  AppCatalog catalog_;
  DisaggregationScenario scenario_;
};

// The eight Rodinia-like apps carry a remote profile; HotSpot and NW the one 002 measured.
TEST_F(DisaggregationTest, TheAppsCarrySeed002sNetworkProfiles) {
  const AppCatalog sharing = SharingCatalog(catalog_);
  for (const std::string& key : scenario_.apps) {
    const AppSpec* app = sharing.Find(key);
    ASSERT_NE(app, nullptr) << key;
    EXPECT_FALSE(app->remote.empty()) << key;
  }
  EXPECT_DOUBLE_EQ(sharing.Find("rodinia/nw")->remote.network_share, 0.17);
  EXPECT_DOUBLE_EQ(sharing.Find("rodinia/nw")->remote.network_share_loaded, 0.49);
  EXPECT_DOUBLE_EQ(sharing.Find("rodinia/hotspot")->remote.network_share, 0.002);
  EXPECT_DOUBLE_EQ(sharing.Find("rodinia/hotspot")->remote.network_share_loaded, 0.01);
}

// The network-only world with goals by job (`--reading world=network-only,goal=job`, the earlier
// tables): local GPUs only, the warm-up nodes' GPUs idle for its 2,000 s, no job remote, and
// every job's run within its goal (its slack is at least 10 %, the noise at most 4 %).
// Disaggregation puts jobs on those GPUs (some miss their goal on the network) and finishes
// sooner; network awareness keeps more jobs within their goal.
TEST_F(DisaggregationTest, DisaggregationFinishesSoonerAndNetworkAwarenessKeepsGoals) {
  scenario_.colocation = false;
  scenario_.goal = DisaggregationScenario::Goal::kJob;
  const DisaggregationRun local = Run(R"(drmaestro{"disaggregate":false})");
  const DisaggregationRun remote = Run("drmaestro");
  const DisaggregationRun aware = Run(R"(drmaestro{"network_aware":true})");
  for (const DisaggregationRun* r : {&local, &remote, &aware}) {
    EXPECT_EQ(r->jobs_done, 64) << r->policy;
    EXPECT_EQ(r->scenario, "nodes=4,jobs=64,network-only,goal=job");
  }
  EXPECT_EQ(local.remote_jobs, 0);
  EXPECT_EQ(local.qos_violations, 0);
  EXPECT_GT(remote.remote_jobs, 0);
  EXPECT_LT(remote.makespan_s, local.makespan_s);
  EXPECT_LT(remote.pending_s_mean, local.pending_s_mean);
  EXPECT_GT(remote.qos_violations, 0);
  EXPECT_LT(aware.qos_violations, remote.qos_violations);
  // The reference policies know nothing of remote slices and keep working.
  const DisaggregationRun ff = Run("first-fit");
  EXPECT_EQ(ff.remote_jobs, 0);
  EXPECT_EQ(ff.jobs_done, 64);
}

// The co-location world (the default): 002's simulator slows every task by what shares its
// machine (≈430), local ones too, so the local-only baseline now misses goals as well, which the
// network-only world never does; the Iperf-like jobs run but are not counted among the jobs.
TEST_F(DisaggregationTest, InTheColocationWorldLocalJobsMissGoalsToo) {
  ASSERT_TRUE(scenario_.colocation);
  const DisaggregationRun local = Run(R"(drmaestro{"disaggregate":false})");
  EXPECT_EQ(local.jobs_done, 64);
  EXPECT_EQ(local.remote_jobs, 0);
  EXPECT_GT(local.qos_violations, 0);
  EXPECT_EQ(local.scenario, "nodes=4,jobs=64");
  scenario_.colocation = false;
  scenario_.goal = DisaggregationScenario::Goal::kJob;
  EXPECT_EQ(Run(R"(drmaestro{"disaggregate":false})").qos_violations, 0);
}

// Goals by class (the default, 002's τ_c): a job's goal is its app's mean work alone, so with
// nothing slowing a local run (the network-only world) a job misses exactly when its own work
// is above its app's mean (× its noise, at most 4 %). Work is uniform over each app's range:
// about half the 64 jobs miss (binomial, sd 4). By job, each goal has 10–60 % slack: none.
TEST_F(DisaggregationTest, AGoalByClassIsMissedByTheJobsWithMoreThanTheMeanWork) {
  scenario_.colocation = false;
  ASSERT_EQ(scenario_.goal, DisaggregationScenario::Goal::kClass);
  const DisaggregationRun by_class = Run(R"(drmaestro{"disaggregate":false})");
  EXPECT_GE(by_class.qos_violations, 20);
  EXPECT_LE(by_class.qos_violations, 44);
  scenario_.goal = DisaggregationScenario::Goal::kJob;
  const DisaggregationRun by_job = Run(R"(drmaestro{"disaggregate":false})");
  EXPECT_EQ(by_job.qos_violations, 0);
  EXPECT_EQ(by_job.jobs_done, by_class.jobs_done);  // the same jobs either way
}

// Network awareness postpones a job whose every placement misses its goal for up to
// max_postpone_cycles cycles, counted one a cycle. With goals by class a job with more work
// than its app's mean misses even alone (about half of them), so with a bound of 500 those
// jobs wait 500 cycles (1 s apart). The warm-up is over after 1 s, so after the other jobs end
// nothing runs: the engine must keep cycling (Policy::HoldsBack) until they go, not stop with
// them pending. Every job is done, the last no sooner than 500 s after the first arrival.
TEST_F(DisaggregationTest, JobsPostponedOnAnIdleClusterStillRunWhenTheBoundRunsOut) {
  scenario_.colocation = false;
  scenario_.warmup_s = 1;
  const DisaggregationRun r = Run(R"(drmaestro{"network_aware":true,"max_postpone_cycles":500})");
  EXPECT_EQ(r.jobs_done, 64);
  EXPECT_GE(r.makespan_s, 500);
}

TEST_F(DisaggregationTest, ARunIsAPureFunctionOfPolicyScenarioAndSeed) {
  const DisaggregationRun a = Run("drmaestro", 7), b = Run("drmaestro", 7);
  EXPECT_EQ(a.makespan_s, b.makespan_s);
  EXPECT_EQ(a.qos_violations, b.qos_violations);
  EXPECT_EQ(a.remote_jobs, b.remote_jobs);
}

TEST_F(DisaggregationTest, BadInputIsOneErrorNamingIt) {
  DisaggregationScenario s = scenario_;
  s.apps = {"rodinia/none"};
  auto missing = RunDisaggregation("drmaestro", s, 1, catalog_);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("rodinia/none"), std::string::npos);
  s = scenario_;
  s.slack_max = -1;
  EXPECT_FALSE(RunDisaggregation("drmaestro", s, 1, catalog_));
  EXPECT_FALSE(RunDisaggregation("no-such-policy", scenario_, 1, catalog_));
}

TEST(DisaggregationScenariosTest, Seed002sTwoSimulatedScenarios) {
  const std::vector<DisaggregationScenario> s = DisaggregationScenarios();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].Label(), "nodes=16,jobs=512");
  EXPECT_EQ(s[1].Label(), "nodes=128,jobs=4096");
  EXPECT_EQ(s[0].arrival_rate, 16);
  EXPECT_EQ(s[0].gpu, "K80");
}

// 002's prototype (Experiment 2, Tables 2–3): four machines, 128 and then 512 jobs, by reading.
TEST(DisaggregationScenariosTest, TheReadingNamesTheSimulationOrThePrototype) {
  ExperimentArgs args;
  auto simulated = DisaggregationScenariosOf(args);
  ASSERT_TRUE(simulated) << simulated.error().message;
  EXPECT_EQ(simulated->size(), 2u);
  args.reading = "scenario=prototype";
  auto prototype = DisaggregationScenariosOf(args);
  ASSERT_TRUE(prototype) << prototype.error().message;
  ASSERT_EQ(prototype->size(), 2u);
  EXPECT_EQ((*prototype)[0].Label(), "nodes=4,jobs=128");
  EXPECT_EQ((*prototype)[1].Label(), "nodes=4,jobs=512");
  EXPECT_EQ((*prototype)[1].warmup_s, 2000);  // the same warm-up as the simulation
  args.cluster_nodes_given = true;
  args.cluster_nodes = 8;
  auto both = DisaggregationScenariosOf(args);
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message.find("--cluster-nodes does not apply"), std::string::npos);
  args.reading = "scenario=simulation";
  auto eight = DisaggregationScenariosOf(args);
  ASSERT_TRUE(eight);
  ASSERT_EQ(eight->size(), 1u);
  EXPECT_EQ((*eight)[0].Label(), "nodes=8,jobs=256");
  args.cluster_nodes_given = false;
  args.reading = "scenario=prototype,world=network-only";
  auto old_world = DisaggregationScenariosOf(args);
  ASSERT_TRUE(old_world) << old_world.error().message;
  ASSERT_EQ(old_world->size(), 2u);
  EXPECT_FALSE((*old_world)[0].colocation);
  EXPECT_EQ((*old_world)[0].Label(), "nodes=4,jobs=128,network-only");
  EXPECT_TRUE((*prototype)[0].colocation);  // the default world
  args.reading = "world=everything";
  ASSERT_FALSE(DisaggregationScenariosOf(args));
  args.reading = "goal=job";
  auto by_job = DisaggregationScenariosOf(args);
  ASSERT_TRUE(by_job) << by_job.error().message;
  EXPECT_EQ((*by_job)[0].goal, DisaggregationScenario::Goal::kJob);
  EXPECT_EQ((*by_job)[0].Label(), "nodes=16,jobs=512,goal=job");
  EXPECT_EQ((*simulated)[0].goal, DisaggregationScenario::Goal::kClass);  // the default
  args.reading = "goal=task";
  auto no_goal = DisaggregationScenariosOf(args);
  ASSERT_FALSE(no_goal);
  EXPECT_NE(no_goal.error().message.find("'goal=task' is not one of"), std::string::npos);
  args.cluster_nodes_given = true;
  args.reading = "scenario=testbed";
  auto bad = DisaggregationScenariosOf(args);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'scenario=testbed' is not one of"), std::string::npos);
}

// `work=X` scales every job's work; the default is the fit to 002's Table 2 (0.163), and a
// value that is not a number in 0.01..10 is refused by name.
TEST(DisaggregationScenariosTest, TheWorkReadingScalesTheJobs) {
  ExperimentArgs args;
  auto fitted = DisaggregationScenariosOf(args);
  ASSERT_TRUE(fitted) << fitted.error().message;
  EXPECT_DOUBLE_EQ((*fitted)[0].work_scale, 0.163);
  args.reading = "scenario=prototype,work=1";
  auto catalogue = DisaggregationScenariosOf(args);
  ASSERT_TRUE(catalogue) << catalogue.error().message;
  EXPECT_DOUBLE_EQ((*catalogue)[1].work_scale, 1);
  EXPECT_EQ((*catalogue)[1].Label(), "nodes=4,jobs=512,work=1");  // the report says which
  EXPECT_EQ((*fitted)[0].Label(), "nodes=16,jobs=512");
  for (const char* bad : {"work=0", "work=abc", "work=11", "work=", "work=0.5x"}) {
    args.reading = bad;
    auto r = DisaggregationScenariosOf(args);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(fmt::format("'{}' is not one of", bad)), std::string::npos);
  }
}

// Half the work, same arrivals: the local baseline's jobs run half as long. In the network-only
// world a local run is its time alone, and the 64 jobs queue for the 8 local K80s, so the
// makespan halves.
TEST_F(DisaggregationTest, HalfTheWorkHalvesTheRunsOfTheLocalBaseline) {
  scenario_.colocation = false;
  scenario_.work_scale = 1;
  const DisaggregationRun full = Run(R"(drmaestro{"disaggregate":false})");
  scenario_.work_scale = 0.5;
  const DisaggregationRun half = Run(R"(drmaestro{"disaggregate":false})");
  // 64 jobs on the 8 local K80s arrive within 4 s and queue: the makespan is the work's.
  EXPECT_NEAR(half.makespan_s / full.makespan_s, 0.5, 0.05);
  EXPECT_EQ(half.jobs_done, 64);
}

// 002's Tables 2 and 3, the prototype's 128-job rows: Firmament's 1145 s, to which work_scale is
// fitted, DRMaestro's 1.50× on it (issue #38's bar: within 15 %), and the jobs that missed their
// goal, measured: Firmament 106, DRMaestro 117, with NA 112 (within 15 %; with goals by class,
// 002's τ_c, which nothing was fitted to). Seeds 1–3.
TEST(DisaggregationPrototypeTest, TheFittedWorkGivesTable2sMakespansAndTable3sViolations) {
  auto c = ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml");
  ASSERT_TRUE(c) << c.error().message;
  const DisaggregationScenario s = DisaggregationPrototypeScenarios()[0];
  DisaggregationRun local, remote, aware;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto l = RunDisaggregation(R"(drmaestro{"disaggregate":false})", s, seed, *c);
    auto r = RunDisaggregation("drmaestro", s, seed, *c);
    auto a = RunDisaggregation(R"(drmaestro{"network_aware":true})", s, seed, *c);
    ASSERT_TRUE(l && r && a);
    for (auto [sum, run] : {std::pair{&local, &*l}, {&remote, &*r}, {&aware, &*a}}) {
      sum->makespan_s += run->makespan_s / 3;
      sum->qos_violations += run->qos_violations / 3;
    }
  }
  EXPECT_NEAR(local.makespan_s, 1145, 0.05 * 1145);
  EXPECT_NEAR(local.makespan_s / remote.makespan_s, 1.50, 0.15 * 1.50);
  EXPECT_NEAR(local.qos_violations, 106, 0.15 * 106);
  EXPECT_NEAR(remote.qos_violations, 117, 0.15 * 117);
  EXPECT_NEAR(aware.qos_violations, 112, 0.15 * 112);
  EXPECT_GT(remote.qos_violations, local.qos_violations);  // Table 3's order
}

}  // namespace
}  // namespace tessera::sim
