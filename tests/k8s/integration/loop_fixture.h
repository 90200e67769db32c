#pragma once
// What the closed-loop integration tests share: the fake API server (the one fake), the real
// Redis and Prometheus scripts/harness.sh started, connected, and a scheduler configuration
// fast enough for a test. Include after "predict/predictor.h" (Eigen before cpp-httplib).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "harness_env.h"
#include "k8s/a100_inventory.h"
#include "k8s/k8s_fixtures.h"
#include "k8s/scheduler.h"
#include "store/redis_store.h"
#include "telemetry/prometheus_telemetry.h"

namespace tessera::k8s::testing_support {

class LoopFixture : public ::testing::Test {
 protected:
  // Connects Redis (keys under a prefix unique to this process and `tag`), the API client and
  // a PrometheusTelemetry polling every 0.5 s (`qps_query` its per-pod template when given).
  // Skips (fails under the test command) without the harness; callers return on
  // HasFatalFailure() || IsSkipped().
  void Connect(const std::string& tag, const std::string& qps_query = "") {
    const char* redis = std::getenv("TESSERA_TEST_REDIS");
    const char* prom = std::getenv("TESSERA_TEST_PROMETHEUS");
    const char* dir = std::getenv("TESSERA_TEST_EXPORTER_DIR");
    if (!redis || !prom || !dir) {
      TESSERA_SKIP_WITHOUT_HARNESS(
          "TESSERA_TEST_REDIS, TESSERA_TEST_PROMETHEUS or TESSERA_TEST_EXPORTER_DIR");
    }
    exporter_dir_ = dir;
    prometheus_ = prom;
    ns_ = fmt::format("{}-{}", tag, ::getpid());
    auto o = store::ParseRedisAddress(redis);
    ASSERT_TRUE(o.has_value());
    o->prefix = fmt::format("tessera-{}:", ns_);
    auto s = store::RedisStore::Connect(*o);
    ASSERT_TRUE(s.has_value()) << s.error().message;
    store_ = std::move(*s);
    auto c = ApiClient::Create(CredentialsFor(api_));
    ASSERT_TRUE(c.has_value()) << c.error().message;
    client_ = std::move(*c);
    telemetry::PrometheusTelemetryOptions t;
    t.server.url = prom;
    if (!qps_query.empty()) t.qps_query = qps_query;
    auto tel = telemetry::PrometheusTelemetry::Create(t, clock_);
    ASSERT_TRUE(tel.has_value()) << tel.error().message;
    telemetry_ = std::move(*tel);
    telemetry_->StartPolling(0.5);
  }
  void TearDown() override {
    if (telemetry_) telemetry_->StopPolling();
  }
  // A node in the API server with its agent's inventory in the store.
  void AddNodeWith(const store::NodeInventory& inv) {
    api_.AddNode(inv.node);
    ASSERT_TRUE(store_->PutInventory(inv).has_value());
  }

  // Fast leases and retries; evictions on, a refused one retried after 1 s.
  SchedulerConfig BaseConfig(const std::string& identity, const std::string& policy,
                             predict::Predictor& predictor) {
    SchedulerConfig c = FastConfig(identity);
    c.policy = policy;
    c.retry_s = 0.3;
    c.predictor = &predictor;
    c.telemetry = telemetry_.get();
    c.evictions.mode = EvictionOptions::Mode::kOn;
    c.evictions.retry_s = 1;
    return c;
  }

  std::string NodeOf(const std::string& pod) {
    auto p = api_.Get("pods", ns_ + "/" + pod);
    return p ? (*p)["spec"].value("nodeName", "") : "";
  }
  std::vector<nlohmann::json> EventsFor(const std::string& pod, const std::string& reason) {
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& e : api_.All("events")) {
      if (e["involvedObject"]["name"] == pod && e["reason"] == reason) out.push_back(e);
    }
    return out;
  }

  FakeApiServer api_;
  SteadyClock clock_;
  std::unique_ptr<store::RedisStore> store_;
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<telemetry::PrometheusTelemetry> telemetry_;
  std::string exporter_dir_, prometheus_, ns_;
};

}  // namespace tessera::k8s::testing_support
