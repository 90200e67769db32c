#include <gtest/gtest.h>

#include "sim/online_offline.h"

namespace tessera::sim {
namespace {

OnlineOfflineRun Mean(std::string policy, double latency) {
  OnlineOfflineRun r;
  r.policy = std::move(policy);
  r.online_latency_mean_ms = latency;
  r.online_latency_p99_ms = 2 * latency;
  r.gpu_util_mean = 0.5;
  r.timeline = {{.hour = 0, .latency_ms = latency, .gpu_util = 0.25, .sm_activity = 0.1},
                {.hour = 1, .latency_ms = latency + 1, .gpu_util = 0.5, .sm_activity = 0.2}};
  return r;
}

TEST(OnlineOfflineReportTest, TheJsonHasTheIssuesFields) {
  const std::vector<OnlineOfflineRun> means = {Mean("online-only", 12), Mean("ts", 20)};
  const nlohmann::json j = OnlineOfflineJson(3, means);
  EXPECT_EQ(j["experiment"], "online-offline");
  EXPECT_EQ(j["seeds"], 3);
  ASSERT_EQ(j["results"].size(), 2u);
  for (const char* key :
       {"policy", "online_latency_mean_ms", "online_latency_p99_ms", "gpu_util_mean",
        "sm_activity_mean", "offline_jct_mean_s", "offline_jobs_done", "evictions", "executions"}) {
    EXPECT_TRUE(j["results"][1].contains(key)) << key;
  }
  EXPECT_EQ(j["results"][1]["policy"], "ts");
  EXPECT_DOUBLE_EQ(j["results"][1]["online_latency_p99_ms"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(j["results"][0]["timeline"][1]["gpu_util"].get<double>(), 0.5);
}

TEST(OnlineOfflineReportTest, ThePageHasTheTableAndThreeTimelines) {
  const std::vector<OnlineOfflineRun> means = {Mean("muxflow<&>", 12)};
  const std::string html = OnlineOfflineHtml(1, means);
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 3u);
  EXPECT_NE(html.find("muxflow&lt;&amp;&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("muxflow<&>"), std::string::npos);
}

TEST(OnlineOfflineReportTest, WritesJsonAndHtml) {
  const std::string dir = ::testing::TempDir() + "/online_offline_report";
  const std::vector<OnlineOfflineRun> means = {Mean("muxflow", 12)};
  auto written = WithReport(ExperimentOutput{.json = OnlineOfflineJson(1, means)}, dir,
                            OnlineOfflineHtml(1, means));
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->written.size(), 2u);
}

}  // namespace
}  // namespace tessera::sim
