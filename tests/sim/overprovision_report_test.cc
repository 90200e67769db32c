#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/overprovision.h"

namespace tessera::sim {
namespace {

OverprovisionRun Mean(std::string policy, std::string mix, int pct, double pending) {
  OverprovisionRun r;
  r.policy = std::move(policy);
  r.mix = std::move(mix);
  r.overprovision_pct = pct;
  r.pending_s_mean = pending;
  r.e2e_p99_s = 3 * pending;
  r.gpu_mem_used_mean = 20480;
  r.gpu_util_mean = 0.5;
  r.power_w_mean = 44;
  r.energy_j = 30000;
  r.oom_kills = 2;
  return r;
}

TEST(OverprovisionReportTest, TheJsonHasTheIssuesFields) {
  const std::vector<OverprovisionRun> means = {Mean("gpushare", "homogeneous", 0, 200),
                                               Mean("gpushare", "homogeneous", 50, 260)};
  const nlohmann::json j = OverprovisionJson(10, means);
  EXPECT_EQ(j["experiment"], "overprovision");
  EXPECT_EQ(j["seeds"], 10);
  ASSERT_EQ(j["results"].size(), 2u);
  for (const char* key :
       {"policy", "mix", "overprovision_pct", "pending_s_mean", "e2e_p99_s", "gpu_mem_used_mean",
        "gpu_util_mean", "power_w_mean", "energy_j", "oom_kills"}) {
    EXPECT_TRUE(j["results"][1].contains(key)) << key;
  }
  EXPECT_EQ(j["results"][1]["overprovision_pct"], 50);
  EXPECT_DOUBLE_EQ(j["results"][1]["e2e_p99_s"].get<double>(), 780);
}

// Per mix, six plots against the percentage (pending, p99, memory, utilisation, power, energy),
// one line per policy, and the table.
TEST(OverprovisionReportTest, ThePagePlotsEveryMetricPerMix) {
  std::vector<OverprovisionRun> means;
  for (const char* mix : {"homogeneous", "heterogeneous"}) {
    for (const char* policy : {"whole-gpu", "gpushare<&>"}) {
      for (int pct : {0, 50, 100}) means.push_back(Mean(policy, mix, pct, 100 + pct));
    }
  }
  const std::string html = OverprovisionHtml(10, means);
  size_t svgs = 0, lines = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  for (size_t at = html.find("<polyline"); at != std::string::npos;
       at = html.find("<polyline", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(svgs, 12u);
  EXPECT_EQ(lines, 24u);
  EXPECT_NE(html.find("gpushare&lt;&amp;&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("gpushare<&>"), std::string::npos);
}

TEST(OverprovisionReportTest, WritesJsonAndHtml) {
  const std::string dir = ::testing::TempDir() + "/overprovision_report";
  const std::vector<OverprovisionRun> means = {Mean("resource-aware", "homogeneous", 0, 90)};
  auto written = WithReport(ExperimentOutput{.json = OverprovisionJson(1, means)}, dir,
                            OverprovisionHtml(1, means));
  ASSERT_TRUE(written) << written.error().message;
  ASSERT_EQ(written->written.size(), 2u);
  std::ifstream in(dir + "/report.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(text.str())["results"][0]["policy"], "resource-aware");
}

}  // namespace
}  // namespace tessera::sim
