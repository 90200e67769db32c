#include "predict/matrix.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "predict/interference.h"

namespace tessera::predict {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("{}_{}", ::getpid(), name)).string();
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(SparseMatrixTest, ObserveKeepsRunningMeanAndVariance) {
  SparseMatrix m;
  const int r = m.AddRow("a"), c = m.AddCol("x");
  EXPECT_FALSE(m.Has(r, c));
  EXPECT_TRUE(std::isnan(m.Mean(r, c)));
  for (const double v : {2.0, 4.0, 6.0}) m.Observe(r, c, v);
  // mean (2+4+6)/3 = 4; sample variance ((2-4)^2 + 0 + (6-4)^2) / (3-1) = 4.
  EXPECT_TRUE(m.Has(r, c));
  EXPECT_DOUBLE_EQ(m.Mean(r, c), 4.0);
  EXPECT_EQ(m.Count(r, c), 3);
  EXPECT_DOUBLE_EQ(m.Variance(r, c), 4.0);
}

TEST(SparseMatrixTest, KeysAreStableIndicesAndGrowingKeepsCells) {
  SparseMatrix m;
  EXPECT_EQ(m.AddRow("a"), 0);
  EXPECT_EQ(m.AddCol("x"), 0);
  m.Observe(0, 0, 1.5);
  // Interleave new rows and columns past the initial column capacity.
  for (int i = 0; i < 20; ++i) {
    const int c = m.AddCol(fmt::format("c{}", i));
    const int r = m.AddRow(fmt::format("r{}", i));
    m.Observe(r, c, i);
  }
  EXPECT_EQ(m.AddRow("a"), 0);
  EXPECT_EQ(m.rows(), 21);
  EXPECT_EQ(m.cols(), 21);
  EXPECT_DOUBLE_EQ(m.Mean(0, 0), 1.5);
  EXPECT_DOUBLE_EQ(m.Mean(*m.FindRow("r7"), *m.FindCol("c7")), 7.0);
  EXPECT_FALSE(m.Has(*m.FindRow("r7"), *m.FindCol("c8")));
  EXPECT_EQ(m.ObservedCount(), 21);
  EXPECT_FALSE(m.FindRow("nope").has_value());
}

TEST(SparseMatrixTest, CsvRoundTrip) {
  SparseMatrix m;
  m.Observe(m.AddRow("bert/bs1"), m.AddCol("A100-40GB/1g.5gb/100"), 89.5);
  m.Observe(m.AddRow("bert/bs1"), m.AddCol("A100-40GB/1g.5gb/100"), 90.5);
  m.Observe(m.AddRow("resnet50/bs8"), m.AddCol("A100-80GB/7g.80gb/100"), 1234.25);
  const std::string path = TempPath("roundtrip.csv");
  ASSERT_TRUE(m.SaveCsv(path).has_value());
  Expected<SparseMatrix> back = SparseMatrix::LoadCsv(path);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->ObservedCount(), 2);
  const int r = *back->FindRow("bert/bs1"), c = *back->FindCol("A100-40GB/1g.5gb/100");
  EXPECT_DOUBLE_EQ(back->Mean(r, c), 90.0);
  EXPECT_EQ(back->Count(r, c), 2);
  EXPECT_DOUBLE_EQ(back->Variance(r, c), 0.5);  // ((0.5)^2 + (0.5)^2) / 1
  EXPECT_DOUBLE_EQ(
      back->Mean(*back->FindRow("resnet50/bs8"), *back->FindCol("A100-80GB/7g.80gb/100")), 1234.25);
  std::filesystem::remove(path);
}

struct BadCsvCase {
  std::string name, text;
  int line;
  std::string why;
};

void PrintTo(const BadCsvCase& c, std::ostream* os) { *os << c.name; }

class BadProfileCsvTest : public testing::TestWithParam<BadCsvCase> {};

TEST_P(BadProfileCsvTest, OneErrorNamingFileAndLineAndNoMatrix) {
  const BadCsvCase& tc = GetParam();
  const std::string path = TempPath(tc.name + ".csv");
  WriteFile(path, tc.text);
  Expected<SparseMatrix> m = SparseMatrix::LoadCsv(path);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find(fmt::format("{}:{}:", path, tc.line)), std::string::npos)
      << m.error().message;
  EXPECT_NE(m.error().message.find(tc.why), std::string::npos) << m.error().message;
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadProfileCsvTest,
    testing::Values(
        BadCsvCase{"fields", "row,column,value\na,x,1\nb,y\n", 3, "expected 3 fields"},
        BadCsvCase{"number", "row,column,value\na,x,1\n\nb,y,12abc\n", 4, "not a finite number"},
        BadCsvCase{"nan", "row,column,value\na,x,nan\n", 2, "not a finite number"},
        BadCsvCase{"count", "row,column,value,count,variance\na,x,1,0,0\n", 2, "count 0"},
        BadCsvCase{"variance", "row,column,value,count,variance\na,x,1,2,-1\n", 2, "negative"},
        BadCsvCase{"duplicate", "row,column,value\na,x,1\nb,x,2\na,x,3\n", 4, "duplicate cell"},
        BadCsvCase{"header", "app,config,qps\na,x,1\n", 1, "missing column 'row'"},
        BadCsvCase{"quote", "row,column,value\na,x,1\n\"b,x,2\n", 3, "never closed"},
        BadCsvCase{"empty", "", 1, "empty file"}),
    [](const testing::TestParamInfo<BadCsvCase>& info) { return info.param.name; });

TEST(SparseMatrixTest, MissingFileNamesThePath) {
  Expected<SparseMatrix> m = SparseMatrix::LoadCsv("/nonexistent/profile.csv");
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("/nonexistent/profile.csv"), std::string::npos);
}

TEST(InterferenceMatricesTest, ObserveValidatesAndCsvRoundTrips) {
  InterferenceMatrices im;
  ASSERT_TRUE(im.Observe("mps", "bert", "resnet", 0.25).has_value());
  ASSERT_TRUE(im.Observe("mps", "bert", "resnet", 0.35).has_value());
  ASSERT_TRUE(im.Observe("mig", "bert", "resnet", 0.0).has_value());
  EXPECT_FALSE(im.Observe("mps", "bert", "resnet", 1.5).has_value());
  EXPECT_FALSE(im.Observe("", "bert", "resnet", 0.1).has_value());
  const std::string path = TempPath("interference.csv");
  ASSERT_TRUE(im.SaveCsv(path).has_value());
  Expected<InterferenceMatrices> back = InterferenceMatrices::LoadCsv(path);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  const SparseMatrix* mps = back->Find("mps");
  ASSERT_NE(mps, nullptr);
  EXPECT_DOUBLE_EQ(mps->Mean(*mps->FindRow("bert"), *mps->FindCol("resnet")), 0.3);
  EXPECT_EQ(mps->Count(*mps->FindRow("bert"), *mps->FindCol("resnet")), 2);
  EXPECT_NE(back->Find("mig"), nullptr);
  EXPECT_EQ(back->Find("timeslice"), nullptr);

  WriteFile(path, "kind,victim,aggressor,value\nmps,a,b,0.2\nmps,a,c,1.2\n");
  Expected<InterferenceMatrices> bad = InterferenceMatrices::LoadCsv(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find(fmt::format("{}:3:", path)), std::string::npos)
      << bad.error().message;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera::predict
