// Against the real Prometheus that scripts/test.sh starts, scraping the real `tessera agent` on
// tests/agent/fake_node.yaml every second. The expected numbers are that file's script.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "base/clock.h"
#include "harness_env.h"
#include "telemetry/prometheus_client.h"
#include "telemetry/prometheus_telemetry.h"

namespace tessera::telemetry {
namespace {

constexpr const char* kMigA = "MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";  // 3g.20gb, 0.42
constexpr const char* kMigB = "MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";  // loops 0.2 / 0.8
constexpr const char* kMigC = "MIG-cccccccc-cccc-4ccc-8ccc-cccccccccccc";  // no script
constexpr const char* kA30 = "GPU-22222222-2222-4222-8222-222222222222";   // 0.65, 8192, 120 W

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class PrometheusIntegrationTest : public testing::Test {
 protected:
  void SetUp() override {
    const char* url = std::getenv("TESSERA_TEST_PROMETHEUS");
    if (url == nullptr || *url == '\0') TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_PROMETHEUS");
    url_ = url;
    if (const char* s = std::getenv("TESSERA_TEST_SCRAPE_INTERVAL")) scrape_s_ = std::atof(s);
    auto c = PrometheusClient::Create({url_, 5});
    ASSERT_TRUE(c) << c.error().message;
    client_.emplace(std::move(*c));
    // Prometheus may not have scraped the agent yet: wait for all of its FB_USED series.
    for (int i = 0; i < 300; ++i) {
      auto r = client_->Query(R"(DCGM_FI_DEV_FB_USED{Hostname="fake-node-1"})");
      if (r && r->size() == 3) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "Prometheus at " << url_ << " never got the agent's series";
  }
  std::unique_ptr<PrometheusTelemetry> Telemetry() {
    PrometheusTelemetryOptions o;
    o.server = {url_, 5};
    o.selector = R"(Hostname="fake-node-1")";
    o.memory_window_s = 60;
    o.memory_step_s = 1;
    auto t = PrometheusTelemetry::Create(o, clock_);
    EXPECT_TRUE(t) << t.error().message;
    return t ? std::move(*t) : nullptr;
  }
  std::string url_;
  double scrape_s_ = 1;
  std::optional<PrometheusClient> client_;
  SteadyClock clock_;
};

TEST_F(PrometheusIntegrationTest, SeriesCarryTheScriptedValuesAndDcgmLabels) {
  auto mig = client_->Query(std::string("DCGM_FI_DEV_FB_USED{partition_uuid=\"") + kMigA + "\"}");
  ASSERT_TRUE(mig) << mig.error().message;
  ASSERT_EQ(mig->size(), 1u);
  const Labels& l = (*mig)[0].labels;
  EXPECT_EQ((*mig)[0].sample.value, 6144);
  EXPECT_EQ(l.at("UUID"), "GPU-11111111-1111-4111-8111-111111111111");
  EXPECT_EQ(l.at("gpu"), "0");
  EXPECT_EQ(l.at("modelName"), "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(l.at("GPU_I_PROFILE"), "3g.20gb");
  EXPECT_EQ(l.at("GPU_I_ID"), "2");
  EXPECT_EQ(l.at("Hostname"), "fake-node-1");
  // A30: 24576 MiB − 8192 used.
  auto free = client_->Query(std::string("DCGM_FI_DEV_FB_FREE{UUID=\"") + kA30 + "\"}");
  ASSERT_TRUE(free && free->size() == 1u);
  EXPECT_EQ((*free)[0].sample.value, 16384);
  auto power = client_->Query(R"(sum(DCGM_FI_DEV_POWER_USAGE{Hostname="fake-node-1"}))");
  ASSERT_TRUE(power && power->size() == 1u);
  EXPECT_EQ((*power)[0].sample.value, 180 + 120);
  // The instance without a script is unknown: no series, not a zero.
  auto none = client_->Query(std::string("DCGM_FI_PROF_GR_ENGINE_ACTIVE{partition_uuid=\"") +
                             kMigC + "\"}");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  // Energy grows at the scripted 120 W = 120,000 mJ/s. While the series is younger than the
  // 5 s window, rate() stops its extrapolation where the counter would go below zero yet still
  // divides by the whole window, so it reads low: wait (at most 15 s) until the series spans
  // the window, then the rate must be the script's.
  const std::string rate_query =
      std::string("rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"") + kA30 + "\"}[5s])";
  double energy_rate = -1;
  for (int i = 0; i < 30; ++i) {
    auto rate = client_->Query(rate_query);
    ASSERT_TRUE(rate) << rate.error().message;
    if (!rate->empty()) {
      energy_rate = (*rate)[0].sample.value;
      if (std::abs(energy_rate - 120000) <= 2000) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_NEAR(energy_rate, 120000, 2000);
  // A malformed query comes back as Prometheus's own error.
  auto bad = client_->Query("sum(");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad_data"), std::string::npos) << bad.error().message;
}

TEST_F(PrometheusIntegrationTest, TelemetryReadsTheScriptBack) {
  auto t = Telemetry();
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Refresh());
  EXPECT_EQ(t->Utilization(kMigA), 0.42);
  EXPECT_EQ(t->Utilization(kA30), 0.65);
  EXPECT_EQ(t->Utilization(kMigC), std::nullopt);
  EXPECT_EQ(t->MemoryUsedMib(kA30), 8192);
  EXPECT_EQ(t->PowerWatts(kA30), 120);
  auto series = t->MemoryUsed(kA30, 60);
  ASSERT_TRUE(series);
  ASSERT_FALSE(series->empty());
  for (const Sample& s : *series) EXPECT_EQ(s.value, 8192);
  const double b = *t->Utilization(kMigB);
  EXPECT_TRUE(b == 0.2 || b == 0.8) << b;
  EXPECT_FALSE(t->Health().stale);
}

// MIG-bbbb's activity flips every 5 s of Unix time. Wait for a flip, then refresh until the
// telemetry shows the new value: the agent samples at scrape time, so it should take at most
// one scrape interval (plus query time).
TEST_F(PrometheusIntegrationTest, ReadsBackAScriptedChangeWithinOneScrapeInterval) {
  auto t = Telemetry();
  ASSERT_TRUE(t);
  std::vector<double> latencies;
  for (int round = 0; round < 3; ++round) {
    const double flip = std::ceil((UnixNow() + 0.3) / 5) * 5;
    const double want = std::fmod(flip, 10) == 0 ? 0.2 : 0.8;
    std::this_thread::sleep_for(std::chrono::duration<double>(flip - UnixNow()));
    double seen_at = -1;
    while (UnixNow() < flip + 10) {
      if (t->Refresh() && t->Utilization(kMigB) == want) {
        seen_at = UnixNow();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_GE(seen_at, 0) << "never saw " << want << " after the flip at " << flip;
    latencies.push_back(seen_at - flip);
  }
  std::sort(latencies.begin(), latencies.end());
  std::printf("read-back after a scripted change: %.3f / %.3f / %.3f s (scrape interval %.1f s)\n",
              latencies[0], latencies[1], latencies[2], scrape_s_);
  RecordProperty("median_readback_s", std::to_string(latencies[1]));
  // One scrape interval, plus slack for a loaded CI machine.
  EXPECT_LE(latencies[1], scrape_s_ + 0.5);
}

}  // namespace
}  // namespace tessera::telemetry

namespace tessera::telemetry {
namespace {

// A daemon's start-up check: the agent's series are there, a metric nobody exports is named.
TEST_F(PrometheusIntegrationTest, RequireSeriesNamesTheFirstMetricPrometheusLacks) {
  auto t = Telemetry();
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->RequireSeries({"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_SM_CLOCK"}).has_value());
  auto missing = t->RequireSeries({"DCGM_FI_DEV_SM_CLOCK", "nv_no_such_series_total"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message,
            "prometheus " + url_ + " has no series nv_no_such_series_total");
}

// A pod's QPS: a series nobody exports is "no series", not zero.
TEST_F(PrometheusIntegrationTest, APodWithoutQpsSeriesIsUnknownNotZero) {
  auto t = Telemetry();
  ASSERT_TRUE(t);
  t->SetWorkloadQueries({{"nowhere/web-0", ""}});
  ASSERT_TRUE(t->Refresh().has_value());
  EXPECT_FALSE(t->WorkloadQps("nowhere/web-0").has_value());
  EXPECT_EQ(t->WhyNoQps("nowhere/web-0"), "no series");
  EXPECT_EQ(t->WhyNoQps("nowhere/never-asked"), "not queried yet");
}

}  // namespace
}  // namespace tessera::telemetry
