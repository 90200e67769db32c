#include "telemetry/prometheus_telemetry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "telemetry/fake_prometheus.h"

namespace tessera::telemetry {
namespace {

using testing_support::FakePrometheus;

std::string Matrix(const std::string& series) {
  return R"({"status":"success","data":{"resultType":"matrix","result":[)" + series + "]}}";
}

// A whole GPU (labelled by UUID only), a MIG instance labelled by the agent's partition_uuid,
// and a MIG instance of plain dcgm-exporter (UUID + GPU_I_ID only). SM clocks and DRAM_ACTIVE
// are exported for nothing but GPU-a; two pods report their own use, one of them on two GPUs.
FakePrometheus::Reply Healthy(const std::string& path, const std::string& query) {
  auto vector = [](const char* a, const char* b, const char* c) {
    return FakePrometheus::Reply{
        200, std::string(R"({"status":"success","data":{"resultType":"vector","result":[)") +
                 R"({"metric":{"UUID":"GPU-a"},"value":[100,")" + a + R"("]},)" +
                 R"({"metric":{"UUID":"GPU-b","GPU_I_ID":"1","partition_uuid":"MIG-b1"},)" +
                 R"("value":[100,")" + b + R"("]},)" +
                 R"({"metric":{"UUID":"GPU-c","GPU_I_ID":"2"},"value":[100,")" + c + R"("]}]}})"};
  };
  auto has = [&](const char* what) { return query.find(what) != std::string::npos; };
  if (path == "/api/v1/query_range") {
    if (has("tessera_pod_fb_used_mib")) {
      return {200, Matrix(R"({"metric":{"namespace":"default","pod":"web"},)"
                          R"("values":[[90,"3072"],[95,"4096"],[100,"NaN"]]},)"
                          R"({"metric":{"namespace":"default"},"values":[[100,"1"]]})")};
    }
    if (has("tessera_pod_sm_active")) {
      return {200, Matrix(R"({"metric":{"namespace":"ml","pod":"train"},)"
                          R"("values":[[95,"0.3"],[100,"0.5"]]})")};
    }
    if (has("tessera_pod_dram_active")) return {200, Matrix("")};  // nobody exports it
    if (has("SM_ACTIVE")) {
      return {200, Matrix(R"({"metric":{"UUID":"GPU-b","GPU_I_ID":"1","partition_uuid":)"
                          R"("MIG-b1"},"values":[[90,"0.2"],[100,"0.6"]]})")};
    }
    if (has("DRAM_ACTIVE")) {
      return {200, Matrix(R"({"metric":{"UUID":"GPU-a"},"values":[[95,"0.25"],[100,"0.5"]]})")};
    }
    return {200, Matrix(R"({"metric":{"UUID":"GPU-a"},)"
                        R"("values":[[90,"1000"],[95,"1500"],[100,"2048"]]})")};
  }
  if (has("GR_ENGINE_ACTIVE")) return vector("0.5", "0.25", "0.75");
  if (has("FB_USED")) return vector("2048", "512", "NaN");
  if (has("SM_ACTIVE")) return vector("0.6", "0.2", "0.9");
  if (has("SM_CLOCK")) {
    return {200, R"({"status":"success","data":{"resultType":"vector","result":[)"
                 R"({"metric":{"UUID":"GPU-a"},"value":[100,"1410"]}]}})"};
  }
  if (has("POWER_USAGE")) return vector("300", "150", "100");
  return {400, R"({"status":"error","errorType":"bad_data","error":"unexpected query"})"};
}

class PrometheusTelemetryTest : public testing::Test {
 protected:
  void SetUp() override {
    prom_.Set(Healthy);
    PrometheusTelemetryOptions o;
    o.server = {prom_.url(), 1};
    o.staleness_bound_s = 30;
    auto t = PrometheusTelemetry::Create(o, clock_);
    ASSERT_TRUE(t) << t.error().message;
    telemetry_ = std::move(*t);
    telemetry_->SetMigInstances({{{"GPU-c", 2}, "MIG-c2"}});
  }
  FakePrometheus prom_;
  ManualClock clock_{1000};
  std::unique_ptr<PrometheusTelemetry> telemetry_;
};

TEST_F(PrometheusTelemetryTest, UnknownBeforeTheFirstRefresh) {
  EXPECT_EQ(telemetry_->Utilization("GPU-a"), std::nullopt);
  EXPECT_TRUE(telemetry_->Health().stale);
  EXPECT_EQ(telemetry_->Health().age_s, -1);
}

TEST_F(PrometheusTelemetryTest, RefreshMapsSeriesToPartitions) {
  ASSERT_TRUE(telemetry_->Refresh());
  EXPECT_EQ(telemetry_->Utilization("GPU-a"), 0.5);
  EXPECT_EQ(telemetry_->Utilization("MIG-b1"), 0.25);         // by partition_uuid
  EXPECT_EQ(telemetry_->Utilization("MIG-c2"), 0.75);         // by (UUID, GPU_I_ID)
  EXPECT_EQ(telemetry_->Utilization("GPU-b"), std::nullopt);  // only its instance has data
  EXPECT_EQ(telemetry_->MemoryUsedMib("GPU-a"), 2048);
  EXPECT_EQ(telemetry_->MemoryUsedMib("MIG-c2"), std::nullopt);  // NaN is unknown, not 0
  EXPECT_EQ(telemetry_->PowerWatts("MIG-b1"), 150);
  // The last 5 s of the range: samples at t ≥ 100 − 5.
  EXPECT_EQ(telemetry_->MemoryUsed("GPU-a", 5), (Series{{95, 1500}, {100, 2048}}));
  EXPECT_EQ(telemetry_->Health().partitions, 3u);
}

// Seeds 003/004 read SM and bandwidth series beside memory, and a pod's own use; MuxFlow
// (seed 001) reads SM activity and clock. The queries are the agent's names, collapsed as
// documented: a partition's series by (UUID, GPU_I_ID, partition_uuid), a pod's memory summed
// and its activity maximised over its partitions.
TEST_F(PrometheusTelemetryTest, RefreshReadsSmBandwidthAndEachPodsOwnUse) {
  std::vector<std::string> queries;
  std::mutex mu;
  prom_.Set([&](const std::string& path, const std::string& query) {
    std::lock_guard lock(mu);
    queries.push_back(path + " " + query);
    return Healthy(path, query);
  });
  ASSERT_TRUE(telemetry_->Refresh());
  EXPECT_EQ(telemetry_->SmActivity("GPU-a"), 0.6);
  EXPECT_EQ(telemetry_->SmActivity("MIG-c2"), 0.9);
  EXPECT_EQ(telemetry_->SmClockMhz("GPU-a"), 1410);
  EXPECT_EQ(telemetry_->SmClockMhz("MIG-b1"), std::nullopt);  // not exported for it
  EXPECT_EQ(telemetry_->SmActivitySeries("MIG-b1", 60), (Series{{90, 0.2}, {100, 0.6}}));
  EXPECT_EQ(telemetry_->SmActivitySeries("GPU-a", 60), std::nullopt);
  EXPECT_EQ(telemetry_->BandwidthSeries("GPU-a", 1), (Series{{100, 0.5}}));
  // A pod's own use, by its workload name; NaN samples are dropped, not zeros.
  EXPECT_EQ(telemetry_->MemoryUsed("default/web", 60), (Series{{90, 3072}, {95, 4096}}));
  EXPECT_EQ(telemetry_->SmActivitySeries("ml/train", 60), (Series{{95, 0.3}, {100, 0.5}}));
  EXPECT_EQ(telemetry_->SmActivity("ml/train"), 0.5);  // a pod's now: its series' last point
  EXPECT_EQ(telemetry_->SmActivity("default/web"), std::nullopt);  // it exports no SM series
  EXPECT_EQ(telemetry_->BandwidthSeries("ml/train", 60), std::nullopt);
  EXPECT_EQ(telemetry_->MemoryUsed("default/", 60), std::nullopt);  // no pod label: ignored
  EXPECT_EQ(telemetry_->Health().partitions, 3u);  // pods are not partitions
  auto asked = [&](const std::string& q) {
    return std::find(queries.begin(), queries.end(), q) != queries.end();
  };
  EXPECT_TRUE(asked("/api/v1/query max by (UUID, GPU_I_ID, partition_uuid) "
                    "(DCGM_FI_DEV_SM_CLOCK)"));
  EXPECT_TRUE(asked("/api/v1/query_range max by (UUID, GPU_I_ID, partition_uuid) "
                    "(DCGM_FI_PROF_DRAM_ACTIVE)"));
  EXPECT_TRUE(asked("/api/v1/query_range sum by (namespace, pod) (tessera_pod_fb_used_mib)"));
  EXPECT_TRUE(asked("/api/v1/query_range max by (namespace, pod) (tessera_pod_sm_active)"));
  EXPECT_TRUE(asked("/api/v1/query_range max by (namespace, pod) (tessera_pod_dram_active)"));
  EXPECT_EQ(queries.size(), 11u);  // five instant, six range
}

TEST_F(PrometheusTelemetryTest, OutageServesLastValuesWithinTheBoundThenUnknown) {
  ASSERT_TRUE(telemetry_->Refresh());
  prom_.Set([](const std::string&, const std::string&) {
    return FakePrometheus::Reply{
        503, R"({"status":"error","errorType":"unavailable","error":"TSDB not ready"})"};
  });
  clock_.Advance(20);
  auto r = telemetry_->Refresh();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("TSDB not ready"), std::string::npos) << r.error().message;
  EXPECT_EQ(telemetry_->Utilization("GPU-a"), 0.5);  // 20 s old ≤ 30 s: last good value
  TelemetryHealth h = telemetry_->Health();
  EXPECT_EQ(h.refreshes, 1);
  EXPECT_EQ(h.failures, 1);
  EXPECT_DOUBLE_EQ(h.age_s, 20);
  EXPECT_FALSE(h.stale);
  clock_.Advance(11);  // 31 s > 30 s
  EXPECT_EQ(telemetry_->Utilization("GPU-a"), std::nullopt);
  EXPECT_EQ(telemetry_->MemoryUsed("GPU-a", 60), std::nullopt);
  EXPECT_EQ(telemetry_->SmActivity("GPU-a"), std::nullopt);
  EXPECT_EQ(telemetry_->MemoryUsed("default/web", 60), std::nullopt);
  EXPECT_TRUE(telemetry_->Health().stale);
  const std::string text = telemetry_->MetricsText();
  EXPECT_NE(text.find("tessera_telemetry_stale 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tessera_telemetry_refresh_failures_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("tessera_telemetry_age_seconds 31.000\n"), std::string::npos);
  // Recovery brings values back.
  prom_.Set(Healthy);
  ASSERT_TRUE(telemetry_->Refresh());
  EXPECT_EQ(telemetry_->Utilization("GPU-a"), 0.5);
}

TEST_F(PrometheusTelemetryTest, LookupsNeverQueryTheServer) {
  ASSERT_TRUE(telemetry_->Refresh());
  const int after_refresh = prom_.requests();
  for (int i = 0; i < 1000; ++i) (void)telemetry_->Utilization("GPU-a");
  EXPECT_EQ(prom_.requests(), after_refresh);
}

TEST_F(PrometheusTelemetryTest, PollerRefreshesInTheBackground) {
  telemetry_->StartPolling(0.05);
  for (int i = 0; i < 200 && telemetry_->Health().refreshes < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  telemetry_->StopPolling();
  EXPECT_GE(telemetry_->Health().refreshes, 2);
  EXPECT_EQ(telemetry_->Utilization("GPU-a"), 0.5);
}

TEST(StaticTelemetryTest, UnknownUnlessSet) {
  StaticTelemetry t;
  EXPECT_EQ(t.Utilization("GPU-x"), std::nullopt);
  t.SetUtilization("GPU-x", 0);
  EXPECT_EQ(t.Utilization("GPU-x"), 0.0);  // a known zero is not unknown
  t.AddMemorySample("GPU-x", 0, 100);
  t.AddMemorySample("GPU-x", 10, 200);
  t.AddMemorySample("GPU-x", 20, 300);
  EXPECT_EQ(t.MemoryUsedMib("GPU-x"), 300);
  EXPECT_EQ(t.MemoryUsed("GPU-x", 10), (Series{{10, 200}, {20, 300}}));
  t.Forget("GPU-x");
  EXPECT_EQ(t.Utilization("GPU-x"), std::nullopt);
}

// UtilizationVersion moves with a utilisation only: a pod's QPS or SM activity moves Version
// but leaves every utilisation, and so the policies' cached utils, as they were (#39).
TEST(StaticTelemetryTest, UtilizationVersionMovesOnlyWithAUtilization) {
  StaticTelemetry t;
  t.SetUtilization("GPU-a", 0.5);
  const std::optional<uint64_t> util = t.UtilizationVersion();
  const std::optional<uint64_t> all = t.Version();
  t.SetWorkloadQps("pod-1", 12);
  t.SetSmActivity("pod-1", 0.4);
  t.SetUtilization("GPU-a", 0.5);  // the same value: nothing moves
  t.Forget("pod-1");               // had no utilisation
  EXPECT_NE(t.Version(), all);
  EXPECT_EQ(t.UtilizationVersion(), util);
  t.SetUtilization("GPU-a", 0.6);
  const std::optional<uint64_t> after_set = t.UtilizationVersion();
  EXPECT_NE(after_set, util);
  t.Forget("GPU-a");
  EXPECT_NE(t.UtilizationVersion(), after_set);
  EXPECT_EQ(t.Utilization("GPU-a"), std::nullopt);
}

// The logs behind UtilizationChangedSince and WorkloadQpsChangedSince: each names the keys
// changed after a version, newest first, and says it cannot once older changes were dropped.
TEST(StaticTelemetryTest, ChangedSinceNamesWhatMovedUntilTheLogOverflows) {
  StaticTelemetry t;
  t.SetUtilization("GPU-a", 0.5);
  t.SetWorkloadQps("pod-1", 3);
  const uint64_t util = *t.UtilizationVersion();
  const uint64_t all = *t.Version();
  t.SetUtilization("GPU-b", 0.1);
  t.SetUtilization("GPU-b", 0.1);  // unchanged: not logged
  t.SetWorkloadQps("pod-2", 4);
  t.Forget("GPU-a");
  t.Forget("pod-1");
  std::vector<std::string_view> changed;
  ASSERT_TRUE(t.UtilizationChangedSince(util, &changed));
  EXPECT_EQ(changed, (std::vector<std::string_view>{"GPU-a", "GPU-b"}));
  changed.clear();
  ASSERT_TRUE(t.WorkloadQpsChangedSince(all, &changed));
  EXPECT_EQ(changed, (std::vector<std::string_view>{"pod-1", "pod-2"}));
  changed.clear();
  ASSERT_TRUE(t.WorkloadQpsChangedSince(*t.Version(), &changed));
  EXPECT_TRUE(changed.empty());

  const uint64_t before = *t.UtilizationVersion();
  for (size_t i = 0; i < StaticTelemetry::kChangeLog; ++i) {
    t.SetUtilization("GPU-c", static_cast<double>(i + 1));
  }
  EXPECT_TRUE(t.UtilizationChangedSince(before, &changed));  // exactly full: still whole
  EXPECT_EQ(changed.size(), StaticTelemetry::kChangeLog);
  t.SetUtilization("GPU-c", 0);
  changed.clear();
  EXPECT_FALSE(t.UtilizationChangedSince(before, &changed));
  EXPECT_TRUE(t.UtilizationChangedSince(*t.UtilizationVersion() - 1, &changed));
  // The base class promises nothing.
  struct Bare final : Telemetry {
    std::optional<double> Utilization(std::string_view) const override { return std::nullopt; }
  } bare;
  EXPECT_FALSE(bare.UtilizationChangedSince(0, &changed));
  EXPECT_FALSE(bare.WorkloadQpsChangedSince(0, &changed));
}

// The SM-activity and bandwidth series (Kube-Knots' CBP correlates them), by uuid or by a
// workload's name; SM samples also set the current activity, and Forget drops both.
TEST(StaticTelemetryTest, SmActivityAndBandwidthSeriesByUuidOrWorkload) {
  StaticTelemetry t;
  EXPECT_EQ(t.SmActivitySeries("pod-a", 5), std::nullopt);
  const uint64_t v0 = *t.Version();
  t.AddSmActivitySample("pod-a", 1, 0.2);
  t.AddSmActivitySample("pod-a", 2, 0.4);
  t.AddSmActivitySample("pod-a", 8, 0.9);
  t.AddBandwidthSample("GPU-x", 7, 0.05);
  t.AddBandwidthSample("GPU-x", 8, 0.30);
  EXPECT_EQ(*t.Version(), v0 + 5);
  EXPECT_EQ(t.SmActivity("pod-a"), 0.9);
  EXPECT_EQ(t.SmActivitySeries("pod-a", 6), (Series{{2, 0.4}, {8, 0.9}}));
  EXPECT_EQ(t.BandwidthSeries("GPU-x", 60), (Series{{7, 0.05}, {8, 0.30}}));
  EXPECT_EQ(t.BandwidthSeries("pod-a", 60), std::nullopt);
  t.Forget("pod-a");
  t.Forget("GPU-x");
  EXPECT_EQ(t.SmActivitySeries("pod-a", 6), std::nullopt);
  EXPECT_EQ(t.BandwidthSeries("GPU-x", 60), std::nullopt);
}

}  // namespace
}  // namespace tessera::telemetry
