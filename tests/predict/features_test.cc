#include "predict/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace tessera::predict {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(FeaturesTest, ValuesAreNumbersOrCategories) {
  EXPECT_EQ(std::get<double>(*ParseFeatureValue("32")), 32.0);
  EXPECT_EQ(std::get<double>(*ParseFeatureValue("1.2e8")), 1.2e8);
  EXPECT_EQ(std::get<std::string>(*ParseFeatureValue("bert-base")), "bert-base");
  EXPECT_EQ(std::get<std::string>(*ParseFeatureValue("32k")), "32k");  // not all a number
  EXPECT_FALSE(ParseFeatureValue("").has_value());
  EXPECT_FALSE(ParseFeatureValue("inf").has_value());
  EXPECT_FALSE(ParseFeatureValue("nan").has_value());
  EXPECT_FALSE(ParseFeatureValue("1e999").has_value());  // out of range, not a category
  EXPECT_TRUE(CheckFeatureName("seq_len-2.x").has_value());
  EXPECT_FALSE(CheckFeatureName("Batch").has_value());
  EXPECT_FALSE(CheckFeatureName("").has_value());
  EXPECT_FALSE(CheckFeatureName("a b").has_value());
}

TEST(FeaturesTest, SetRejectsAKindConflictAndChangesNothing) {
  FeatureTable t;
  ASSERT_TRUE(t.Set("a", {{"batch", 8.0}, {"model", std::string("bert")}}).has_value());
  // batch is numeric in the table: a categorical batch is refused, with nothing applied.
  Expected<void> bad = t.Set("b", {{"seq", 64.0}, {"batch", std::string("big")}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("application 'b': feature 'batch' is categorical"),
            std::string::npos);
  EXPECT_EQ(t.Find("b"), nullptr);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(t.Set("c", {{"Bad", 1.0}}).has_value());
  EXPECT_FALSE(t.Set("c", {{"x", std::string("")}}).has_value());
  EXPECT_FALSE(t.Set("c", {{"x", INFINITY}}).has_value());
}

TEST(FeaturesTest, CsvRoundTripsAndMalformedLinesNameFileAndLine) {
  const std::string good = Write("features_good.csv",
                                 "app,feature,value\nbert/bs8,batch,8\nbert/bs8,model,bert\n"
                                 "resnet/bs4,batch,4\n");
  Expected<FeatureTable> t = FeatureTable::LoadCsv(good);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->size(), 2u);
  EXPECT_EQ(std::get<double>(t->Find("bert/bs8")->at("batch")), 8.0);
  const std::string saved = testing::TempDir() + "/features_saved.csv";
  ASSERT_TRUE(t->SaveCsv(saved).has_value());
  Expected<FeatureTable> again = FeatureTable::LoadCsv(saved);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->apps(), t->apps());

  struct Case {
    std::string text, expect;
  };
  for (const Case& c : {
           Case{"app,feature\na,b\n", "value"},                             // missing column
           Case{"app,feature,value\na,batch,8\na,Batch,8\n", ":3"},        // bad name
           Case{"app,feature,value\na,batch,8\nb,batch,\n", ":3"},         // empty value
           Case{"app,feature,value\na,batch,8\na,batch,9\n", ":3"},        // given twice
           Case{"app,feature,value\n,batch,8\n", ":2"},                    // empty app
           Case{"app,feature,value\na,batch,8\nb,batch,many\n", ":3: column 'value': feature 'batch' is categorical"},
       }) {
    const std::string path = Write("features_bad.csv", c.text);
    Expected<FeatureTable> bad = FeatureTable::LoadCsv(path);
    ASSERT_FALSE(bad.has_value()) << c.text;
    EXPECT_NE(bad.error().message.find(c.expect), std::string::npos) << bad.error().message;
    EXPECT_NE(bad.error().message.find("features_bad.csv"), std::string::npos);
  }
}

TEST(FeaturesTest, EncodeLogsStandardisesAndOneHots) {
  FeatureTable t;
  ASSERT_TRUE(t.Set("a", {{"batch", 1.0}, {"model", std::string("x")}}).has_value());
  ASSERT_TRUE(t.Set("b", {{"batch", 100.0}, {"model", std::string("y")}}).has_value());
  ASSERT_TRUE(t.Set("c", {{"model", std::string("x")}}).has_value());  // no batch
  const EncodedFeatures f = Encode(t, {"a", "b", "c", "unknown"});
  // batch: log 1 = 0, log 100 = 4.605; mean 2.303, sample sd 3.256 -> -0.7071, +0.7071.
  ASSERT_EQ(f.names, (std::vector<std::string>{"batch", "model"}));
  ASSERT_EQ(f.x.cols(), 3);  // batch, model=x, model=y
  EXPECT_NEAR(f.x(0, 0), -std::sqrt(0.5), 1e-12);
  EXPECT_NEAR(f.x(1, 0), std::sqrt(0.5), 1e-12);
  EXPECT_TRUE(std::isnan(f.x(2, 0)));
  EXPECT_TRUE(f.HasAny(2));
  EXPECT_FALSE(f.HasAny(3));
  // Squared distances: a-b batch (√2)² = 2 plus model 1 -> 3; a-c batch missing (1) + same
  // model (0) -> 1; b-c 1 + 1 -> 2; anything to the featureless row: 2 penalties.
  const Eigen::MatrixXd d = SquaredDistances(f);
  EXPECT_NEAR(d(0, 1), 3.0, 1e-12);
  EXPECT_NEAR(d(0, 2), 1.0, 1e-12);
  EXPECT_NEAR(d(1, 2), 2.0, 1e-12);
  EXPECT_NEAR(d(0, 3), 2.0, 1e-12);
  EXPECT_EQ(d(2, 2), 0.0);
  EXPECT_EQ(d(1, 0), d(0, 1));
}

}  // namespace
}  // namespace tessera::predict
