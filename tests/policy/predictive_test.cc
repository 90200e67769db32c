// The predictive policy (seed 000, Ch. 8.3) against scores worked out by hand. The predictor is
// built from a fully observed profile and interference matrix, so every isolated(x, p) and
// interference(x, y) below is exactly the number in the tables (observed cells read back).
//
// Isolated QPS (profile matrix):
//                    V100 whole 100%  50%  25% | A30 whole 100% | A30 1g.6gb 100% 50% | 2g.12gb
//                    100% 50%
//   a                          40     30   20  |        45      |        19       15 |      30 21
//   b                          60     50   40  |        70      |        30          |      45
// Interference ("mps", fraction of the victim's isolated QPS lost): f(a, b) = 0.05,
// f(b, a) = 0.10, f(a, a) = 0.20, f(b, b) = 0.15.
#include "policy/predictive.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model/mig.h"
#include "policy/registry.h"
#include "sched/scheduler.h"
#include "slo_workload.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::PartitionIndex;
using testing::App;

predict::Predictor TwoAppPredictor() {
  predict::ProfileMatrix m;
  auto set = [&m](const std::string& app, const std::string& config, double qps) {
    m.Observe(m.AddRow(app), m.AddCol(config), qps);
  };
  set("a", "V100-32GB/whole/100", 40);
  set("a", "V100-32GB/whole/50", 30);
  set("a", "V100-32GB/whole/25", 20);
  set("a", "A30-24GB/whole/100", 45);
  set("a", "A30-24GB/1g.6gb/100", 19);
  set("a", "A30-24GB/1g.6gb/50", 15);
  set("a", "A30-24GB/2g.12gb/100", 30);
  set("a", "A30-24GB/2g.12gb/50", 21);
  set("b", "V100-32GB/whole/100", 60);
  set("b", "V100-32GB/whole/50", 50);
  set("b", "V100-32GB/whole/25", 40);
  set("b", "A30-24GB/whole/100", 70);
  set("b", "A30-24GB/1g.6gb/100", 30);
  set("b", "A30-24GB/1g.6gb/50", 25);
  set("b", "A30-24GB/2g.12gb/100", 45);
  set("b", "A30-24GB/2g.12gb/50", 35);
  predict::InterferenceMatrices im;
  EXPECT_TRUE(im.Observe("mps", "a", "b", 0.05));
  EXPECT_TRUE(im.Observe("mps", "b", "a", 0.10));
  EXPECT_TRUE(im.Observe("mps", "a", "a", 0.20));
  EXPECT_TRUE(im.Observe("mps", "b", "b", 0.15));
  predict::PredictorOptions o;
  o.method = "baseline";
  o.interference_method = "baseline";
  auto p = predict::Predictor::Create(std::move(m), std::move(im), o);
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

class PredictiveTest : public ::testing::Test {
 protected:
  PredictiveTest() : predictor_(TwoAppPredictor()), policy_(predictor_, &telemetry_) {}
  model::GpuModelId V100() { return *model::FindGpuModel("V100-32GB"); }
  model::GpuModelId A30() { return *model::FindGpuModel("A30-24GB"); }
  // Places `w` at `percent` % of partition p (memory: the same share).
  void Put(const Workload& w, PartitionIndex p, int percent) {
    const int64_t memory = c_.partition(p).memory_mib * percent / 100;
    const model::NodeIndex node = c_.gpu(c_.partition(p).gpu).node;
    ASSERT_TRUE(c_.Place(w, {w.id, node, {{p, percent * 10, memory}}}));
  }
  void Util(PartitionIndex p, double u) { telemetry_.SetUtilization(c_.partition(p).uuid, u); }

  predict::Predictor predictor_;
  telemetry::StaticTelemetry telemetry_;
  Predictive policy_;
  ClusterState c_;
};

TEST(PredictiveFormulaTest, ScoreFunctions) {
  // err = |SLO − expected| / SLO; score1 = 1/(1+(err+1)²); score2 = 1/(1+err).
  EXPECT_DOUBLE_EQ(Err(20, 15), 0.25);
  EXPECT_DOUBLE_EQ(Err(20, 25), 0.25);
  EXPECT_DOUBLE_EQ(Score1(0), 0.5);  // 1 / (1 + 1)
  EXPECT_DOUBLE_EQ(Score1(1), 0.2);  // 1 / (1 + 4)
  EXPECT_DOUBLE_EQ(Score2(0), 1.0);
  EXPECT_DOUBLE_EQ(Score2(0.25), 0.8);
  // X = {one negative at err 1 (score1 0.2), three positive at err 0.25 (score2 0.8)}: k = 1/4,
  // 100 · (1 − 0.6) · (0.25 · 0.2 + 0.75 · 0.8) = 40 · 0.65 = 26.
  std::vector<MemberScore> x(4);
  x[0].slo = 20, x[0].expected = 0;
  for (int i = 1; i < 4; ++i) x[i].slo = 20, x[i].expected = 25;
  const SetScore s = ScoreSet(x, 0.6);
  EXPECT_DOUBLE_EQ(s.k, 0.25);
  EXPECT_EQ(s.negative, 1);
  EXPECT_EQ(s.positive, 3);
  EXPECT_NEAR(s.score, 26.0, 1e-12);
  EXPECT_DOUBLE_EQ(ScoreSet({}, 0).score, 0.0);
}

TEST_F(PredictiveTest, AloneOnAnIdlePartitionPicksTheShareClosestAboveTheSlo) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 1, 64000, 1 << 20)));
  const PartitionIndex p = ClusterState::PartitionOf(0, 0);
  // x = a, SLO 18, alone (X_neg empty, k = 0), util 0:
  //   100%: 40 → err 22/18 = 1.2222, score2 = 0.45  → 45
  //    50%: 30 → err 12/18 = 0.6667, score2 = 0.6   → 60
  //    25%: 20 → err  2/18 = 0.1111, score2 = 0.9   → 90   ← bound at 25%, 8 GiB pinned
  Util(p, 0);
  const std::optional<Candidate> cand = policy_.Score(App(1, "a", 18), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_NEAR(cand->score, 90.0, 1e-9);
  ASSERT_EQ(cand->placement.slices.size(), 1u);
  EXPECT_EQ(cand->placement.slices[0].partition, p);
  EXPECT_EQ(cand->placement.slices[0].milli, 250);
  EXPECT_EQ(cand->placement.slices[0].memory_mib, 32 * 1024 / 4);
  std::vector<PartitionOption> options = policy_.Options(App(1, "a", 18), 0, c_);
  ASSERT_EQ(options.size(), 3u);
  EXPECT_NEAR(options[1].set.score, 60.0, 1e-9);
  EXPECT_NEAR(options[2].set.score, 45.0, 1e-9);
  // util 0.6 scales everything by 0.4: 90 → 36.
  Util(p, 0.6);
  EXPECT_NEAR(policy_.Score(App(1, "a", 18), 0, c_)->score, 36.0, 1e-9);
}

TEST_F(PredictiveTest, HeadroomScoresAgainstARaisedTarget) {
  // Option slo_headroom 0.25 (not in the thesis): x = a, SLO 18 is scored against 22.5.
  //   25%: 20 < 22.5, err 0.1111, score1 = 1/(1 + 1.1111²) = 0.447514 → 44.75
  //   50%: 30, err 0.3333, score2 0.75 → 75   ← now the 50% share wins
  //  100%: 40, err 0.7778, score2 0.5625 → 56.25
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 1, 64000, 1 << 20)));
  Util(ClusterState::PartitionOf(0, 0), 0);
  Predictive headroom(predictor_, &telemetry_, {.slo_headroom = 0.25});
  const std::optional<Candidate> cand = headroom.Score(App(1, "a", 18), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_NEAR(cand->score, 75.0, 1e-9);
  EXPECT_EQ(cand->placement.slices[0].milli, 500);
}

TEST_F(PredictiveTest, EveryMemberOfXCountsPositiveNegativeAndMixed) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 1, 64000, 1 << 20)));
  const PartitionIndex p = ClusterState::PartitionOf(0, 0);
  Util(p, 0);
  // b already runs at 25% (isolated 40); x = a may take 50% or 25% (75% is left).
  struct Row {
    double b_slo, x_slo, score;
    int percent;
  } rows[] = {
      // X_neg empty. b: 40 · (1 − 0.10) = 36 ≥ 30, err 0.2, score2 0.833333.
      //   x at 25%: 20 · 0.95 = 19 ≥ 18, err 0.055556, score2 0.947368 → 100 · mean = 89.0351
      //   x at 50%: 28.5, err 0.583333, score2 0.631579 → 73.2456
      {30, 18, 89.035087719, 25},
      // X_pos empty. b: 36 < 45, err 0.2, score1 = 1/(1 + 1.2²) = 0.409836.
      //   x at 50%: 28.5 < 35, err 0.185714, score1 = 1/(1 + 1.185714²) = 0.415641 → 41.2739
      //   x at 25%: 19 < 35, err 0.457143, score1 0.320178 → 36.5007
      {45, 35, 41.273870, 50},
      // Mixed, k = 1/2. b positive (0.833333), x at 50% negative (0.415641):
      //   100 · (0.5 · 0.415641 + 0.5 · 0.833333) = 62.4487; at 25%: 57.6756.
      {30, 35, 62.448709, 50},
  };
  for (const Row& r : rows) {
    ClusterState fresh = c_;
    const Workload b = App(1, "b", r.b_slo);
    ASSERT_TRUE(fresh.Place(b, {1, 0, {{p, 250, 8 * 1024}}}));
    const std::optional<Candidate> cand = policy_.Score(App(2, "a", r.x_slo), 0, fresh);
    ASSERT_TRUE(cand);
    EXPECT_NEAR(cand->score, r.score, 1e-4) << "b SLO " << r.b_slo << ", x SLO " << r.x_slo;
    EXPECT_EQ(cand->placement.slices[0].milli, r.percent * 10);
  }
}

TEST_F(PredictiveTest, HurtingANeighbourScoresLowerThanAnEmptierPartition) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 2, 64000, 1 << 20)));
  const PartitionIndex busy = ClusterState::PartitionOf(0, 0),
                       idle = ClusterState::PartitionOf(1, 0);
  Util(busy, 0);
  Util(idle, 0);
  Put(App(1, "b", 39), busy, 25);
  // x = a, SLO 18, at 25%. Judged alone, the busy GPU would suit x better: 19 (err 0.0556,
  // score2 0.947) beats 20 alone (err 0.111, score2 0.9). But b drops to 40 · 0.9 = 36 < 39
  // (err 0.076923, score1 = 1/(1 + 1.076923²) = 1/2.159763 = 0.463014), so the busy partition
  // scores 100 · (0.5 · 0.463014 + 0.5 · 0.947368) = 70.5191 and the idle one 90.
  const std::vector<PartitionOption> options = policy_.Options(App(2, "a", 18), 0, c_);
  double busy_best = 0;
  for (const PartitionOption& o : options) {
    if (o.partition == c_.partition(busy).uuid) busy_best = std::max(busy_best, o.set.score);
  }
  EXPECT_NEAR(busy_best, 70.5191, 1e-4);
  const std::optional<Candidate> cand = policy_.Score(App(2, "a", 18), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].partition, idle);
  EXPECT_NEAR(cand->score, 90.0, 1e-9);
}

TEST_F(PredictiveTest, NodeScoreIsTheMaxOverItsPartitions) {
  // A30 cut into 1g.6gb@0, 1g.6gb@1, 2g.12gb@2 (slots 0, 1, 2), x = a, SLO 18:
  //   slot 0 (util 0.5): 1g at 100% → 19, score2 0.947368 → 47.37
  //   slot 1 (util 0):   → 94.7368  ← the middle one wins
  //   slot 2 (util 0):   2g at 50% → 21, err 0.166667, score2 0.857143 → 85.71
  //                      (at 100% → 30, err 0.666667 → 60)
  // The GPU is empty, so a reshape is weighed too, but no layout beats 94.7368 (the best
  // alone is the same 1g at 100%): ties keep the current layout.
  const model::GpuModel& m = model::GetGpuModel(A30());
  ASSERT_TRUE(c_.AddNode(model::UniformNode(
      "n", A30(), 1, 64000, 1 << 20, *model::ParseLayout(m, "1g.6gb@0,1g.6gb@1,2g.12gb@2"))));
  Util(ClusterState::PartitionOf(0, 0), 0.5);
  Util(ClusterState::PartitionOf(0, 1), 0);
  Util(ClusterState::PartitionOf(0, 2), 0);
  const std::optional<Candidate> cand = policy_.Score(App(1, "a", 18), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_NEAR(cand->score, 94.736842, 1e-5);
  EXPECT_EQ(cand->placement.slices[0].partition, ClusterState::PartitionOf(0, 1));
  EXPECT_EQ(cand->placement.slices[0].milli, 1000);
  EXPECT_FALSE(cand->reshape.has_value());
  const std::vector<PartitionOption> options = policy_.Options(App(1, "a", 18), 0, c_);
  double slot0 = 0, slot2 = 0;
  for (const PartitionOption& o : options) {
    if (o.partition == c_.partition(ClusterState::PartitionOf(0, 0)).uuid)
      slot0 = std::max(slot0, o.set.score);
    if (o.partition == c_.partition(ClusterState::PartitionOf(0, 2)).uuid)
      slot2 = std::max(slot2, o.set.score);
  }
  EXPECT_NEAR(slot0, 47.368421, 1e-5);
  EXPECT_NEAR(slot2, 85.714286, 1e-5);
}

TEST_F(PredictiveTest, ReshapesOnlyAnIdleGpuAndOnlyWhenItScoresHigher) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", A30(), 1, 64000, 1 << 20)));  // MIG off
  const PartitionIndex whole = ClusterState::PartitionOf(0, 0);
  Util(whole, 0);
  // x = a, SLO 18: the whole A30 gives 45 (err 1.5, score2 0.4 → 40); a 1g.6gb instance gives
  // 19 (94.74). The layout with the most instances holding a 1g.6gb is 4 × 1g.6gb; x takes
  // its first instance.
  const std::optional<Candidate> cand = policy_.Score(App(1, "a", 18), 0, c_);
  ASSERT_TRUE(cand);
  ASSERT_TRUE(cand->reshape.has_value());
  EXPECT_EQ(cand->reshape->layout,
            *model::ParseLayout(model::GetGpuModel(A30()), "1g.6gb,1g.6gb,1g.6gb,1g.6gb"));
  EXPECT_NEAR(cand->score, 94.736842, 1e-5);
  EXPECT_EQ(cand->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
  EXPECT_EQ(cand->placement.slices[0].milli, 1000);
  // Through the core: the GPU is reshaped and x lands on the first 1g.6gb instance.
  ManualClock clock;
  Rng rng(1);
  sched::Scheduler s(c_, policy_, clock, rng, {});
  ASSERT_TRUE(s.Submit(App(1, "a", 18)));
  EXPECT_EQ(s.RunCycle().bound, 1);
  EXPECT_EQ(c_.gpu(0).partition_count, 4);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
  // Now the GPU hosts a; b (SLO 60) would score best on the whole GPU (70, err 0.1667,
  // score2 0.857), but a hosted GPU is never reshaped: b gets a 1g.6gb instance (30 QPS).
  const std::optional<Candidate> b = policy_.Score(App(2, "b", 60), 0, c_);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->reshape.has_value());
  EXPECT_NE(b->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
}

// In Kubernetes the MIG mode is fixed (the agent never changes it): the same x then takes the
// whole A30, with no reshape to propose.
TEST_F(PredictiveTest, AFixedMigModeIsNeverProposedToChange) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", A30(), 1, 64000, 1 << 20)));  // MIG off
  c_.set_mig_mode_fixed(true);
  Util(ClusterState::PartitionOf(0, 0), 0);
  const std::optional<Candidate> cand = policy_.Score(App(1, "a", 18), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_FALSE(cand->reshape.has_value());
  EXPECT_EQ(cand->placement.slices[0].partition, ClusterState::PartitionOf(0, 0));
}

TEST_F(PredictiveTest, MemoryRulesOutSmallSharesAndWholeNodes) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 1, 64000, 1 << 20)));
  Util(ClusterState::PartitionOf(0, 0), 0);
  // 10 GiB does not fit a 25% share (8 GiB): the best is 50% (score 60), not 25% (90).
  const std::optional<Candidate> cand = policy_.Score(App(1, "a", 18, 10 * 1024), 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_EQ(cand->placement.slices[0].milli, 500);
  EXPECT_NEAR(cand->score, 60.0, 1e-9);
  // 40 GiB fits nowhere on a 32 GiB GPU: filtered, with the reason.
  const Feasibility f = policy_.Filter(App(2, "a", 18, 40 * 1024), 0, c_);
  EXPECT_FALSE(f.ok());
  EXPECT_NE(f.reason.find("memory"), std::string_view::npos);
}

TEST_F(PredictiveTest, UnknownApplicationsFallBackToFirstFit) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 1, 64000, 1 << 20)));
  Util(ClusterState::PartitionOf(0, 0), 0.25);
  Workload w = App(1, "never-profiled", 10);
  w.gpu.milli = 1000;
  const std::optional<Candidate> cand = policy_.Score(w, 0, c_);
  ASSERT_TRUE(cand);
  EXPECT_NEAR(cand->score, 75.0, 1e-9);  // 100 · (1 − 0.25)
  EXPECT_EQ(cand->placement.slices[0].milli, 1000);
  EXPECT_NE(policy_.Explain(w, c_).find("does not know its application"), std::string::npos);
}

TEST_F(PredictiveTest, ExplainPrintsTheBreakdownBestFirst) {
  ASSERT_TRUE(c_.AddNode(model::UniformNode("n", V100(), 1, 64000, 1 << 20)));
  const PartitionIndex p = ClusterState::PartitionOf(0, 0);
  Util(p, 0);
  Put(App(1, "b", 30), p, 25);
  const std::string text = policy_.Explain(App(2, "a", 18), c_);
  // Two options (50%, 25%), the 25% one first with its members.
  EXPECT_NE(text.find("2 candidate partition options"), std::string::npos) << text;
  const size_t first = text.find("score  89.04"), second = text.find("score  73.25");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_NE(text.find("MPS 25%"), std::string::npos);
  EXPECT_NE(text.find("k 0.00 (0 neg, 2 pos)"), std::string::npos) << text;
  // b's row: SLO 30, isolated 40, interference 0.100, expected 36, err 0.200, score2 0.833.
  EXPECT_NE(text.find("30.00     40.00    0.100     36.00   0.200       -   0.833"),
            std::string::npos)
      << text;
}

TEST(PredictiveRegistryTest, NeedsAPredictorAndValidatesOptions) {
  EXPECT_FALSE(MakePolicy("predictive", {}).has_value());
  predict::Predictor p = TwoAppPredictor();
  PolicyContext ctx;
  ctx.predictor = &p;
  EXPECT_TRUE(MakePolicy("predictive", ctx).has_value());
  EXPECT_TRUE(MakePolicy("predictive", ctx, {{"mps_percents", {100, 50}}}).has_value());
  EXPECT_FALSE(MakePolicy("predictive", ctx, {{"mps_percents", {0}}}).has_value());
  EXPECT_FALSE(MakePolicy("predictive", ctx, {{"mps_percents", "all"}}).has_value());
  EXPECT_FALSE(MakePolicy("predictive", ctx, {{"bogus", 1}}).has_value());
  EXPECT_FALSE(MakePolicy("predictive", ctx, {{"slo_headroom", -0.1}}).has_value());
  // An interference kind the predictor has no measurements of is a typo, not "no interference";
  // both predicting policies say so.
  EXPECT_TRUE(MakePolicy("predictive", ctx, {{"interference_kind", "mps"}}).has_value());
  for (const char* name : {"predictive", "slo-aware"}) {
    Expected<std::unique_ptr<Policy>> typo = MakePolicy(name, ctx, {{"interference_kind", "zzz"}});
    ASSERT_FALSE(typo.has_value()) << name;
    EXPECT_NE(typo.error().message.find("no 'zzz' interference measurements"), std::string::npos)
        << typo.error().message;
  }
  // The command-line form: a name, then its options as one JSON object.
  Expected<PolicySpec> spec = ParsePolicySpec(R"(predictive{"slo_headroom": 0.1})");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->name, "predictive");
  EXPECT_DOUBLE_EQ(spec->options.at("slo_headroom").get<double>(), 0.1);
  EXPECT_TRUE(MakePolicy(spec->name, ctx, spec->options).has_value());
  EXPECT_FALSE(ParsePolicySpec("predictive{oops").has_value());
  EXPECT_FALSE(ParsePolicySpec("{}").has_value());
  EXPECT_EQ(ParsePolicySpec("min")->name, "min");
}

TEST(PredictiveOptionsTest, AdvertisedDefaultsAreTheThesis) {
  std::map<std::string, std::string> defaults;
  for (const OptionInfo& o : PredictiveOptionList()) defaults[o.name] = o.default_json;
  EXPECT_EQ(defaults.at("mps_percents"), "[100,50,25]");
  EXPECT_EQ(defaults.at("reshape"), "true");
  EXPECT_EQ(defaults.at("interference_kind"), "\"mps\"");
  EXPECT_EQ(nlohmann::json::parse(defaults.at("slo_headroom")).get<double>(), 0.0);
  // Null is "the default", as an absent key.
  auto o = ParsePredictiveOptions({{"slo_headroom", nullptr}, {"reshape", nullptr}});
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->slo_headroom, 0.0);
  EXPECT_TRUE(o->reshape);
  EXPECT_EQ(o->mps_percents, (std::vector<int>{100, 50, 25}));
}

TEST(PredictiveOptionsTest, ParsesEveryOption) {
  auto o = ParsePredictiveOptions({{"mps_percents", {100, 30}},
                                   {"reshape", false},
                                   {"interference_kind", "mig"},
                                   {"slo_headroom", 0.25}});
  ASSERT_TRUE(o.has_value()) << o.error().message;
  EXPECT_EQ(o->mps_percents, (std::vector<int>{100, 30}));
  EXPECT_FALSE(o->reshape);
  EXPECT_EQ(o->interference_kind, "mig");
  EXPECT_EQ(o->slo_headroom, 0.25);
  // The bounds themselves are allowed.
  EXPECT_TRUE(ParsePredictiveOptions({{"slo_headroom", 1}, {"mps_percents", {1}}}).has_value());
}

TEST(PredictiveOptionsTest, BadValuesNameThePolicyAndTheOption) {
  struct Case {
    nlohmann::json options;
    std::string option;
  };
  const std::vector<Case> cases = {
      {{{"slo_headroom", 1.5}}, "slo_headroom"},
      {{{"slo_headroom", -0.1}}, "slo_headroom"},
      {{{"slo_headroom", "high"}}, "slo_headroom"},
      {{{"mps_percents", nlohmann::json::array()}}, "mps_percents"},
      {{{"mps_percents", {100, 0}}}, "mps_percents"},
      {{{"mps_percents", {101}}}, "mps_percents"},
      {{{"mps_percents", "all"}}, "mps_percents"},
      {{{"reshape", "yes"}}, "reshape"},
      {{{"interference_kind", 3}}, "interference_kind"},
  };
  for (const Case& c : cases) {
    auto o = ParsePredictiveOptions(c.options);
    ASSERT_FALSE(o.has_value()) << c.options.dump();
    EXPECT_NE(o.error().message.find("policy predictive: option '" + c.option + "'"),
              std::string::npos)
        << c.options.dump() << ": " << o.error().message;
  }
}

}  // namespace
}  // namespace tessera::policy
