#include "predict/migprofiler.h"
#include "shared_data.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tessera::predict {
namespace {

const std::string kData = TESSERA_SHARED_DIR "/data/migprofiler";

TEST(MigProfilerTest, RealDataEachRunCountedOnce) {
  TESSERA_NEED_DATA(kData);
  MigProfilerExtras extras;
  Expected<ProfileMatrix> m = LoadMigProfiler(kData, &extras);
  const MigProfilerStats& stats = extras.stats;
  ASSERT_TRUE(m.has_value()) << m.error().message;
  // A100-40GB: 4 models x (9 batch sizes at seq 64 + 5 sequence lengths at batch 32, sharing
  // bs32/seq64) = 52 apps on 4 instances; A100-80GB: bert-base 13 apps and resnet50 9 batch
  // sizes on 4 instances. 52 + 13 + 9 = 74 apps, 8 configurations, 74 x 4 = 296 cells.
  EXPECT_EQ(m->rows(), 74);
  EXPECT_EQ(m->cols(), 8);
  EXPECT_EQ(m->ObservedCount(), 296);
  // Tables: 4 models x 2 sweeps on the 40 GB GPU + 3 integrated tables on the 80 GB GPU.
  EXPECT_EQ(stats.files, 11);
  // Rows: 40 GB 4 x (36 + 20) = 224; 80 GB 36 + 20 + 36 = 92.
  EXPECT_EQ(stats.rows, 316);
  // The 80 GB bert-base bs32/seq64 runs sit in both its sweeps with the same start time.
  EXPECT_EQ(stats.duplicate_runs, 4);

  // Every application declares what the tables say about it (bert_base_bsz.csv line 2:
  // bert-base-multilingual-cased, 177853440 parameters, seq 64, batch 1; the 80 GB CV table has
  // neither seq_length nor total_params).
  EXPECT_EQ(extras.features.size(), 74u);
  const AppFeatures* bert = extras.features.Find("bert-base-multilingual-cased/bs1/seq64");
  ASSERT_NE(bert, nullptr);
  EXPECT_EQ(std::get<std::string>(bert->at("model")), "bert-base-multilingual-cased");
  EXPECT_EQ(std::get<std::string>(bert->at("task")), "nlp");
  EXPECT_DOUBLE_EQ(std::get<double>(bert->at("params")), 177853440.0);
  EXPECT_DOUBLE_EQ(std::get<double>(bert->at("batch")), 1.0);
  EXPECT_DOUBLE_EQ(std::get<double>(bert->at("seq")), 64.0);
  const AppFeatures* resnet = extras.features.Find("resnet50/bs8");
  ASSERT_NE(resnet, nullptr);
  EXPECT_EQ(std::get<std::string>(resnet->at("task")), "cv");
  EXPECT_EQ(resnet->count("seq"), 0u);
  EXPECT_EQ(resnet->count("params"), 0u);

  const auto at = [&](const std::string& app, const std::string& config) {
    const std::optional<int> r = m->FindRow(app), c = m->FindCol(config);
    EXPECT_TRUE(r && c) << app << " " << config;
    return std::make_pair(*r, *c);
  };
  // bert_base_bsz.csv line 2: batch 1, seq 64, 5 GB instance, 89.53 samples/s.
  auto [r1, c1] = at("bert-base-multilingual-cased/bs1/seq64", "A100-40GB/1g.5gb/100");
  EXPECT_DOUBLE_EQ(m->Mean(r1, c1), 89.53);
  EXPECT_EQ(m->Count(r1, c1), 1);
  // bs32/seq64 on the 40 GB GPU: two distinct runs (batch sweep 604.29, sequence sweep 604.34).
  auto [r2, c2] = at("bert-base-multilingual-cased/bs32/seq64", "A100-40GB/1g.5gb/100");
  EXPECT_EQ(m->Count(r2, c2), 2);
  EXPECT_NEAR(m->Mean(r2, c2), (604.29 + 604.34) / 2, 1e-9);
  // The same 80 GB run listed twice counts once: 113.89.
  auto [r3, c3] = at("bert-base/bs32/seq64", "A100-80GB/7g.80gb/100");
  EXPECT_EQ(m->Count(r3, c3), 1);
  EXPECT_DOUBLE_EQ(m->Mean(r3, c3), 113.89);
  // CV applications carry no sequence length.
  EXPECT_TRUE(m->FindRow("resnet50/bs64").has_value());
  // Apps of one GPU are never measured on the other GPU's profiles.
  EXPECT_FALSE(m->Has(r1, *m->FindCol("A100-80GB/1g.10gb/100")));
}

class MigProfilerBadDataTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("migprof_{}", ::getpid());
    std::filesystem::create_directories(dir_ / "A100-40g/infer_bsz/tiny");
    std::filesystem::create_directories(dir_ / "A100-80g/infer/cv");
    good40_ = (dir_ / "A100-40g/infer_bsz/tiny/tiny_bsz.csv").string();
    cv_ = (dir_ / "A100-80g/infer/cv/integrated_result.csv").string();
    Write(good40_,
          "Unnamed: 0,model_name,total_params,seq_length,batch_size,latency,latency_std,"
          "throughput,start_timestamp,end_timestamp,gract_mean,gract_std,fb_used_mean,"
          "fb_used_std,instance_memory\n"
          "0,tiny,1,64,1,10,0,100.5,1000,1120,0.3,0.1,2000,1,5\n"
          "1,tiny,1,64,1,10,0,300.5,2000,2120,0.3,0.1,2000,1,40\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }

  std::filesystem::path dir_;
  std::string good40_, cv_;
};

TEST_F(MigProfilerBadDataTest, GoodTablesLoad) {
  Write(cv_,
        ",Unnamed: 0,model_name,batch_size,latency,latency_std,throughput,start_timestamp,"
        "end_timestamp,mig_profile,gract_mean,gract_std,fb_used_mean,fb_used_std\n"
        "0,0,resnet50,1,5.2,0.1,191.81,1661689886,1661690007,7g.80gb,0.4,0.03,1805,23\n");
  Expected<ProfileMatrix> m = LoadMigProfiler(dir_.string());
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->ObservedCount(), 3);
  EXPECT_DOUBLE_EQ(m->Mean(*m->FindRow("tiny/bs1/seq64"), *m->FindCol("A100-40GB/7g.40gb/100")),
                   300.5);
  EXPECT_DOUBLE_EQ(m->Mean(*m->FindRow("resnet50/bs1"), *m->FindCol("A100-80GB/7g.80gb/100")),
                   191.81);
}

TEST_F(MigProfilerBadDataTest, MalformedRowNamesFileAndLineAndLoadsNothing) {
  // Line 3 has a throughput that is not a number; line 2 was fine, yet nothing is returned.
  Write(cv_,
        ",Unnamed: 0,model_name,batch_size,latency,latency_std,throughput,start_timestamp,"
        "end_timestamp,mig_profile,gract_mean,gract_std,fb_used_mean,fb_used_std\n"
        "0,0,resnet50,1,5.2,0.1,191.81,1661689886,1661690007,7g.80gb,0.4,0.03,1805,23\n"
        "1,0,resnet50,2,5.4,0.1,fast,1661690017,1661690138,7g.80gb,0.4,0.03,1806,11\n");
  Expected<ProfileMatrix> m = LoadMigProfiler(dir_.string());
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find(fmt::format("{}:3:", cv_)), std::string::npos)
      << m.error().message;
  EXPECT_NE(m.error().message.find("throughput"), std::string::npos) << m.error().message;
}

TEST_F(MigProfilerBadDataTest, UnknownInstanceSizeAndBadProfileAreErrors) {
  Write(good40_,
        "Unnamed: 0,model_name,total_params,seq_length,batch_size,latency,latency_std,"
        "throughput,start_timestamp,end_timestamp,gract_mean,gract_std,fb_used_mean,"
        "fb_used_std,instance_memory\n"
        "0,tiny,1,64,1,10,0,100.5,1000,1120,0.3,0.1,2000,1,7\n");
  Expected<ProfileMatrix> m = LoadMigProfiler(dir_.string());
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find(fmt::format("{}:2:", good40_)), std::string::npos)
      << m.error().message;

  std::filesystem::remove(good40_);
  Write(cv_,
        ",Unnamed: 0,model_name,batch_size,latency,latency_std,throughput,start_timestamp,"
        "end_timestamp,mig_profile,gract_mean,gract_std,fb_used_mean,fb_used_std\n"
        "0,0,resnet50,1,5.2,0.1,191.81,1661689886,1661690007,seven,0.4,0.03,1805,23\n");
  m = LoadMigProfiler(dir_.string());
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find(fmt::format("{}:2:", cv_)), std::string::npos)
      << m.error().message;
}

TEST_F(MigProfilerBadDataTest, NoTablesIsAnError) {
  std::filesystem::remove(good40_);
  EXPECT_FALSE(LoadMigProfiler(dir_.string()).has_value());
  EXPECT_FALSE(LoadMigProfiler((dir_ / "missing").string()).has_value());
}

}  // namespace
}  // namespace tessera::predict
