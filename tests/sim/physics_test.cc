#include "sim/physics.h"

#include <gtest/gtest.h>

namespace tessera::sim {
namespace {

using model::ClusterState;

// One app, easy to follow: per query 4 ms compute + 2 ms memory + 4 ms fixed on a whole
// A100-40GB (the reference): 10 ms, 100 queries/s; busy 6/10; memory fraction 2/6.
AppCatalog Catalog() {
  auto c = ParseAppCatalog(R"(
reference_gpu: A100-40GB
apps:
  - key: x
    compute_s: 0.004
    memory_s: 0.002
    fixed_s: 0.004
    footprint_mib: 4000
  - key: measured
    compute_s: 0.004
    memory_s: 0.002
    fixed_s: 0.004
    footprint_mib: 1000
    measured:
      A100-40GB/1g.5gb/100: 30
)",
                           "test.yaml");
  EXPECT_TRUE(c) << c.error().message;
  return *c;
}

model::Workload W(model::WorkloadId id, std::string app) {
  model::Workload w;
  w.id = id;
  w.app = std::move(app);
  w.queries = 1000;
  w.gpu.count = 1;
  return w;
}

class PhysicsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto a100 = *model::FindGpuModel("A100-40GB");
    ASSERT_TRUE(c_.AddNode(model::UniformNode("whole", a100, 1, 64000, 1 << 20)));
    ASSERT_TRUE(c_.AddNode(
        model::UniformNode("mig", a100, 1, 64000, 1 << 20,
                           *model::ParseLayout(model::GetGpuModel(a100), "3g.20gb@0,3g.20gb@4"))));
    ASSERT_TRUE(
        c_.AddNode(model::UniformNode("small", a100, 1, 64000, 1 << 20,
                                      *model::ParseLayout(model::GetGpuModel(a100), "1g.5gb@0"))));
    ASSERT_TRUE(c_.AddNode(
        model::UniformNode("h100", *model::FindGpuModel("H100-80GB"), 1, 64000, 1 << 20)));
  }
  double Qps(model::WorkloadId id) { return physics_.Rate(*c_.Find(id), c_).qps; }
  void Put(model::WorkloadId id, const std::string& app, model::NodeIndex node,
           model::PartitionIndex p, int32_t milli, int64_t mem = 0) {
    ASSERT_TRUE(c_.Place(W(id, app), {id, node, {{p, milli, mem}}}));
  }
  ClusterState c_;
  Physics physics_{Catalog(), 1, {.noise_sd = 0}};
};

// Isolated rates are kept for the catalogue's applications by their index: an application of
// another catalogue under the same key, measured differently, gets its own. Best rates on an
// A100-40GB: "measured" 100 queries/s on the whole GPU (its roofline: 4 + 2 + 4 ms), the
// other 500 measured on 1g.5gb; and the kept 1g.5gb rate of "measured" stays its 30.
TEST_F(PhysicsTest, KeptIsolatedRatesAreTheCatalogueApplicationsOwn) {
  const std::vector<model::GpuModelId> a100 = {*model::FindGpuModel("A100-40GB")};
  const AppSpec& ours = physics_.catalog().apps[1];
  ASSERT_EQ(ours.key, "measured");
  AppSpec other = ours;
  other.measured = {{"A100-40GB/1g.5gb/100", 500}};
  EXPECT_NEAR(physics_.BestIsolatedQps(other, a100), 500, 1e-9);
  EXPECT_NEAR(physics_.BestIsolatedQps(ours, a100), 100, 1e-9);
  EXPECT_NEAR(physics_.BestIsolatedQps(ours, a100), 100, 1e-9);
  EXPECT_NEAR(physics_.BestIsolatedQps(other, a100), 500, 1e-9);
  Put(1, "measured", 2, ClusterState::PartitionOf(2, 0), 1000);
  EXPECT_NEAR(Qps(1), 30, 1e-9);
  EXPECT_NEAR(Qps(1), 30, 1e-9);
}

TEST_F(PhysicsTest, IsolatedRooflineOnEveryKindOfSlice) {
  Put(1, "x", 0, ClusterState::PartitionOf(0, 0), 1000);
  EXPECT_NEAR(Qps(1), 100, 1e-9);  // 4 + 2 + 4 ms
  // A kernel executes through all 10 ms (the fixed part is latency-bound GPU work); read as
  // host time, only the 6 SM-bound ms are.
  EXPECT_NEAR(physics_.Rate(*c_.Find(1), c_).gpu_busy, 1.0, 1e-12);
  EXPECT_NEAR(
      Physics(Catalog(), 1, {.noise_sd = 0, .fixed_active = 0}).Rate(*c_.Find(1), c_).gpu_busy, 0.6,
      1e-12);
  // It keeps all the SMs computing 6 ms of every 10.
  EXPECT_NEAR(physics_.Rate(*c_.Find(1), c_).sm_load, 0.6, 1e-12);
  ASSERT_TRUE(c_.Remove(1));
  // MPS 25% of a whole A100: 4/0.25 + 2 + 4 = 22 ms.
  Put(2, "x", 0, ClusterState::PartitionOf(0, 0), 250);
  EXPECT_NEAR(Qps(2), 1 / 0.022, 1e-9);
  // Power counts its quarter of the SMs: 0.25 x 18 ms busy of 22.
  EXPECT_NEAR(physics_.Rate(*c_.Find(2), c_).sm_load, 0.25 * 18 / 22, 1e-12);
  // 3g.20gb: 3/7 of the SMs, 4/8 of the bandwidth: 4*7/3 + 2*2 + 4 = 17.333 ms.
  Put(3, "x", 1, ClusterState::PartitionOf(1, 0), 1000);
  EXPECT_NEAR(Qps(3), 1 / (0.004 * 7 / 3 + 0.004 + 0.004), 1e-9);
  // H100: 989/312 the compute, 3350/1555 the bandwidth of the reference.
  Put(4, "x", 3, ClusterState::PartitionOf(3, 0), 1000);
  EXPECT_NEAR(Qps(4), 1 / (0.004 * 312 / 989 + 0.002 * 1555 / 3350 + 0.004), 1e-9);
}

TEST_F(PhysicsTest, AMeasurementOverridesTheRoofline) {
  // Roofline on 1g.5gb would be 28 + 16 + 4 = 48 ms (20.8/s); the measurement says 30/s.
  Put(1, "measured", 2, ClusterState::PartitionOf(2, 0), 1000);
  EXPECT_NEAR(Qps(1), 30, 1e-9);
  // The fixed part stays 4 ms of the measured 33.3: SM-bound 1 - 0.004 * 30 of the time, on
  // 1/7 of the SMs; a kernel executes throughout.
  EXPECT_NEAR(physics_.Rate(*c_.Find(1), c_).sm_load, (1 - 0.12) / 7, 1e-12);
  EXPECT_NEAR(physics_.Rate(*c_.Find(1), c_).gpu_busy, 1.0, 1e-12);
}

// fixed_floor_share 0.25: below a quarter of the SMs the 4 ms fixed part stretches by
// 0.25 / share; at a quarter and above, and where a measurement exists, nothing changes.
TEST_F(PhysicsTest, BelowTheFloorShareTheFixedPartStretches) {
  Physics floor(Catalog(), 1, {.noise_sd = 0, .fixed_floor_share = 0.25});
  // MPS 12.5 % of a whole A100: 4/0.125 + 2 + 4 × 2 = 42 ms (linear: 32 + 2 + 4 = 38 ms).
  Put(1, "x", 0, ClusterState::PartitionOf(0, 0), 125);
  EXPECT_NEAR(floor.Rate(*c_.Find(1), c_).qps, 1 / 0.042, 1e-9);
  EXPECT_NEAR(Qps(1), 1 / 0.038, 1e-9);
  ASSERT_TRUE(c_.Remove(1));
  // MPS 25 %: exactly the floor, 16 + 2 + 4 = 22 ms either way.
  Put(2, "x", 0, ClusterState::PartitionOf(0, 0), 250);
  EXPECT_NEAR(floor.Rate(*c_.Find(2), c_).qps, 1 / 0.022, 1e-9);
  ASSERT_TRUE(c_.Remove(2));
  // 1g.5gb is 1/7 of the SMs: 28 + 16 + 4 × 7/4 = 51 ms (linear 48 ms).
  Put(3, "x", 2, ClusterState::PartitionOf(2, 0), 1000);
  EXPECT_NEAR(floor.Rate(*c_.Find(3), c_).qps, 1 / 0.051, 1e-9);
  ASSERT_TRUE(c_.Remove(3));
  // Measured there: the measurement stays the truth.
  Put(4, "measured", 2, ClusterState::PartitionOf(2, 0), 1000);
  EXPECT_NEAR(floor.Rate(*c_.Find(4), c_).qps, 30, 1e-9);
}

// fail_below_share 0.25: a slice with less than a quarter of the SMs fails at start and its
// isolated rate is 0; a quarter runs; a measurement is the truth; a model outside
// small_share_models keeps the roofline.
TEST_F(PhysicsTest, BelowTheFailShareASliceFails) {
  Physics fail(Catalog(), 1, {.noise_sd = 0, .fail_below_share = 0.25});
  const model::GpuModelId a100 = *model::FindGpuModel("A100-40GB");
  Put(1, "x", 0, ClusterState::PartitionOf(0, 0), 125);
  const RunRate r = fail.Rate(*c_.Find(1), c_);
  EXPECT_TRUE(r.fails);
  EXPECT_EQ(r.qps, 0);
  EXPECT_NE(r.failure.find("12.5 % of the GPU"), std::string::npos) << r.failure;
  EXPECT_TRUE(fail.TooSmall(a100, -1, 125));
  EXPECT_EQ(fail.IsolatedQps(fail.catalog().apps[0], a100, -1, 125), 0);
  ASSERT_TRUE(c_.Remove(1));
  // A quarter: 16 + 2 + 4 = 22 ms, as without the rule.
  Put(2, "x", 0, ClusterState::PartitionOf(0, 0), 250);
  EXPECT_FALSE(fail.Rate(*c_.Find(2), c_).fails);
  EXPECT_NEAR(fail.Rate(*c_.Find(2), c_).qps, 1 / 0.022, 1e-9);
  EXPECT_FALSE(fail.TooSmall(a100, -1, 250));
  ASSERT_TRUE(c_.Remove(2));
  // 1g.5gb, a seventh: fails for "x"; "measured" has a measurement there, 30/s.
  Put(3, "x", 2, ClusterState::PartitionOf(2, 0), 1000);
  EXPECT_TRUE(fail.Rate(*c_.Find(3), c_).fails);
  ASSERT_TRUE(c_.Remove(3));
  Put(4, "measured", 2, ClusterState::PartitionOf(2, 0), 1000);
  EXPECT_NEAR(fail.Rate(*c_.Find(4), c_).qps, 30, 1e-9);
  ASSERT_TRUE(c_.Remove(4));
  // The rule only on the V100: the A100's eighth runs, 32 + 2 + 4 = 38 ms.
  Physics v100_only(Catalog(), 1,
                    {.noise_sd = 0, .fail_below_share = 0.25, .small_share_models = {"V100-32GB"}});
  Put(5, "x", 0, ClusterState::PartitionOf(0, 0), 125);
  EXPECT_NEAR(v100_only.Rate(*c_.Find(5), c_).qps, 1 / 0.038, 1e-9);
  EXPECT_FALSE(v100_only.TooSmall(a100, -1, 125));
}

TEST_F(PhysicsTest, MpsNeighboursContendMigNeighboursBarely) {
  // Two x at 50% MPS on one whole A100: alone each takes 8 + 2 = 10 ms SM-bound + 4 ms fixed
  // (14 ms). The co-runner's fixed duty 4/14 loads the shared server to rho = 0.49 x 4/14 =
  // 0.14: the fixed part waits, 4 / (1 - 0.14) ms. Its SM duty 10/14 stretches the SM-bound
  // part by 1 + 1.5 x 10/14.
  Put(1, "x", 0, ClusterState::PartitionOf(0, 0), 500);
  Put(2, "x", 0, ClusterState::PartitionOf(0, 0), 500);
  const double fixed = 0.004 / (1 - 0.14), sm = 0.010 * (1 + 1.5 * 10 / 14.0);
  EXPECT_NEAR(Qps(1), 1 / (fixed + sm), 1e-9);
  const RunRate r = physics_.Rate(*c_.Find(1), c_);
  // Waiting is idle: a kernel runs during the stretched SM part and the 4 ms of fixed work.
  EXPECT_NEAR(r.gpu_busy, (sm + 0.004) / (fixed + sm), 1e-12);
  // Power: half the SMs, for the 10 ms of SM work per query.
  EXPECT_NEAR(r.sm_load, 0.5 * 0.010 / (fixed + sm), 1e-12);
  // Two x on the two 3g.20gb instances: the other's demand = busy * memory fraction =
  // (13.333/17.333) * (4/13.333) = 4/17.333; slowdown 1 + 0.03 * 4/17.333 (< 3%).
  Put(3, "x", 1, ClusterState::PartitionOf(1, 0), 1000);
  Put(4, "x", 1, ClusterState::PartitionOf(1, 1), 1000);
  const double t3g = 0.004 * 7 / 3 + 0.004 + 0.004;
  EXPECT_NEAR(Qps(3), (1 / t3g) / (1 + 0.03 * 0.004 / t3g), 1e-9);
}

TEST_F(PhysicsTest, MemoryOverflowFailsAndPowerFollowsUtilisation) {
  // x needs 4000 MiB; a 3000 MiB MPS reservation is too small.
  Put(1, "x", 0, ClusterState::PartitionOf(0, 0), 500, 3000);
  const RunRate r = physics_.Rate(*c_.Find(1), c_);
  EXPECT_TRUE(r.fails);
  EXPECT_NE(r.failure.find("4000"), std::string::npos);
  // A100-40GB: 50 W idle, 400 W max, the datasheet line.
  EXPECT_DOUBLE_EQ(physics_.GpuPower(0, 0.5, c_), 225);
  model::Workload unknown = W(9, "nope");
  EXPECT_TRUE(physics_.Rate({unknown, {9, 0, {{0, 100, 0}}}}, c_).fails);
}

TEST_F(PhysicsTest, TheCeilingIsTheBestConfigurationTheAppFitsIn) {
  const auto a100 = *model::FindGpuModel("A100-40GB");
  const auto h100 = *model::FindGpuModel("H100-80GB");
  const AppSpec& x = physics_.catalog().apps[0];
  // On A100s alone the whole GPU at 100 % is best: 10 ms, 100/s.
  EXPECT_NEAR(physics_.BestIsolatedQps(x, std::vector{a100}), 100, 1e-9);
  // An H100 beside it raises the ceiling to the H100's whole-GPU rate.
  const double h = 1 / (0.004 * 312 / 989 + 0.002 * 1555 / 3350 + 0.004);
  EXPECT_NEAR(physics_.BestIsolatedQps(x, std::vector{a100, h100}), h, 1e-9);
  // An app that fits no configuration has no ceiling.
  AppSpec huge = x;
  huge.footprint_mib = 50000;  // more than the A100-40GB's memory
  EXPECT_EQ(physics_.BestIsolatedQps(huge, std::vector{a100}), 0);
  // One that fits only in half of an H100's memory under MPS 50 %: 80 GB / 2 = 40,960 MiB.
  huge.footprint_mib = 40000;
  EXPECT_NEAR(physics_.BestIsolatedQps(huge, std::vector{a100, h100}), h, 1e-9);
}

TEST_F(PhysicsTest, NoiseIsPerWorkloadBoundedAndSeeded) {
  // Alone on a whole A100, x runs at 100/s; noise keeps every workload within 100 +- 4%. The
  // whole A100 is x's best configuration there, so its ceiling is the rate it runs at.
  Physics noisy(Catalog(), 7);
  const auto a100 = *model::FindGpuModel("A100-40GB");
  const AppSpec& x = noisy.catalog().apps[0];
  bool differs = false;
  for (model::WorkloadId id = 1; id <= 200; ++id) {
    Put(id, "x", 0, ClusterState::PartitionOf(0, 0), 1000);
    const double q = noisy.Rate(*c_.Find(id), c_).qps;
    EXPECT_NEAR(noisy.CeilingOf(x, std::vector{a100}, id), q, 1e-9);
    EXPECT_GE(q, 96 - 1e-9);
    EXPECT_LE(q, 104 + 1e-9);
    EXPECT_EQ(q, Physics(Catalog(), 7).Rate(*c_.Find(id), c_).qps);  // same seed, same draw
    differs |= std::abs(q - 100) > 1e-6;
    ASSERT_TRUE(c_.Remove(id));
  }
  EXPECT_TRUE(differs);
}

TEST(PhysicsPowerTest, TheThesisGpusDrawNearlyTheSameEmptyAndLoaded) {
  // Ch. 6.2: power barely changes between an empty and a loaded GPU. V100: 40 W idle, at most
  // 20 % more loaded; A30: 30 W. The literal datasheet line (rise < 0): 40 + 260 x load.
  ClusterState c;
  ASSERT_TRUE(c.AddNode(model::UniformNode("v", *model::FindGpuModel("V100-32GB"), 1, 1, 1)));
  ASSERT_TRUE(c.AddNode(model::UniformNode("a", *model::FindGpuModel("A30-24GB"), 1, 1, 1)));
  Physics physics(Catalog(), 1);
  EXPECT_DOUBLE_EQ(physics.GpuPower(0, 0, c), 40);
  EXPECT_DOUBLE_EQ(physics.GpuPower(0, 0.5, c), 44);
  EXPECT_DOUBLE_EQ(physics.GpuPower(0, 1, c), 48);
  EXPECT_DOUBLE_EQ(physics.GpuPower(1, 1, c), 36);
  Physics datasheet(Catalog(), 1, {.flat_power_rise = -1});
  EXPECT_DOUBLE_EQ(datasheet.GpuPower(0, 0.5, c), 170);
  // A measured line wins over both on its model only: 39.5 W idle, 66.8 W full -> 53.15 W at
  // half load; the A30 keeps its flat reading.
  PhysicsOptions measured;
  measured.power_by_gpu["V100-32GB"] = {39.5, 66.8};
  Physics line(Catalog(), 1, measured);
  EXPECT_DOUBLE_EQ(line.GpuPower(0, 0, c), 39.5);
  EXPECT_DOUBLE_EQ(line.GpuPower(0, 0.5, c), 53.15);
  EXPECT_DOUBLE_EQ(line.GpuPower(0, 2, c), 66.8);  // load clamped to 1
  EXPECT_DOUBLE_EQ(line.GpuPower(1, 1, c), 36);
}

// The thesis's engines on its V100 (Ch. 6.4, Fig. 6.10): two pods at 50 % MPS each, half the
// memory each, as in the fixed-workload experiment whose results the chapter analyses.
class ThesisInterferenceTest : public ::testing::Test {
 protected:
  static AppCatalog Shipped() {
    auto c = LoadAppCatalog(TESSERA_SOURCE_DIR "/data/apps.yaml");
    EXPECT_TRUE(c) << c.error().message;
    return *c;
  }
  void SetUp() override {
    ASSERT_TRUE(c_.AddNode(
        model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  }
  // QPS of `victim` alone on the whole V100 (milli 1000), or at 50 % beside `aggressor`.
  double Qps(const std::string& victim, const std::string& aggressor = "") {
    const model::PartitionIndex p = ClusterState::PartitionOf(0, 0);
    const int64_t half = c_.partition(p).memory_mib / 2;
    EXPECT_TRUE(c_.Place(W(1, victim), {1, 0, {{p, aggressor.empty() ? 1000 : 500, half}}}));
    if (!aggressor.empty()) {
      EXPECT_TRUE(c_.Place(W(2, aggressor), {2, 0, {{p, 500, half}}}));
    }
    const double q = physics_.Rate(*c_.Find(1), c_).qps;
    (void)c_.Remove(1);
    (void)c_.Remove(2);
    return q;
  }
  double Loss(const std::string& victim, const std::string& aggressor) {
    const model::PartitionIndex p = ClusterState::PartitionOf(0, 0);
    EXPECT_TRUE(c_.Place(W(1, victim), {1, 0, {{p, 500, 0}}}));
    const double alone = physics_.Rate(*c_.Find(1), c_).qps;
    (void)c_.Remove(1);
    return 1 - Qps(victim, aggressor) / alone;
  }
  ClusterState c_;
  Physics physics_{Shipped(), 1, {.noise_sd = 0}};
};

TEST_F(ThesisInterferenceTest, OnnxMobileNetAloneMakes22To26Qps) {
  EXPECT_NEAR(Qps("onnx/mobilenet"), 24, 0.1 * 24);
}

TEST_F(ThesisInterferenceTest, OnnxResNet50AloneMakesAbout22Qps) {
  EXPECT_NEAR(Qps("onnx/resnet50"), 22, 0.1 * 22);
}

TEST_F(ThesisInterferenceTest, OnnxMobileNetBesideItselfMakesAbout15Qps) {
  EXPECT_NEAR(Qps("onnx/mobilenet", "onnx/mobilenet"), 15, 0.1 * 15);
}

TEST_F(ThesisInterferenceTest, OnnxMobileNetBesideTfResNet50MakesMoreThan20Qps) {
  const double q = Qps("onnx/mobilenet", "tf/resnet50");
  EXPECT_GT(q, 20);
  EXPECT_LT(q, 20 * 1.1);
}

TEST_F(ThesisInterferenceTest, ResNetsHurtResNetsMoreThanMobileNetsDo) {
  // "intense models, e.g. Resnet, tend to influence system efficiency more".
  for (const char* victim : {"onnx/resnet50", "tf/resnet50"}) {
    for (const char* resnet : {"onnx/resnet50", "tf/resnet50"}) {
      for (const char* mobilenet : {"onnx/mobilenet", "tf/mobilenet"}) {
        EXPECT_GT(Loss(victim, resnet), Loss(victim, mobilenet))
            << victim << " beside " << resnet << " vs " << mobilenet;
      }
    }
  }
}

TEST(AppCatalogTest, MalformedFilesNameTheLine) {
  auto bad = ParseAppCatalog("apps:\n  - key: a\n    compute_s: fast\n", "apps.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("apps.yaml:3:", 0), 0u) << bad.error().message;
  auto missing = ParseAppCatalog("apps:\n  - key: a\n    compute_s: 1\n", "apps.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("memory_s"), std::string::npos);
  auto syntax = ParseAppCatalog("apps: [\n", "apps.yaml");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().message.rfind("apps.yaml:", 0), 0u);
  auto twice = ParseAppCatalog(
      "apps:\n  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}\n"
      "  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}\n",
      "apps.yaml");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message.rfind("apps.yaml:3:", 0), 0u) << twice.error().message;
}

TEST(AppCatalogTest, SaveThenLoadRoundTrips) {
  const AppCatalog c = Catalog();
  const std::string path = ::testing::TempDir() + "/apps.yaml";
  ASSERT_TRUE(SaveAppCatalog(c, path));
  auto back = LoadAppCatalog(path);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->apps.size(), 2u);
  EXPECT_DOUBLE_EQ(back->apps[1].measured.at("A100-40GB/1g.5gb/100"), 30);
  EXPECT_DOUBLE_EQ(back->apps[0].fixed_s, 0.004);
}

// The ground truth of use (seeds 003 and 004) is the application's trajectory, the same for every
// instance; an application without one has none, and so does an unknown application.
TEST(PhysicsUsageTest, UseFollowsTheApplicationsTrajectory) {
  AppCatalog c = Catalog();
  c.apps[0].usage.phases = {{30, {2000, 0.05, 0.02}}, {60, {7000, 0.6, 0.3}}};
  const Physics physics(c, 1);
  EXPECT_EQ(physics.UsageAt(W(1, "x"), 10), (UsagePoint{2000, 0.05, 0.02}));
  EXPECT_EQ(physics.UsageAt(W(1, "x"), 30), (UsagePoint{7000, 0.6, 0.3}));
  EXPECT_EQ(physics.UsageAt(W(2, "measured"), 10), std::nullopt);
  EXPECT_EQ(physics.UsageAt(W(3, "nobody"), 10), std::nullopt);
}

// MuxFlow (seed 001): an online service with an offered load, and the two ways of sharing without
// MPS. On a whole A100-40GB (the reference), service s: 2 ms compute + 1 ms memory + 2 ms fixed =
// 5 ms, 200 QPS alone; job b: 6 ms compute per iteration, nothing else.
constexpr const char* kSharingApps = R"(
reference_gpu: A100-40GB
apps:
  - {key: s, compute_s: 0.002, memory_s: 0.001, fixed_s: 0.002, footprint_mib: 1000}
  - {key: b, compute_s: 0.006, memory_s: 0, fixed_s: 0, footprint_mib: 1000}
  - {key: h, compute_s: 0.006, memory_s: 0, fixed_s: 0, host_s: 0.004, footprint_mib: 1000}
)";

class SharingTest : public ::testing::Test {
 protected:
  Physics Make(PhysicsOptions::Sharing sharing) {
    auto catalog = ParseAppCatalog(kSharingApps, "test.yaml");
    EXPECT_TRUE(catalog) << catalog.error().message;
    PhysicsOptions o{.noise_sd = 0};
    o.sharing = sharing;
    return Physics(*catalog, 1, o);
  }
  void SetUp() override {
    ASSERT_TRUE(
        c_.AddNode(model::UniformNode("n", *model::FindGpuModel("A100-40GB"), 1, 64000, 1 << 20)));
  }
  void Service() { ASSERT_TRUE(c_.Place(W(1, "s"), {1, 0, {{0, 1000, 20000}}})); }
  void Job(int32_t milli, const char* app = "b") {
    ASSERT_TRUE(c_.Place(W(2, app), {2, 0, {{0, milli, 10000, /*best_effort=*/true}}}));
  }
  // s offered a flat 50 QPS (u = 0.25 alone) beside b at `milli`, shared the given way.
  Physics Shared(PhysicsOptions::Sharing sharing, int32_t milli) {
    Physics p = Make(sharing);
    Service();
    Job(milli);
    p.SetOfferedLoad(1, {.trough_qps = 50, .peak_qps = 50});
    return p;
  }
  ClusterState c_;
};

TEST(DailyLoadTest, PeaksAtItsHourAndTroughsTwelveHoursLater) {
  const DailyLoad load{.trough_qps = 20, .peak_qps = 190, .peak_hour = 20};
  EXPECT_DOUBLE_EQ(load.QpsAt(20 * 3600), 190);
  EXPECT_NEAR(load.QpsAt(8 * 3600), 20, 1e-9);
  EXPECT_NEAR(load.QpsAt(44 * 3600), 190, 1e-9);  // a day later
  EXPECT_NEAR(load.QpsAt(14 * 3600), 105, 1e-9);  // six hours off: half way
}

TEST_F(SharingTest, AServiceServesItsOfferedLoadAndIsBusyOnlyForIt) {
  Physics p = Make(PhysicsOptions::Sharing::kMps);
  Service();
  const model::Workload& w = c_.Find(1)->workload;
  EXPECT_FALSE(p.HasOfferedLoad(w));
  const RunRate closed = p.Rate(*c_.Find(1), c_);
  EXPECT_DOUBLE_EQ(closed.qps, 200);
  EXPECT_DOUBLE_EQ(closed.capacity_qps, 200);
  // 50 QPS offered at t = 0 (flat curve): u = 50 / 200 = 0.25.
  p.SetOfferedLoad(1, {.trough_qps = 50, .peak_qps = 50});
  EXPECT_TRUE(p.HasOfferedLoad(w));
  const RunRate open = p.Rate(*c_.Find(1), c_);
  EXPECT_DOUBLE_EQ(open.qps, 50);
  EXPECT_DOUBLE_EQ(open.capacity_qps, 200);
  EXPECT_DOUBLE_EQ(open.gpu_busy, 0.25);           // engine-active 5/5 ms × 0.25
  EXPECT_DOUBLE_EQ(open.sm_load, 3.0 / 5 * 0.25);  // SM-bound 3 of 5 ms × 0.25
  // More than it can serve: it serves its capacity.
  p.SetOfferedLoad(1, {.trough_qps = 300, .peak_qps = 300});
  EXPECT_DOUBLE_EQ(p.Rate(*c_.Find(1), c_).qps, 200);
}

TEST_F(SharingTest, AnMpsBestEffortJobPressesInProportionToItsSms) {
  Physics p = Shared(PhysicsOptions::Sharing::kMps, 600);
  // b at 60 % of the SMs: 10 ms per iteration, SM-bound all of it: duty 1, share 0.6.
  // s's SM-bound 3 ms × (1 + 0.32 × 0.6 × 1) = 3.576 ms; its fixed part waits on nothing
  // (b has none): 5.576 ms, capacity 1000 / 5.576.
  const RunRate s = p.Rate(*c_.Find(1), c_);
  EXPECT_NEAR(s.capacity_qps, 1000 / 5.576, 1e-9);
  EXPECT_DOUBLE_EQ(s.qps, 50);
  // b: s's front duty (2 ms × 50 QPS = 0.1) does not touch b (no fixed part); s's SM duty
  // 3 ms × 200 × 0.25 = 0.15 stretches b's SM-bound part by 1 + 1.5 × 0.15.
  EXPECT_NEAR(p.Rate(*c_.Find(2), c_).qps, 1 / (0.010 * (1 + 1.5 * 0.15)), 1e-9);
}

TEST_F(SharingTest, TimeSlicingDoublesTheServicesTimeAndLeavesTheJobTheRest) {
  Physics p = Shared(PhysicsOptions::Sharing::kTimeSlice, 1000);
  // b is busy all the time: s's 5 engine-active ms wait out b's slices, 10 ms, 100 QPS.
  const RunRate s = p.Rate(*c_.Find(1), c_);
  EXPECT_NEAR(s.capacity_qps, 100, 1e-9);
  EXPECT_DOUBLE_EQ(s.qps, 50);
  // b gets what s leaves: s alone is active 5 ms × 50 QPS = 25 % of the time: b 75 % of its
  // 6 ms iterations, 125 per second.
  EXPECT_NEAR(p.Rate(*c_.Find(2), c_).qps, 0.75 / 0.006, 1e-9);
}

// A job whose step is 6 ms on the GPU and 4 ms on the host (host_s) keeps the engine busy
// 60 % of its time alone: a time-shared service waits out its slices only then.
TEST_F(SharingTest, AJobsHostTimeLeavesTheEngineToATimeSharedService) {
  Physics p = Make(PhysicsOptions::Sharing::kTimeSlice);
  Service();
  Job(1000, "h");
  p.SetOfferedLoad(1, {.trough_qps = 50, .peak_qps = 50});
  // Alone h runs 10 ms a step, 100 per second, engine-active 6 of 10 ms.
  // s: 5 engine-active ms × (1 + 0.6) = 8 ms, 125 QPS.
  EXPECT_NEAR(p.Rate(*c_.Find(1), c_).capacity_qps, 125, 1e-9);
  // h: s leaves 75 % of the engine (as above), so its 6 ms of kernels take 8 ms, and its host
  // 4 ms do not wait: 12 ms a step, 83.3 per second; busy 6 of those 12 ms.
  const RunRate h = p.Rate(*c_.Find(2), c_);
  EXPECT_NEAR(h.qps, 1000.0 / 12, 1e-9);
  EXPECT_NEAR(h.gpu_busy, 0.5, 1e-9);
  // Under MPS its SM-bound duty is 0.6, not 1: s's SM-bound 3 ms × (1 + 0.32 × 1 × 0.6).
  Physics mps = Make(PhysicsOptions::Sharing::kMps);
  mps.SetOfferedLoad(1, {.trough_qps = 50, .peak_qps = 50});
  EXPECT_NEAR(mps.Rate(*c_.Find(1), c_).capacity_qps, 1000 / (2 + 3 * (1 + 0.32 * 0.6)), 1e-9);
}

TEST_F(SharingTest, PriorityTimeSlicingCostsTheServiceOnlyThePreemption) {
  Physics p = Shared(PhysicsOptions::Sharing::kPriorityTimeSlice, 1000);
  // 5 ms × 1.05; b gets 1 − 0.25 × 1.05 of the time.
  EXPECT_NEAR(p.Rate(*c_.Find(1), c_).capacity_qps, 1000 / 5.25, 1e-9);
  EXPECT_NEAR(p.Rate(*c_.Find(2), c_).qps, (1 - 0.25 * 1.05) / 0.006, 1e-9);
}

// Seed 003 §4: four TF ssd-mobilenet engines sharing a V100 by memory (gpushare at 0 %
// over-provisioning) finish the workload 2.67× faster than one engine per GPU. The `sharing`
// apps' sensitivity (0.06) is set so: four memory shares (best effort, no MPS reservation)
// together serve 2.67× one engine alone, within 5 %.
TEST(Seed003SharingTest, FourEnginesServe267TimesOne) {
  auto full = LoadAppCatalog(TESSERA_SOURCE_DIR "/data/apps.yaml");
  ASSERT_TRUE(full) << full.error().message;
  AppCatalog catalog;
  catalog.apps = full->sharing;
  Physics physics(catalog, 1, {.noise_sd = 0});
  ClusterState c;
  ASSERT_TRUE(
      c.AddNode(model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  const model::PartitionIndex p = ClusterState::PartitionOf(0, 0);
  auto engine = [](model::WorkloadId id) {
    model::Workload w;
    w.id = id;
    w.name = "engine-" + std::to_string(id);
    w.app = "mlperf/tf/ssd-mobilenet";
    w.queries = 1024;
    w.gpu = {.count = 1, .milli = 1000, .memory_mib = 7168};
    return w;
  };
  ASSERT_TRUE(c.Place(engine(1), {1, 0, {{.partition = p, .best_effort = true}}}));
  const double alone = physics.Rate(*c.Find(1), c).qps;
  EXPECT_NEAR(alone, 14.6, 0.1 * 14.6);  // tf/ssd-mobilenet's speed: the V100's ~14 QPS
  for (model::WorkloadId id = 2; id <= 4; ++id) {
    ASSERT_TRUE(c.Place(engine(id), {id, 0, {{.partition = p, .best_effort = true}}}));
  }
  double together = 0;
  for (model::WorkloadId id = 1; id <= 4; ++id) together += physics.Rate(*c.Find(id), c).qps;
  EXPECT_NEAR(together / alone, 2.67, 0.05 * 2.67);
}

}  // namespace
}  // namespace tessera::sim

namespace tessera::sim {
namespace {

// Remote GPUs (seed 002 Fig. 3): NW spends 17 % of its run on the network alone and
// 49 % under a saturating load, so a remote run takes 1/0.83 of a local one with the network
// idle, and sensitivity s = 0.83/0.51 − 1 = 0.6275 per unit of load.
class RemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseAppCatalog(R"(
apps:
  - key: nw
    compute_s: 0
    memory_s: 0
    fixed_s: 0.01
    footprint_mib: 1000
    remote: {network_share: 0.17, network_share_loaded: 0.49}
)",
                             "test.yaml");
    ASSERT_TRUE(c) << c.error().message;
    catalog_ = *c;
    const auto k80 = *model::FindGpuModel("K80");
    for (const char* name : {"cpu", "g1", "g2"}) {
      ASSERT_TRUE(c_.AddNode(model::UniformNode(name, k80, 1, 64000, 1 << 20)));
    }
  }
  // Workload `id` with its CPU on node 0 and the GPU of node `gpu_node`.
  void Place(model::WorkloadId id, model::NodeIndex gpu_node) {
    model::Workload w = W(id, "nw");
    const model::GpuIndex g = c_.node(gpu_node).first_gpu;
    ASSERT_TRUE(c_.Place(w, {.workload = id,
                             .node = 0,
                             .slices = {{ClusterState::PartitionOf(g, 0), 1000, 0, false,
                                         /*remote=*/gpu_node != 0}}}));
  }
  AppCatalog catalog_;
  ClusterState c_;
};

TEST_F(RemoteTest, TheProfileGivesTheSlowdownAtEveryLoad) {
  const RemoteProfile nw = catalog_.Find("nw")->remote;
  EXPECT_NEAR(nw.sensitivity(), 0.83 / 0.51 - 1, 1e-12);
  EXPECT_NEAR(nw.Slowdown(0), 1 / 0.83, 1e-12);
  EXPECT_NEAR(nw.Slowdown(1), 1 / 0.51, 1e-12);  // all of Fig. 3's loaded share
  EXPECT_DOUBLE_EQ(RemoteProfile{}.Slowdown(0.7), 1);
}

TEST_F(RemoteTest, ARemoteGpuSlowsTheRunAndOtherStreamsThroughItsNodesSlowItMore) {
  Physics physics(catalog_, 1, {.noise_sd = 0});
  Place(1, 0);  // local: 100 queries/s (fixed 10 ms)
  EXPECT_NEAR(physics.Rate(*c_.Find(1), c_).qps, 100, 1e-9);
  ASSERT_TRUE(c_.Remove(1));
  Place(1, 1);  // remote, alone on the network: 83 queries/s, the GPU waiting 17 % of the time
  RunRate alone = physics.Rate(*c_.Find(1), c_);
  EXPECT_NEAR(alone.qps, 83, 1e-9);
  // A second NW stream through node 0 (to node 2's GPU): each sees load 0.17 from the other.
  Place(2, 2);
  const double slowed = 83 / (1 + (0.83 / 0.51 - 1) * 0.17);
  EXPECT_NEAR(slowed, 75, 1e-9);
  EXPECT_NEAR(physics.Rate(*c_.Find(1), c_).qps, slowed, 1e-9);
  EXPECT_NEAR(physics.Rate(*c_.Find(2), c_).qps, slowed, 1e-9);
  // The other leaves: back to 83.
  ASSERT_TRUE(c_.Remove(2));
  EXPECT_NEAR(physics.Rate(*c_.Find(1), c_).qps, 83, 1e-9);
}

TEST(AppCatalogRemoteTest, ARemoteProfileRoundTripsAndABadOneNamesTheLine) {
  auto bad = ParseAppCatalog(
      "apps:\n  - key: a\n    compute_s: 1\n    memory_s: 0\n    fixed_s: 0\n"
      "    footprint_mib: 1\n    remote: {network_share: 0.5, network_share_loaded: 0.2}\n",
      "apps.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("apps.yaml:7:", 0), 0u) << bad.error().message;
  auto full = ParseAppCatalog(
      "apps:\n  - key: a\n    compute_s: 1\n    memory_s: 0\n    fixed_s: 0\n"
      "    footprint_mib: 1\n    remote: {network_share: 0.5, network_share_loaded: 1}\n",
      "apps.yaml");
  ASSERT_FALSE(full);  // a link busy all the time: the run would never end
  auto good = ParseAppCatalog(
      "apps:\n  - key: a\n    compute_s: 1\n    memory_s: 0\n    fixed_s: 0\n"
      "    footprint_mib: 1\n    remote: {network_share: 0.1, network_share_loaded: 0.3}\n",
      "apps.yaml");
  ASSERT_TRUE(good) << good.error().message;
  const std::string path = ::testing::TempDir() + "/remote.yaml";
  ASSERT_TRUE(SaveAppCatalog(*good, path));
  auto back = LoadAppCatalog(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_DOUBLE_EQ(back->apps.at(0).remote.network_share, 0.1);
  EXPECT_DOUBLE_EQ(back->apps.at(0).remote.network_share_loaded, 0.3);
}

// Seed 002's co-location on a node's link (PhysicsOptions::link_colocation). NW-like: 100
// queries/s alone on a local K80, 10 % of its run on storage I/O (disk_share), 17 % / 49 % on
// the network when remote (Fig. 3). Its disk part stretches by 1 + 3.69 × l, l the others' load
// on its CPU node's link (002 Fig. 3: NW's link time × 4.69 beside Iperf).
class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseAppCatalog(R"(
apps:
  - key: nw
    compute_s: 0
    memory_s: 0
    fixed_s: 0.01
    footprint_mib: 1000
    remote: {network_share: 0.17, network_share_loaded: 0.49}
    link: {disk_share: 0.1}
  - key: iperf
    compute_s: 0
    memory_s: 0
    fixed_s: 1
    footprint_mib: 0
    link: {load: 1}
)",
                             "test.yaml");
    ASSERT_TRUE(c) << c.error().message;
    catalog_ = *c;
    const auto k80 = *model::FindGpuModel("K80");
    ASSERT_TRUE(c_.AddNode(model::UniformNode("a", k80, 2, 64000, 1 << 20)));
    ASSERT_TRUE(c_.AddNode(model::UniformNode("b", k80, 1, 64000, 1 << 20)));
  }
  // NW `id` with its CPU on node a and GPU `g` (remote when on node b).
  void PlaceNw(model::WorkloadId id, model::GpuIndex g) {
    ASSERT_TRUE(c_.Place(W(id, "nw"), {.workload = id,
                                       .node = 0,
                                       .slices = {{ClusterState::PartitionOf(g, 0), 1000, 0, false,
                                                   /*remote=*/c_.gpu(g).node != 0}}}));
  }
  void PlaceIperf(model::WorkloadId id) {
    model::Workload w = W(id, "iperf");
    w.gpu = {};
    ASSERT_TRUE(c_.Place(w, {.workload = id, .node = 0}));
  }
  double Qps(Physics& p, model::WorkloadId id) { return p.Rate(*c_.Find(id), c_).qps; }
  AppCatalog catalog_;
  ClusterState c_;
};

TEST_F(LinkTest, ALocalJobIsSlowedByItsNodesOtherLinkUsersOnlyWithLinkColocation) {
  Physics on(catalog_, 1, {.noise_sd = 0, .link_colocation = true});
  Physics off(catalog_, 1, {.noise_sd = 0});
  PlaceNw(1, 0);
  EXPECT_NEAR(Qps(on, 1), 100, 1e-9);  // its own disk I/O is part of its run alone
  PlaceNw(2, 1);                       // a second local NW: each sees the other's 0.1
  EXPECT_NEAR(Qps(on, 1), 100 / (1 + 0.1 * 3.69 * 0.1), 1e-9);
  EXPECT_NEAR(Qps(off, 1), 100, 1e-9);
  PlaceIperf(3);  // the link saturated: load min(1, 0.1 + 1) = 1
  EXPECT_NEAR(Qps(on, 1), 100 / 1.369, 1e-9);
  EXPECT_NEAR(Qps(on, 3), 1, 1e-9);  // Iperf itself is not slowed
  EXPECT_NEAR(Qps(off, 1), 100, 1e-9);
}

// A remote NW beside Iperf on its CPU node: Fig. 3's loaded network share (1 / 0.51) plus its
// disk part at load 1 (0.1 × 3.69): 100 / (1.9608 + 0.369) = 42.9/s. Without link_colocation
// Iperf is not on the link and the stream runs alone: 83/s.
TEST_F(LinkTest, ARemoteJobBesideIperfPaysBothItsStreamAndItsDiskPart) {
  Physics on(catalog_, 1, {.noise_sd = 0, .link_colocation = true});
  Physics off(catalog_, 1, {.noise_sd = 0});
  PlaceNw(1, 2);
  PlaceIperf(3);
  EXPECT_NEAR(Qps(on, 1), 100 / (1 / 0.51 + 0.369), 1e-9);
  EXPECT_NEAR(Qps(off, 1), 83, 1e-9);
}

TEST(AppCatalogLinkTest, ALinkUseRoundTripsAndABadOneIsRefused) {
  const std::string head =
      "apps:\n  - key: a\n    compute_s: 1\n    memory_s: 0\n    fixed_s: 0\n"
      "    footprint_mib: 1\n";
  // Each is one error at the link's line (7) that says what is wrong.
  for (const auto& [link, says] :
       {std::pair{"{disk_share: 1}", "app a: link needs 0 <= disk_share < 1 and 0 <= load <= 1"},
        std::pair{"{load: 1.5}", "app a: link needs 0 <= disk_share < 1 and 0 <= load <= 1"},
        std::pair{"3", "app a: 'link' must be a map"}}) {
    auto bad = ParseAppCatalog(head + "    link: " + link + "\n", "apps.yaml");
    ASSERT_FALSE(bad) << link;
    EXPECT_EQ(bad.error().message.rfind("apps.yaml:7:", 0), 0u) << bad.error().message;
    EXPECT_NE(bad.error().message.find(says), std::string::npos) << bad.error().message;
  }
  auto good = ParseAppCatalog(head + "    link: {disk_share: 0.2, load: 0.5}\n", "apps.yaml");
  ASSERT_TRUE(good) << good.error().message;
  const std::string path = ::testing::TempDir() + "/link.yaml";
  ASSERT_TRUE(SaveAppCatalog(*good, path));
  auto back = LoadAppCatalog(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_DOUBLE_EQ(back->apps.at(0).link.disk_share, 0.2);
  EXPECT_DOUBLE_EQ(back->apps.at(0).link.load, 0.5);
}

}  // namespace
}  // namespace tessera::sim
