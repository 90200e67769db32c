// The shipped catalogue (data/apps.yaml) encodes the targets docs/simulator.md documents, and
// the applications' `features:` load all or nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/apps.h"

namespace tessera::sim {
namespace {

using predict::AppFeatures;
using predict::FeatureValue;

// Roofline time per query on a whole V100-32GB: relative compute 125/312, bandwidth 900/1555.
double V100WholeQps(const AppSpec& a) {
  return 1.0 / (a.compute_s * 312.0 / 125.0 + a.memory_s * 1555.0 / 900.0 + a.fixed_s);
}

TEST(ShippedCatalogTest, ThesisEnginesHitTheirDocumentedV100Throughput) {
  auto catalog = LoadAppCatalog(TESSERA_SOURCE_DIR "/data/apps.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  const std::pair<const char*, double> targets[] = {
      {"onnx/resnet50", 22}, {"onnx/mobilenet", 26}, {"onnx/ssd-mobilenet", 18},
      {"tf/resnet50", 17},   {"tf/mobilenet", 21},   {"tf/ssd-mobilenet", 14}};
  for (const auto& [key, qps] : targets) {
    const AppSpec* a = catalog->Find(key);
    ASSERT_NE(a, nullptr) << key;
    EXPECT_NEAR(V100WholeQps(*a), qps, 0.05 * qps) << key;
  }
  // Thesis Ch. 6.2: small models lose little on a fraction of the GPU. MobileNet at 25% MPS of
  // a V100 (compute share 1/4) keeps more than 90% of its whole-GPU throughput.
  const AppSpec* m = catalog->Find("onnx/mobilenet");
  const double quarter =
      1.0 / (m->compute_s * 4 * 312.0 / 125.0 + m->memory_s * 1555.0 / 900.0 + m->fixed_s);
  EXPECT_GT(quarter / V100WholeQps(*m), 0.9);
}

// Thesis Table 5.3: backend, model, dataset of each engine; parameter counts as published
// (ResNet50 25.6M, MobileNet-v1 224 4.2M; docs/simulator.md).
TEST(ShippedCatalogTest, ThesisEnginesDeclareWhatTheThesisSays) {
  auto catalog = LoadAppCatalog(TESSERA_SOURCE_DIR "/data/apps.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  const predict::FeatureTable table = CatalogFeatures(*catalog);
  EXPECT_EQ(table.size(), 6u);  // the MIGProfiler entries state none (yet)
  const AppFeatures kOnnxResnet{{"dataset", "imagenet"},
                                {"framework", "onnxruntime"},
                                {"model", "resnet50"},
                                {"params", 25.6e6},
                                {"task", "cv"}};
  const AppFeatures kTfSsd{{"dataset", "coco"},
                           {"framework", "tensorflow"},
                           {"model", "ssd-mobilenet-v1"},
                           {"task", "cv"}};
  ASSERT_NE(table.Find("onnx/resnet50"), nullptr);
  EXPECT_EQ(*table.Find("onnx/resnet50"), kOnnxResnet);
  ASSERT_NE(table.Find("tf/ssd-mobilenet"), nullptr);
  EXPECT_EQ(*table.Find("tf/ssd-mobilenet"), kTfSsd);
  EXPECT_EQ(table.Find("tf/mobilenet")->at("params"), FeatureValue(4.2e6));
  EXPECT_EQ(table.Find("tf/mobilenet")->at("model"), FeatureValue("mobilenet-v1"));
  EXPECT_EQ(table.Find("resnet50/bs8"), nullptr);
}

// The shipped file is what SaveAppCatalog writes, so regenerating it (`simulate --experiment
// calibrate --out data/apps.yaml`) keeps the thesis engines' features, in the same form.
TEST(ShippedCatalogTest, SavingTheShippedCatalogueRewritesItUnchanged) {
  const std::string path = TESSERA_SOURCE_DIR "/data/apps.yaml";
  auto catalog = LoadAppCatalog(path);
  ASSERT_TRUE(catalog) << catalog.error().message;
  const std::string copy = ::testing::TempDir() + "/apps_resaved.yaml";
  ASSERT_TRUE(SaveAppCatalog(*catalog, copy));
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(copy), read(path));
}

// One app with the given flow-style features (the app is on line 2).
std::string OneApp(const std::string& features) {
  return "apps:\n  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1, "
         "features: " +
         features + "}\n";
}

TEST(AppFeaturesTest, NumbersAreNumbersAndEverythingElseIsACategory) {
  auto c =
      ParseAppCatalog(OneApp("{model: resnet50, task: cv, batch: 8, params: 25.6e6, seq: '64', "
                             "version: 1.5.0, pretrained: true}"),
                      "apps.yaml");
  ASSERT_TRUE(c) << c.error().message;
  const AppFeatures want{{"model", "resnet50"}, {"task", "cv"}, {"batch", 8.0},
                         {"params", 25.6e6},    {"seq", 64.0},  {"version", "1.5.0"},
                         {"pretrained", "true"}};
  EXPECT_EQ(c->apps[0].features, want);
  EXPECT_EQ(*CatalogFeatures(*c).Find("a"), want);
}

TEST(AppFeaturesTest, FeaturesAreOptional) {
  auto c = ParseAppCatalog(
      "apps:\n"
      "  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}\n"
      "  - {key: b, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1, features: {}}\n"
      "  - {key: c, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1,\n"
      "     features: {batch: 2}}\n",
      "apps.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->apps[0].features.empty());
  EXPECT_TRUE(c->apps[1].features.empty());
  const predict::FeatureTable table = CatalogFeatures(*c);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find("c")->at("batch"), FeatureValue(2.0));
}

struct MalformedCase {
  const char* name;
  std::string yaml;
  const char* prefix;  // the error starts with file:line
  const char* says;    // and contains this
};

// Each case's catalogue is refused with one error that starts with its file:line and says what.
template <size_t N>
void ExpectEachRefused(const MalformedCase (&cases)[N]) {
  for (const MalformedCase& c : cases) {
    auto catalog = ParseAppCatalog(c.yaml, "apps.yaml");
    if (catalog) {
      ADD_FAILURE() << c.name << ": loaded";
      continue;
    }
    const std::string& message = catalog.error().message;
    EXPECT_EQ(message.rfind(c.prefix, 0), 0u) << c.name << ": " << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << c.name << ": " << message;
  }
}

TEST(AppFeaturesTest, MalformedFeaturesAreOneErrorNamingAppAndLine) {
  const std::string two_apps =
      "apps:\n"
      "  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1,\n"
      "     features: {batch: 8}}\n"
      "  - key: b\n"
      "    compute_s: 1\n"
      "    memory_s: 0\n"
      "    fixed_s: 0\n"
      "    footprint_mib: 1\n"
      "    features:\n"
      "      model: bert\n";
  const MalformedCase cases[] = {
      {"list value", OneApp("{model: [a, b]}"),
       "apps.yaml:2:", "app a: feature 'model' must be a number or a word"},
      {"map value", OneApp("{model: {name: a}}"),
       "apps.yaml:2:", "app a: feature 'model' must be a number or a word"},
      {"upper-case name", OneApp("{Model: x}"), "apps.yaml:2:", "app a: feature name 'Model'"},
      {"name with a slash", OneApp("{a/b: x}"), "apps.yaml:2:", "app a: feature name 'a/b'"},
      {"empty value", OneApp("{model: ''}"), "apps.yaml:2:", "app a: feature 'model': empty"},
      {"no value", two_apps + "      batch:\n",
       "apps.yaml:11:", "app b: feature 'batch' has no value"},
      {"infinite number", OneApp("{batch: inf}"),
       "apps.yaml:2:", "app a: feature 'batch': feature value 'inf' is not finite"},
      {"not a number", OneApp("{batch: nan}"),
       "apps.yaml:2:", "app a: feature 'batch': feature value 'nan' is not finite"},
      {"given twice", two_apps + "      model: gpt\n",
       "apps.yaml:11:", "app b: feature 'model' given twice"},
      {"not a map", OneApp("[model, bert]"), "apps.yaml:2:", "app a: 'features' must be a map"},
      {"numeric in one app, categorical in another", two_apps + "      batch: large\n",
       "apps.yaml:10:", "application 'b': feature 'batch' is categorical here but numeric"},
  };
  ExpectEachRefused(cases);
}

TEST(AppFeaturesTest, SaveThenLoadKeepsFeatures) {
  AppCatalog c;
  AppSpec a;
  a.key = "a";
  a.compute_s = 0.01;
  a.footprint_mib = 100;
  a.queries_min = a.queries_max = 10;
  // Words YAML would otherwise read as something else stay words.
  a.features = {{"model", "resnet50"}, {"params", 25.6e6}, {"batch", 0.5},
                {"note", "null"},      {"flag", "yes"},    {"odd", "a: b, {c}"}};
  c.apps.push_back(a);
  const std::string path = ::testing::TempDir() + "/apps_features.yaml";
  ASSERT_TRUE(SaveAppCatalog(c, path));
  auto back = LoadAppCatalog(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->apps[0].features, a.features);
}

// The usage trajectories (sim/usage.h): a phase holds for its duration, the last phase
// holds or the phases loop, and a burst covers the last duration_s of every period_s.
TEST(UsageTrajectoryTest, PhasesHoldOrLoopAndBurstsTakeTheLargerValue) {
  UsageTrajectory u;
  u.phases = {{10, {1000, 0.1, 0.05}}, {20, {3000, 0.5, 0.2}}};
  EXPECT_EQ(u.At(0), (UsagePoint{1000, 0.1, 0.05}));
  EXPECT_EQ(u.At(9.99), (UsagePoint{1000, 0.1, 0.05}));
  EXPECT_EQ(u.At(10), (UsagePoint{3000, 0.5, 0.2}));
  EXPECT_EQ(u.At(100), (UsagePoint{3000, 0.5, 0.2}));  // hold: the last phase stays
  EXPECT_EQ(u.At(-5), (UsagePoint{1000, 0.1, 0.05}));  // before the start: the first
  u.loop = true;
  EXPECT_EQ(u.At(35), (UsagePoint{1000, 0.1, 0.05}));  // 35 mod 30 = 5: phase one again
  EXPECT_EQ(u.At(45), (UsagePoint{3000, 0.5, 0.2}));   // 15: phase two
  // Seed 004's peaks: SM at 0.9 is 9x the first phase's 0.1. Bursts cover [38, 40), [78, 80)…
  u.burst = UsageBurst{40, 2, {2000, 0.9, 0.8}};
  EXPECT_EQ(u.At(37.9), (UsagePoint{1000, 0.1, 0.05}));  // 37.9 mod 30 = 7.9: phase one
  EXPECT_EQ(u.At(38), (UsagePoint{2000, 0.9, 0.8}));     // phase one, bursting: max of each
  EXPECT_EQ(u.At(79), (UsagePoint{3000, 0.9, 0.8}));     // phase two (19), bursting
  EXPECT_EQ(u.At(41), (UsagePoint{3000, 0.5, 0.2}));     // phase two (11), no burst
  EXPECT_EQ(u.PeakMemoryMib(), 3000);
}

// A ramped burst's memory rises linearly over ramp_s; a staggered one plays offset_s later in
// its period; SM and bandwidth still step. Period 100, bursts over [80, 100), ramp 10 s.
TEST(UsageTrajectoryTest, ARampedBurstRisesLinearlyAndAStaggeredOneIsShifted) {
  UsageTrajectory u;
  u.phases = {{1, {1000, 0.1, 0.05}}};
  u.burst = UsageBurst{.period_s = 100, .duration_s = 20, .peak = {3000, 0.5, 0.2}, .ramp_s = 10};
  EXPECT_EQ(u.At(79), (UsagePoint{1000, 0.1, 0.05}));
  EXPECT_EQ(u.At(80), (UsagePoint{1000, 0.5, 0.2}));  // the ramp starts at the phase's memory
  EXPECT_DOUBLE_EQ(u.At(85).memory_mib, 2000);        // half way: 1000 + 0.5 × 2000
  EXPECT_DOUBLE_EQ(u.At(90).memory_mib, 3000);
  EXPECT_DOUBLE_EQ(u.At(99).memory_mib, 3000);
  EXPECT_EQ(u.At(100), (UsagePoint{1000, 0.1, 0.05}));
  EXPECT_DOUBLE_EQ(u.At(55, 30).memory_mib, 1000);  // an offset is ignored unless staggered
  u.burst->staggered = true;
  EXPECT_DOUBLE_EQ(u.At(55, 30).memory_mib, 2000);  // 55 + 30 = 85: half way up
  EXPECT_DOUBLE_EQ(u.At(85, 30).memory_mib, 1000);  // 115 mod 100 = 15: no burst
  EXPECT_EQ(u.PeakMemoryMib(), 3000);
  // Once: the first period's burst only.
  u.burst->staggered = false;
  u.burst->repeat = false;
  EXPECT_DOUBLE_EQ(u.At(95).memory_mib, 3000);
  EXPECT_DOUBLE_EQ(u.At(195).memory_mib, 1000);
}

// The usage block of one app on line 2 (flow style).
std::string UsageApp(const std::string& usage) {
  return "apps:\n  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1, "
         "usage: " +
         usage + "}\n";
}

TEST(UsageTrajectoryTest, AppsYamlDescribesItAndSavingKeepsIt) {
  auto c = ParseAppCatalog(
      UsageApp("{repeat: loop, phases: [{duration_s: 30, memory_mib: 2000, sm: 0.05, "
               "bandwidth: 0.02}, {duration_s: 60, memory_mib: 7000, sm: 0.6, bandwidth: 0.3}], "
               "burst: {period_s: 120, duration_s: 2, memory_mib: 7500, sm: 0.9, bandwidth: 0.8}}"),
      "apps.yaml");
  ASSERT_TRUE(c) << c.error().message;
  const UsageTrajectory& u = c->apps[0].usage;
  ASSERT_EQ(u.phases.size(), 2u);
  EXPECT_TRUE(u.loop);
  EXPECT_EQ(u.phases[1], (UsagePhase{60, {7000, 0.6, 0.3}}));
  ASSERT_TRUE(u.burst);
  EXPECT_EQ(*u.burst, (UsageBurst{120, 2, {7500, 0.9, 0.8}}));
  const std::string path = ::testing::TempDir() + "/apps_usage.yaml";
  ASSERT_TRUE(SaveAppCatalog(*c, path));
  auto back = LoadAppCatalog(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->apps[0].usage, u);
  auto none = ParseAppCatalog(OneApp("{}"), "apps.yaml");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->apps[0].usage.empty());
}

TEST(UsageTrajectoryTest, MalformedUsageIsOneErrorNamingAppAndLine) {
  const std::string phase = "{duration_s: 10, memory_mib: 100, sm: 0.1, bandwidth: 0.1}";
  const MalformedCase cases[] = {
      {"not a map", UsageApp("[1]"), "apps.yaml:2:", "app a: usage must be a map"},
      {"unknown key", UsageApp("{phses: []}"),
       "apps.yaml:2:", "app a: usage: unknown key 'phses' (allowed: repeat, phases, burst)"},
      {"no phases", UsageApp("{repeat: hold}"),
       "apps.yaml:2:", "app a: usage: 'phases' must be a non-empty list"},
      {"empty phases", UsageApp("{phases: []}"),
       "apps.yaml:2:", "app a: usage: 'phases' must be a non-empty list"},
      {"bad repeat", UsageApp("{repeat: forever, phases: [" + phase + "]}"),
       "apps.yaml:2:", "'repeat' must be hold or loop"},
      {"typo in a phase", UsageApp("{phases: [{duration_s: 1, memory: 1}]}"),
       "apps.yaml:2:", "app a: usage phase: unknown key 'memory'"},
      {"missing sm", UsageApp("{phases: [{duration_s: 1, memory_mib: 1, bandwidth: 0}]}"),
       "apps.yaml:2:", "missing 'sm'"},
      {"sm above 1", UsageApp("{phases: [{duration_s: 1, memory_mib: 1, sm: 1.5, bandwidth: 0}]}"),
       "apps.yaml:2:", "app a: usage phase: 'sm' must be in 0..1"},
      {"negative memory",
       UsageApp("{phases: [{duration_s: 1, memory_mib: -1, sm: 0, bandwidth: 0}]}"),
       "apps.yaml:2:", "'memory_mib' must be a finite number >= 0"},
      {"zero duration", UsageApp("{phases: [{duration_s: 0, memory_mib: 1, sm: 0, bandwidth: 0}]}"),
       "apps.yaml:2:", "'duration_s' must be a finite number > 0"},
      {"burst longer than its period",
       UsageApp("{phases: [" + phase +
                "], burst: {period_s: 2, duration_s: 2, memory_mib: 1, sm: 1, bandwidth: 1}}"),
       "apps.yaml:2:", "a burst needs 0 < duration_s < period_s"},
      {"bandwidth NaN in a burst",
       UsageApp("{phases: [" + phase +
                "], burst: {period_s: 9, duration_s: 2, memory_mib: 1, sm: 1, bandwidth: .nan}}"),
       "apps.yaml:2:", "app a: usage burst: 'bandwidth' must be in 0..1"},
  };
  ExpectEachRefused(cases);
}

// MuxFlow's (seed 001) training apps live in their own list, apart from the inference apps.
TEST(TrainingAppsTest, TheyAreParsedApartAndKeysAreUniqueAcrossBothLists) {
  const std::string app = "{key: t, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}";
  auto ok =
      ParseAppCatalog("apps:\n  - " + app + "\ntraining:\n  - " +
                          "{key: u, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}\n",
                      "apps.yaml");
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->apps.size(), 1u);
  ASSERT_EQ(ok->training.size(), 1u);
  EXPECT_EQ(ok->training[0].key, "u");
  EXPECT_EQ(ok->Find("u"), nullptr);
  auto twice = ParseAppCatalog("apps:\n  - " + app + "\ntraining:\n  - " + app + "\n", "apps.yaml");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message.rfind("apps.yaml:4:", 0), 0u) << twice.error().message;
  auto not_a_list = ParseAppCatalog("apps:\n  - " + app + "\ntraining: 3\n", "apps.yaml");
  ASSERT_FALSE(not_a_list);
  EXPECT_NE(not_a_list.error().message.find("'training' must be a list"), std::string::npos);
}

// host_s is optional (0), must not be negative, and survives a save and a load.
TEST(TrainingAppsTest, HostTimeIsOptionalNonNegativeAndSaved) {
  const std::string head =
      "apps:\n  - {key: a, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}\n"
      "training:\n  - {key: u, compute_s: 1, memory_s: 0, fixed_s: 0, ";
  auto none = ParseAppCatalog(head + "footprint_mib: 1}\n", "apps.yaml");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->training[0].host_s, 0);
  auto some = ParseAppCatalog(head + "host_s: 0.25, footprint_mib: 1}\n", "apps.yaml");
  ASSERT_TRUE(some) << some.error().message;
  EXPECT_DOUBLE_EQ(some->training[0].host_s, 0.25);
  auto bad = ParseAppCatalog(head + "host_s: -1, footprint_mib: 1}\n", "apps.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("apps.yaml:4:", 0), 0u) << bad.error().message;
  EXPECT_NE(bad.error().message.find("times must be >= 0"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/host_s.yaml";
  ASSERT_TRUE(SaveAppCatalog(*some, path));
  auto back = LoadAppCatalog(path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_DOUBLE_EQ(back->training[0].host_s, 0.25);
}

// Seed 003's engines live in `sharing`, apart from both; keys unique across all three.
TEST(SharingAppsTest, TheyAreParsedApartAndKeysAreUniqueAcrossTheLists) {
  const std::string app = "{key: t, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}";
  const std::string other = "{key: u, compute_s: 1, memory_s: 0, fixed_s: 0, footprint_mib: 1}";
  auto ok = ParseAppCatalog("apps:\n  - " + app + "\nsharing:\n  - " + other + "\n", "apps.yaml");
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->sharing.size(), 1u);
  EXPECT_EQ(ok->sharing[0].key, "u");
  EXPECT_TRUE(ok->training.empty());
  EXPECT_EQ(ok->Find("u"), nullptr);
  auto twice = ParseAppCatalog(
      "apps:\n  - " + app + "\ntraining:\n  - " + other + "\nsharing:\n  - " + other + "\n",
      "apps.yaml");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message.rfind("apps.yaml:6:", 0), 0u) << twice.error().message;
  auto not_a_list = ParseAppCatalog("apps:\n  - " + app + "\nsharing: {}\n", "apps.yaml");
  ASSERT_FALSE(not_a_list);
  EXPECT_NE(not_a_list.error().message.find("'sharing' must be a list"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
