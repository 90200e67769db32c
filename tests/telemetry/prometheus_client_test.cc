#include "telemetry/prometheus_client.h"

#include <gtest/gtest.h>

#include <cmath>

#include "telemetry/fake_prometheus.h"
#include "telemetry/prometheus_telemetry.h"

namespace tessera::telemetry {
namespace {

using testing_support::FakePrometheus;

TEST(PrometheusClientTest, ParsesVectorsScalarsAndMatrices) {
  auto v = ParseInstantResponse(R"({"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"__name__":"DCGM_FI_DEV_FB_USED","UUID":"GPU-1"},"value":[1700000000.5,"2048"]},
      {"metric":{"UUID":"GPU-2"},"value":[1700000000.5,"NaN"]}]}})");
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].labels.at("UUID"), "GPU-1");
  EXPECT_EQ((*v)[0].sample, (Sample{1700000000.5, 2048}));
  EXPECT_TRUE(std::isnan((*v)[1].sample.value));
  auto s = ParseInstantResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[10,"+Inf"]}})");
  ASSERT_TRUE(s);
  EXPECT_TRUE(std::isinf((*s)[0].sample.value));
  auto m = ParseRangeResponse(R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"UUID":"GPU-1"},"values":[[10,"1"],[15,"2.5"]]}]}})");
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0].samples, (Series{{10, 1}, {15, 2.5}}));
}

TEST(PrometheusClientTest, ErrorBodiesAreReportedWithTheirTypeAndText) {
  FakePrometheus prom;
  prom.Set([](const std::string&, const std::string&) {
    return FakePrometheus::Reply{
        400, R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})"};
  });
  auto c = PrometheusClient::Create({prom.url(), 2});
  ASSERT_TRUE(c);
  auto r = c->Query("sum(");
  ASSERT_FALSE(r);
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("HTTP 400"), std::string::npos) << m;
  EXPECT_NE(m.find("bad_data: parse error at char 5"), std::string::npos) << m;
  EXPECT_NE(m.find("sum("), std::string::npos) << m;      // names the query
  EXPECT_NE(m.find(prom.url()), std::string::npos) << m;  // and the server
}

TEST(PrometheusClientTest, NonJsonAndWrongShapesAreErrors) {
  FakePrometheus prom;
  prom.Set([](const std::string& path, const std::string&) {
    if (path == "/api/v1/query_range") {
      return FakePrometheus::Reply{
          200, R"({"status":"success","data":{"resultType":"vector","result":[]}})"};
    }
    return FakePrometheus::Reply{502, "<html>bad gateway</html>"};
  });
  auto c = PrometheusClient::Create({prom.url(), 2});
  ASSERT_TRUE(c);
  auto r = c->Query("up");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("HTTP 502"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("bad gateway"), std::string::npos) << r.error().message;
  auto range = c->QueryRange("up", 0, 10, 1);
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().message.find("resultType 'vector'"), std::string::npos);
}

TEST(PrometheusClientTest, TimeoutAndUnreachableAreErrors) {
  FakePrometheus prom;
  prom.Set([](const std::string&, const std::string&) {
    return FakePrometheus::Reply{200, "{}", 1.0};  // slower than the client waits
  });
  auto c = PrometheusClient::Create({prom.url(), 0.2});
  ASSERT_TRUE(c);
  auto r = c->Query("up");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("up"), std::string::npos);
  auto gone = PrometheusClient::Create({"http://127.0.0.1:1", 0.5});
  ASSERT_TRUE(gone);
  auto u = gone->Query("up");
  ASSERT_FALSE(u);
  EXPECT_NE(u.error().message.find("127.0.0.1:1"), std::string::npos) << u.error().message;
}

TEST(PrometheusClientTest, RefusesBadUrls) {
  EXPECT_FALSE(PrometheusClient::Create({"localhost:9090", 1}));
  EXPECT_FALSE(PrometheusClient::Create({"ftp://x:1", 1}));
  EXPECT_FALSE(PrometheusClient::Create({"http://", 1}));
  EXPECT_TRUE(PrometheusClient::Create({"https://prom.example/prometheus/", 1}));
}

}  // namespace
}  // namespace tessera::telemetry

namespace tessera::telemetry {
namespace {

TEST(WorkloadQpsQueryTest, SubstitutesNamespaceAndPodEscapedForPromql) {
  EXPECT_EQ(WorkloadQpsQuery(kTritonQpsQuery, "prod", "web-5d8f-x2"),
            R"(sum(rate(nv_inference_request_success{namespace="prod",pod="web-5d8f-x2"}[1m])))");
  // Every occurrence; a quote or backslash cannot end the PromQL string early.
  EXPECT_EQ(WorkloadQpsQuery(R"(a{pod="$pod"} / b{pod="$pod",ns="$namespace"})", "n", R"(x"\y)"),
            R"(a{pod="x\"\\y"} / b{pod="x\"\\y",ns="n"})");
}

}  // namespace
}  // namespace tessera::telemetry
