// The experiment registry (sim/experiments.cc): every line is whole and consistent with the
// policy registry, and an experiment runs through it as `tessera simulate` runs it.
#include <gtest/gtest.h>

#include <set>

#include "policy/registry.h"
#include "sim/experiment.h"

namespace tessera::sim {
namespace {

TEST(ExperimentsTest, NamesAreUniqueAndFound) {
  std::set<std::string_view> names;
  for (const Experiment& e : Experiments()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_EQ(FindExperiment(e.name), &e);
    EXPECT_FALSE(e.summary.empty()) << e.name;
    EXPECT_FALSE(e.default_seeds.empty()) << e.name;
    EXPECT_TRUE(e.run) << e.name;
  }
  EXPECT_EQ(FindExperiment("no-such"), nullptr);
  EXPECT_EQ(Experiments().front().name, "thesis");  // the default
}

TEST(ExperimentsTest, EveryFlagReadIsOneSimulateHas) {
  const std::set<std::string_view> flags = {"apps",          "out",       "workloads", "trace",
                                            "cluster-nodes", "nodes",     "inflation", "data",
                                            "reading",       "unprofiled"};
  for (const Experiment& e : Experiments()) {
    for (std::string_view f : e.reads) EXPECT_TRUE(flags.contains(f)) << e.name << " --" << f;
  }
}

// An experiment's defaults are registered policies it can run (a predictor only where it
// builds one), unless it names its own arms.
TEST(ExperimentsTest, DefaultPoliciesAreRegisteredAndRunnable) {
  for (const Experiment& e : Experiments()) {
    if (!e.runs_policies) continue;
    ASSERT_TRUE(e.default_policies) << e.name;
    const std::vector<std::string> defaults = e.default_policies();
    EXPECT_FALSE(defaults.empty()) << e.name;
    if (e.policies_are_arms) continue;
    for (const std::string& p : defaults) {
      auto spec = policy::ParsePolicySpec(p);
      ASSERT_TRUE(spec) << p;
      auto info = policy::FindPolicy(spec->name);
      ASSERT_TRUE(info) << e.name << ": " << p;
      EXPECT_TRUE(e.builds_predictor || !info->needs_predictor) << e.name << ": " << p;
    }
  }
}

// `tessera explain` finds every policy's world, and that world has a scene.
TEST(ExperimentsTest, EveryPolicysWorldHasAnExplainScene) {
  for (const policy::PolicyInfo& p : policy::Policies()) {
    const Experiment* e = FindExperiment(p.world);
    ASSERT_NE(e, nullptr) << p.name << ": " << p.world;
    EXPECT_TRUE(e->explain) << p.name << ": " << p.world;
  }
}

TEST(ExperimentsTest, AnExperimentRunsThroughTheRegistry) {
  const Experiment& knots = *FindExperiment("knots");
  ExperimentArgs args{.policies = {"knots-resag"}, .seeds = {1}};
  std::vector<std::string> progress;
  args.progress = [&](const std::string& line) { progress.push_back(line); };
  auto out = knots.run(args, knots);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->json["experiment"], "knots");
  EXPECT_EQ(out->json["seeds"], 1);
  // One row per mix.
  ASSERT_EQ(out->json["results"].size(), 3u);
  EXPECT_EQ(out->json["results"][0]["policy"], "knots-resag");
  EXPECT_EQ(out->json["results"][2]["mix"], "batch-heavy");
  EXPECT_TRUE(out->table.starts_with("experiment knots: 10 x V100-16GB")) << out->table;
  EXPECT_NE(out->table.find("\nmixed            knots-resag "), std::string::npos) << out->table;
  EXPECT_EQ(progress, (std::vector<std::string>{"knots: inference-heavy knots-resag seed 1",
                                                "knots: mixed knots-resag seed 1",
                                                "knots: batch-heavy knots-resag seed 1"}));
  EXPECT_TRUE(out->written.empty());  // no --out
}

// thesis-scale takes --unprofiled (its scenarios' engines nobody profiled) and --reading (the
// cluster box runs it at time=10): both show in the scenario it reports, and a bad reading is
// refused by the check.
TEST(ExperimentsTest, ThesisScaleTakesUnprofiledEnginesAndAReading) {
  const Experiment& scale = *FindExperiment("thesis-scale");
  ExperimentArgs args{.policies = {"max"},
                      .seeds = {1},
                      .cluster_nodes = 1,
                      .workloads = 12,
                      .unprofiled = 2,
                      .reading = "time=10"};
  ASSERT_TRUE(scale.check(args));
  auto out = scale.run(args, scale);
  ASSERT_TRUE(out) << out.error().message;
  const std::string json = out->json.dump();
  EXPECT_NE(json.find("pods=12,slo=low,nodes=1,unprofiled=2"), std::string::npos) << json;
  EXPECT_NE(json.find("pods=12,slo=high,nodes=1,unprofiled=2"), std::string::npos);
  args.reading = "time=0";
  EXPECT_FALSE(scale.check(args));
}

TEST(ExperimentsTest, ChecksRefuseWhatCannotRunBeforeAnythingRuns) {
  const Experiment& openb = *FindExperiment("openb-alloc");
  ASSERT_TRUE(openb.check);
  EXPECT_FALSE(openb.check(ExperimentArgs{}));  // no --trace
  const Experiment& oo = *FindExperiment("online-offline");
  ASSERT_TRUE(oo.check);
  EXPECT_TRUE(oo.check(ExperimentArgs{.policies = {"muxflow-S{\"fixed_sm_percent\":30}"}}));
  auto bad = oo.check(ExperimentArgs{.policies = {"fgd"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown policy 'fgd'"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
