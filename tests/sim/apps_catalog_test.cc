// The shipped catalogue (data/apps.yaml) encodes the targets docs/simulator.md documents, and
// the applications' `features:` (issue #15) load all or nothing.
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

}  // namespace
}  // namespace tessera::sim
