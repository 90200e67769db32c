#include <gtest/gtest.h>

#include "sim/knots.h"

namespace tessera::sim {
namespace {

KnotsRun Mean(std::string policy, double jct) {
  KnotsRun r;
  r.policy = std::move(policy);
  r.gpu_util_mean = 0.3;
  r.jct_s_mean = jct;
  r.energy_j = 2.5e6;
  r.qos_violations = 1;
  r.oom_kills = 4;
  return r;
}

TEST(KnotsReportTest, TheJsonHasTheIssuesFields) {
  const std::vector<KnotsRun> means = {Mean("whole-gpu", 546), Mean("knots-pp", 253)};
  const nlohmann::json j = KnotsJson(10, means);
  EXPECT_EQ(j["experiment"], "knots");
  EXPECT_EQ(j["seeds"], 10);
  ASSERT_EQ(j["results"].size(), 2u);
  for (const char* key :
       {"policy", "gpu_util_mean", "jct_s_mean", "energy_j", "qos_violations", "oom_kills"}) {
    EXPECT_TRUE(j["results"][1].contains(key)) << key;
  }
  EXPECT_EQ(j["results"][1]["policy"], "knots-pp");
  EXPECT_DOUBLE_EQ(j["results"][1]["jct_s_mean"].get<double>(), 253);
}

// Five bar charts (utilisation, JCT, energy, QoS violations, OOM kills), a bar per policy.
TEST(KnotsReportTest, ThePageHasABarPerPolicyPerMetric) {
  const std::vector<KnotsRun> means = {Mean("whole-gpu", 546), Mean("knots<&>", 253),
                                       Mean("knots-cbp", 254)};
  const std::string html = KnotsHtml(10, means);
  size_t svgs = 0, bars = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  for (size_t at = html.find("<rect"); at != std::string::npos; at = html.find("<rect", at + 1)) {
    ++bars;
  }
  EXPECT_EQ(svgs, 5u);
  EXPECT_GE(bars, 15u);  // the frames may draw rectangles of their own
  EXPECT_NE(html.find("knots&lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("knots<&>"), std::string::npos);
}

TEST(KnotsReportTest, WritesJsonAndHtml) {
  const std::string dir = ::testing::TempDir() + "/knots_report";
  const std::vector<KnotsRun> means = {Mean("knots-pp", 253)};
  auto written =
      WithReport(ExperimentOutput{.json = KnotsJson(1, means)}, dir, KnotsHtml(1, means));
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->written.size(), 2u);
}

}  // namespace
}  // namespace tessera::sim
