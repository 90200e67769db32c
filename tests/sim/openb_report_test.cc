#include "sim/openb_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::sim {
namespace {

OpenbRun MakeRun(const std::string& policy, uint64_t seed, double alloc130) {
  OpenbRun r;
  r.policy = policy;
  r.seed = seed;
  r.total_gpus = 10;
  for (int b = 0; b <= kOpenbMaxPct; ++b) {
    r.alloc_pct[b] = std::min<double>(b, alloc130);
    r.frag_pct[b] = 1;
    r.frag_idle_pct[b] = 2;
  }
  return r;
}

TEST(OpenbReportTest, MeansOverSeedsAndWritesCsvAndHtml) {
  const std::vector<OpenbRun> runs = {MakeRun("fgd", 1, 94), MakeRun("fgd", 2, 96),
                                      MakeRun("best-fit", 1, 92)};
  const auto summaries = SummarizeOpenb(runs);
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_DOUBLE_EQ(summaries[0].alloc_pct[130], 95);
  // Sample standard deviation of 94 and 96: sqrt(2 / 1).
  EXPECT_DOUBLE_EQ(summaries[0].alloc_std[130], std::sqrt(2.0));

  const std::string svg = OpenbSvg("t", summaries);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 4u);  // two policies x two panels

  const auto dir =
      std::filesystem::temp_directory_path() / ("openb_report_test_" + std::to_string(::getpid()));
  auto written = WriteOpenbReport(dir.string(), "t", runs);
  ASSERT_TRUE(written) << written.error().message;
  ASSERT_EQ(written->size(), 3u);
  std::ifstream mean((dir / "t_mean.csv").string());
  std::string header;
  std::getline(mean, header);
  EXPECT_EQ(header.rfind("policy,seeds,arrived_pct,alloc_pct", 0), 0u);
  std::filesystem::remove_all(dir);
}

TEST(OpenbReportTest, APolicyWithOptionsIsOneQuotedCsvField) {
  // --policy 'frag-pack{"lookahead":false,"stranding_weight":0}' names the run; its commas and
  // quotes must not split the row (RFC 4180: the field quoted, its quotes doubled).
  const std::vector<OpenbRun> runs = {MakeRun(R"(p{"a":1,"b":2})", 7, 90)};
  const auto dir =
      std::filesystem::temp_directory_path() / ("openb_report_quote_" + std::to_string(::getpid()));
  ASSERT_TRUE(WriteOpenbReport(dir.string(), "t", runs));
  for (const char* file : {"t_runs.csv", "t_mean.csv"}) {
    std::ifstream in((dir / file).string());
    std::string header, row;
    std::getline(in, header);
    std::getline(in, row);
    EXPECT_EQ(row.rfind(R"("p{""a"":1,""b"":2}",)", 0), 0u) << file << ": " << row;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera::sim
