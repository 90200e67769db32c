// slo-aware against numbers worked out by hand. Every cell is measured twice,
// so its relative uncertainty is a prediction interval for one new run: its sample standard
// deviation over its mean × √(1 + 1/2) = × 1.224745:
//
//   app a, V100-32GB whole:  100 %: 38, 42 (mean 40, sd 2.828, σ 0.086603, σ·mean 3.4641)
//                             50 %: 29, 31 (mean 30, sd 1.414, σ 0.057735, σ·mean 1.7321)
//                             25 %: 19, 21 (mean 20, sd 1.414, σ 0.086603, σ·mean 1.7321)
//   app b, V100-32GB whole:  100 %: 59, 61; 50 %: 49, 51 (σ 0.034641); 25 %: 39, 41
//   interference ("mps"): f(a, b) = 0.1, f(b, a) = 0.4, f(a, a) = f(b, b) = 0.2
//
// Options: margin_z 1, co_runner_sigma 0.1, so lower = iso·(1 − Σf) − iso·√(σ² + n·0.01).
#include "policy/slo_aware.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/clock.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "slo_workload.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::PartitionIndex;
using testing::App;

predict::Predictor RepeatedRunsPredictor() {
  predict::ProfileMatrix m;
  auto runs = [&m](const std::string& app, int percent, double x, double y) {
    const int r = m.AddRow(app);
    const int c = m.AddCol("V100-32GB/whole/" + std::to_string(percent));
    m.Observe(r, c, x);
    m.Observe(r, c, y);
  };
  runs("a", 100, 38, 42);
  runs("a", 50, 29, 31);
  runs("a", 25, 19, 21);
  runs("b", 100, 59, 61);
  runs("b", 50, 49, 51);
  runs("b", 25, 39, 41);
  predict::InterferenceMatrices im;
  EXPECT_TRUE(im.Observe("mps", "a", "b", 0.1));
  EXPECT_TRUE(im.Observe("mps", "b", "a", 0.4));
  EXPECT_TRUE(im.Observe("mps", "a", "a", 0.2));
  EXPECT_TRUE(im.Observe("mps", "b", "b", 0.2));
  auto p = predict::Predictor::Create(std::move(m), std::move(im),
                                      {.method = "baseline", .interference_method = "baseline"});
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

class SloAwareTest : public ::testing::Test {
 protected:
  SloAwareTest() : predictor_(RepeatedRunsPredictor()) {
    EXPECT_TRUE(c_.AddNode(
        model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  }
  SloAware Make(SloAwareOptions o = {}) {
    o.margin_z = 1;
    o.co_runner_sigma = 0.1;
    return SloAware(predictor_, nullptr, o);
  }
  void Put(const Workload& w, int percent) {
    const PartitionIndex p = ClusterState::PartitionOf(0, 0);
    ASSERT_TRUE(
        c_.Place(w, {w.id, 0, {{p, percent * 10, c_.partition(p).memory_mib * percent / 100}}}));
  }
  const SloOption* Find(const std::vector<SloOption>& options, int percent) {
    for (const SloOption& o : options) {
      if (o.mps_percent == percent) return &o;
    }
    return nullptr;
  }

  predict::Predictor predictor_;
  ClusterState c_;
};

TEST_F(SloAwareTest, TakesTheSmallestInterpolatedShareWhoseLowerBoundMeetsTheSlo) {
  SloAware policy = Make();
  const Workload x = App(1, "a", 24);
  // 40 %: between the profiled 25 % and 50 %, linear in 1/share: w = (1/40 − 1/25) / (1/50 −
  // 1/25) = 0.75, time 0.25/20 + 0.75/30 = 0.0375 s → 26.667 QPS; σ = max of the two, 0.086603;
  // lower = 26.667 · (1 − 0.086603) = 24.357 ≥ 24. Score 100 / (1 + 0.357/24) = 98.533.
  // 35 %: w = 0.5714, 24.706 QPS, lower 22.566 < 24: not admissible.
  const std::vector<SloOption> options = policy.Options(x, 0, c_);
  const SloOption* at40 = Find(options, 40);
  const SloOption* at35 = Find(options, 35);
  ASSERT_NE(at40, nullptr);
  ASSERT_NE(at35, nullptr);
  EXPECT_NEAR(at40->members[0].isolated, 26.6667, 1e-3);
  EXPECT_NEAR(at40->members[0].sigma, 0.086603, 1e-5);
  EXPECT_NEAR(at40->members[0].lower, 24.3573, 1e-3);
  EXPECT_TRUE(at40->admissible);
  EXPECT_NEAR(at35->members[0].lower, 22.5663, 1e-3);
  EXPECT_FALSE(at35->admissible);
  EXPECT_EQ(Find(options, 20), nullptr);  // below the smallest profiled share: never tried
  const std::optional<Candidate> cand = policy.Score(x, 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].milli, 400);
  EXPECT_NEAR(cand->score, 98.5332, 1e-3);
}

// The test predictor plus an application c measured (twice) at 100 % only: its 50 % cell is
// completed.
Expected<predict::Predictor> WithCompletedCell(const predict::Predictor& predictor) {
  predict::ProfileMatrix m = predictor.profile();
  const int c = m.AddRow("c");
  m.Observe(c, *m.FindCol("V100-32GB/whole/100"), 48);
  m.Observe(c, *m.FindCol("V100-32GB/whole/100"), 52);
  return predict::Predictor::Create(std::move(m), predictor.interference(),
                                    {.method = "baseline", .interference_method = "baseline"});
}

TEST_F(SloAwareTest, ACompletedCellTakesThePredictorsCalibratedSigmaWhenAsked) {
  auto p = WithCompletedCell(predictor_);
  ASSERT_TRUE(p.has_value());
  const int col50 = *p->FindConfig("V100-32GB/whole/50");
  const double calibrated = p->SigmaAt(*p->FindApp("c"), col50);
  ASSERT_TRUE(std::isfinite(calibrated));
  ASSERT_GT(std::abs(calibrated - 0.20), 1e-6);  // tells the two apart
  const Workload x = App(1, "c", 1);
  for (const bool use : {false, true}) {
    SloAwareOptions o{.calibrated_sigma = use, .mps_step = 0};
    o.margin_z = 1;
    const std::vector<SloOption> options = SloAware(*p, nullptr, o).Options(x, 0, c_);
    const SloOption* at50 = Find(options, 50);
    ASSERT_NE(at50, nullptr);
    // false: the fixed completed_sigma 0.20; true: the predictor's σ for that cell. A measured
    // cell keeps its runs' spread either way (100 %: sd 2.828 / 50 × √1.5 = 0.069282).
    EXPECT_NEAR(at50->members[0].sigma, use ? calibrated : 0.20, 1e-9) << use;
    EXPECT_NEAR(Find(options, 100)->members[0].sigma, 0.069282, 1e-5) << use;
  }
}

TEST_F(SloAwareTest, ScoringWithoutCalibratedSigmaNeverCalibratesThePredictor) {
  // The predictor calibrates on the first σ read (predictor.h): a policy that does not use σ
  // must not pay for it, and one that does pays once.
  auto p = WithCompletedCell(predictor_);
  ASSERT_TRUE(p.has_value());
  const Workload x = App(1, "c", 1);
  SloAwareOptions o{.calibrated_sigma = false, .mps_step = 0};
  EXPECT_FALSE(SloAware(*p, nullptr, o).Options(x, 0, c_).empty());
  EXPECT_TRUE(SloAware(*p, nullptr, o).Score(x, 0, c_).has_value());
  EXPECT_EQ(p->calibrations(), 0);
  o.calibrated_sigma = true;
  EXPECT_FALSE(SloAware(*p, nullptr, o).Options(x, 0, c_).empty());
  EXPECT_EQ(p->calibrations(), 1);
}
TEST_F(SloAwareTest, ThesisSharesOnlyWithStepZero) {
  SloAware policy = Make({.mps_step = 0});
  // 100/50/25 only: the SLO of 24 is first met at 50 % (lower 30 − 1.7321 = 28.2679).
  const std::optional<Candidate> cand = policy.Score(App(1, "a", 24), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].milli, 500);
  EXPECT_NEAR(cand->score, 100 / (1 + 4.26795 / 24), 1e-3);
}

TEST_F(SloAwareTest, AnSloAboveTheCeilingAimsAtTheBestConfigurationAndWaitsForIt) {
  SloAware policy = Make();
  const Workload x = App(1, "a", 39);
  // Ceiling: a's best lower bound alone, 40 − 3.4641 = 36.536 < 39: the target.
  EXPECT_NEAR(policy.Ceiling(x, c_), 36.5359, 1e-3);
  const std::optional<Candidate> alone = policy.Score(x, 0, c_);
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->placement.slices[0].milli, 1000);
  // A neighbour without an application holds 30 %: at most 70 % is left (35 QPS before any
  // interference), below the target, so the pod waits rather than bind below it...
  Workload other;
  other.id = 9;
  other.name = "other";
  other.gpu.count = 1;
  Put(other, 30);
  EXPECT_FALSE(policy.Score(x, 0, c_).has_value());
  EXPECT_NE(policy.Explain(x, c_).find("WAITS"), std::string::npos);
  EXPECT_TRUE(policy.OffersDependOn().slo_value);
  // ...unless admission control is off: then the best option is bound anyway.
  SloAware no_admission = Make({.admission = false});
  EXPECT_TRUE(no_admission.Score(x, 0, c_).has_value());
  EXPECT_FALSE(no_admission.OffersDependOn().slo_value);
}

TEST_F(SloAwareTest, DoesNotPushACoRunnerBelowItsTarget) {
  Put(App(1, "b", 40), 50);
  // b alone at 50 %: 50 − 1.732 = 48.268 ≥ 40. With a beside it: 50 · (1 − 0.4) − 50 ·
  // √(0.034641² + 1 · 0.1²) = 30 − 5.2915 = 24.7085 < 40.
  SloAware policy = Make();
  const Workload x = App(2, "a", 10);
  EXPECT_FALSE(policy.Score(x, 0, c_).has_value());
  const std::string why = policy.Explain(x, c_);
  EXPECT_NE(why.find("pushes workload 1 below its target (24.71 < 40.00)"), std::string::npos)
      << why;
  // Without the protection x is admissible at 25 %: 20 · 0.9 − 20 · √(0.086603² + 0.01) =
  // 15.354 ≥ 10. Score: util 0.5 (b's share), k = 1/2, b's score1 = 1 / (1 + 1.382288²) =
  // 0.343559, x's score2 = 1 / (1 + 0.535425) = 0.651286 → 100 · 0.5 · 0.497423 = 24.871.
  SloAware unprotected = Make({.protect_neighbours = false});
  const std::optional<Candidate> cand = unprotected.Score(x, 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].milli, 250);
  EXPECT_NEAR(cand->score, 24.8711, 1e-3);
}

TEST_F(SloAwareTest, LearnsOnceFromAPodAloneOnAProfiledShare) {
  telemetry::StaticTelemetry telemetry;
  SloAware policy(predictor_, &telemetry, {.margin_z = 1, .co_runner_sigma = 0.1}, &predictor_);
  const Workload x = App(1, "a", 20);
  Put(x, 50);
  // No telemetry for it yet: nothing observed.
  EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty());
  EXPECT_EQ(policy.observations(), 0);
  telemetry.SetWorkloadQps(x.name, 33);
  const predict::AppId a = *predictor_.FindApp("a");
  const predict::ConfigId half = *predictor_.FindConfig("V100-32GB/whole/50");
  EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty());
  EXPECT_EQ(policy.observations(), 1);
  // The cell had 29 and 31; with 33 its mean is 31 over three runs.
  EXPECT_EQ(predictor_.profile().Count(a, half), 3);
  EXPECT_DOUBLE_EQ(predictor_.IsolatedAt(a, half), 31);
  policy.AfterCycle(c_);  // once per pod
  EXPECT_EQ(policy.observations(), 1);
  // A pod seen with a co-runner is never observed, nor one on a share with no column (40 %).
  Put(App(2, "b", 10), 25);
  telemetry.SetWorkloadQps("b-2", 30);
  policy.AfterCycle(c_);
  EXPECT_EQ(policy.observations(), 1);
  EXPECT_EQ(predictor_.profile().Count(*predictor_.FindApp("b"),
                                       *predictor_.FindConfig("V100-32GB/whole/25")),
            2);
  // Without a learner, or with `observe` off, nothing is learnt.
  SloAware off(predictor_, &telemetry, {.observe = false}, &predictor_);
  ClusterState fresh;
  ASSERT_TRUE(fresh.AddNode(
      model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  ASSERT_TRUE(
      fresh.Place(x, {x.id,
                      0,
                      {{ClusterState::PartitionOf(0, 0), 500,
                        fresh.partition(ClusterState::PartitionOf(0, 0)).memory_mib / 2}}}));
  off.AfterCycle(fresh);
  EXPECT_EQ(off.observations(), 0);
}

TEST_F(SloAwareTest, MovesAPodBelowItsTargetOnceAFreeOptionIsPredictedToKeepIt) {
  telemetry::StaticTelemetry telemetry;
  SloAwareOptions o{.margin_z = 1, .co_runner_sigma = 0.1, .observe = false};
  SloAware policy(predictor_, &telemetry, o, nullptr, /*can_move=*/true);
  const Workload x = App(1, "a", 24);
  Put(x, 50);
  // It runs at 20 QPS, below its target of 24 (50 % was predicted at 30 − 1.73 = 28.27).
  telemetry.SetWorkloadQps(x.name, 20);
  // The first sighting only notes the sample; on a newer one its own V100 is still the only
  // GPU: nowhere else to go.
  EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty());
  telemetry.SetUtilization("bump", 1);
  EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty());
  // A second, empty V100: 40 % there is admissible (lower 24.36). The pod has been seen below
  // its target on a sample newer than the first sighting, its node unchanged: it moves.
  ASSERT_TRUE(c_.AddNode(
      model::UniformNode("v100-b", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  const std::vector<Eviction> moves = policy.AfterCycle(c_).evictions;
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].workload, 1);
  EXPECT_TRUE(moves[0].requeue);
  EXPECT_NE(moves[0].reason.find("below its target 24.00"), std::string::npos) << moves[0].reason;
  EXPECT_EQ(policy.moves(), 1);
  // At most max_moves (1) per pod.
  telemetry.SetUtilization("bump", 4);
  EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty());
  // A driver that cannot restart pods (can_move false) or `replace` off: never.
  SloAware fixed(predictor_, &telemetry, o, nullptr, /*can_move=*/false);
  SloAware off(predictor_, &telemetry, {.replace = false}, nullptr, true);
  for (int i = 5; i < 8; ++i) {
    telemetry.SetUtilization("bump", i);
    EXPECT_TRUE(fixed.AfterCycle(c_).evictions.empty());
    EXPECT_TRUE(off.AfterCycle(c_).evictions.empty());
  }
}

// A rate read over a window (Kubernetes: a rate over --qps-min-age seconds) still reaches back
// before the sighting: a pod found below its target moves only once a whole window has passed
// since, however many newer samples came first. Without a window (the simulator) the second
// sample decides, as above.
TEST_F(SloAwareTest, AMoveWaitsAWholeQpsWindowAfterItsPodWasFoundBelow) {
  telemetry::StaticTelemetry telemetry;
  ManualClock clock;
  SloAwareOptions o{.margin_z = 1, .co_runner_sigma = 0.1, .observe = false};
  SloAware policy(predictor_, &telemetry, o, nullptr, /*can_move=*/true, &clock,
                  /*qps_window_s=*/6);
  const Workload x = App(1, "a", 24);
  Put(x, 50);
  ASSERT_TRUE(c_.AddNode(
      model::UniformNode("v100-b", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  telemetry.SetWorkloadQps(x.name, 20);                  // below its target of 24
  EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty());  // found below at t = 0
  for (double t : {1.0, 3.0, 5.9}) {
    clock.Set(t);
    telemetry.SetUtilization("bump", t);  // a newer sample
    EXPECT_TRUE(policy.AfterCycle(c_).evictions.empty()) << t;
  }
  clock.Set(6.0);
  telemetry.SetUtilization("bump", 6);
  const std::vector<Eviction> moves = policy.AfterCycle(c_).evictions;
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].workload, 1);
}

// Under admission a node's occupied partitions are scored in two ways: walked in index order
// (a node seen for the first time, or changed since the last look), or from its kept rooms,
// lowest util first, the rest pruned by their ceilings. Both give the walk's answer: the best
// score, ties to the lowest partition.
TEST_F(SloAwareTest, TheKeptRoomsGiveTheWalksPickTiesToTheLowestPartition) {
  ClusterState c;
  ASSERT_TRUE(c.AddNode(
      model::UniformNode("v100x3", *model::FindGpuModel("V100-32GB"), 3, 64000, 1 << 20)));
  telemetry::StaticTelemetry telemetry;
  for (model::GpuIndex g = 0; g < 3; ++g) {
    const PartitionIndex p = ClusterState::PartitionOf(g, 0);
    const Workload b = App(1 + g, "b", 5);
    ASSERT_TRUE(c.Place(b, {b.id, 0, {{p, 250, c.partition(p).memory_mib / 4}}}));
    telemetry.SetUtilization(c.partition(p).uuid, g == 2 ? 0.1 : 0.5);
  }
  SloAware policy(predictor_, &telemetry, {.margin_z = 1, .co_runner_sigma = 0.1});
  const Workload x = App(10, "a", 10);
  // x at 25 % beside one b on each GPU: 20 · 0.9 − 20 · √(0.086603² + 0.01) = 15.354 ≥ 10,
  // admissible (as in DoesNotPushACoRunnerBelowItsTarget), and b keeps 40 · 0.6 − 40 ·
  // √(0.043301² + 0.01) = 19.64 ≥ 5. The three partitions' terms are the same, so the score is
  // 100 · (1 − util) · the same mean: GPU 2 (util 0.1) scores 0.9 / 0.5 = 1.8 times GPUs 0, 1.
  std::vector<Candidate> looks;
  for (int look = 0; look < 3; ++look) {  // walk; rooms filled; rooms kept
    const std::optional<Candidate> cand = policy.Score(x, 0, c);
    ASSERT_TRUE(cand) << look;
    looks.push_back(*cand);
  }
  for (const Candidate& cand : looks) {
    EXPECT_EQ(cand.placement.slices[0].partition, ClusterState::PartitionOf(2, 0));
    EXPECT_EQ(cand.placement.slices[0].milli, 250);
    EXPECT_EQ(cand.score, looks[0].score);
  }
  // All three at util 0.5: a three-way tie, which the walk gives to GPU 0.
  telemetry.SetUtilization(c.partition(ClusterState::PartitionOf(2, 0)).uuid, 0.5);
  for (int look = 0; look < 3; ++look) {
    const std::optional<Candidate> cand = policy.Score(x, 0, c);
    ASSERT_TRUE(cand) << look;
    EXPECT_EQ(cand->placement.slices[0].partition, ClusterState::PartitionOf(0, 0)) << look;
    EXPECT_NEAR(looks[0].score / cand->score, 1.8, 1e-9) << look;
  }
}

TEST_F(SloAwareTest, OutsideTheModelItPlacesFirstFit) {
  SloAware policy = Make();
  Workload unknown = App(1, "zzz", 10);
  const std::optional<Candidate> cand = policy.Score(unknown, 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_NE(policy.Explain(unknown, c_).find("outside the model"), std::string::npos);
}

TEST(SloAwareOptionsTest, ParsesAndRejectsWithThePolicyAndOptionNamed) {
  Expected<SloAwareOptions> o =
      ParseSloAwareOptions({{"margin_z", 1.5}, {"mps_step", 10}, {"admission", false}});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->margin_z, 1.5);
  EXPECT_EQ(o->mps_step, 10);
  EXPECT_FALSE(o->admission);
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"margin_z", 6}, {"completed_sigma", -0.1}, {"mps_step", 101}, {"admission", "yes"}}) {
    Expected<SloAwareOptions> bad = ParseSloAwareOptions({{key, value}});
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_NE(bad.error().message.find("slo-aware"), std::string::npos);
    EXPECT_NE(bad.error().message.find(key), std::string::npos);
  }
  EXPECT_FALSE(MakePolicy("slo-aware", {}).has_value());  // needs a predictor
}

}  // namespace
}  // namespace tessera::policy
