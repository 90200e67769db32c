// k8s::Evictor against the fake API server (its eviction subresource and PDBs follow the
// Kubernetes documentation): every result the contract in evictor.h names, with virtual time
// for the hourly budgets and the retry.
#include "k8s/evictor.h"

#include <gtest/gtest.h>

#include "k8s/k8s_fixtures.h"
#include "store/memory_store.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::CredentialsFor;
using testing_support::FakeApiServer;

class EvictorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ApiClient::Create(CredentialsFor(api_));
    ASSERT_TRUE(c.has_value()) << c.error().message;
    client_ = std::move(*c);
    binder_ = std::make_unique<Binder>(*client_, store_, "tessera");
  }
  // A running, ready pod on `node`, owned by a ReplicaSet unless `owned` is false.
  Pod AddPod(const std::string& name, bool owned = true) {
    api_.AddPodWith("ml", name, {{"cpu", "1"}}, json::object(), {{"app", "web"}},
                    owned ? json{{"apiVersion", "apps/v1"},
                                 {"kind", "ReplicaSet"},
                                 {"name", "web-rs"},
                                 {"uid", "rs-1"}}
                          : json(nullptr));
    api_.SetPodRunning("ml", name);
    auto pod = PodFromJson(api_.Get("pods", "ml/" + name).value());
    EXPECT_TRUE(pod.has_value());
    return *pod;
  }
  int Events(const std::string& pod, const std::string& reason) {
    int n = 0;
    for (const json& e : api_.All("events")) {
      n += e["involvedObject"]["name"] == pod && e["reason"] == reason;
    }
    return n;
  }
  int64_t Count(const Evictor& e, const std::string& result) {
    const auto c = e.counts();
    auto it = c.find({"slo-aware", result});
    return it == c.end() ? 0 : it->second;
  }

  FakeApiServer api_;
  ManualClock clock_{1000};
  store::MemoryStore store_{clock_};
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<Binder> binder_;
};

TEST_F(EvictorTest, EvictsAControlledPodThroughTheApiWithAnEvent) {
  Evictor e(*client_, *binder_, clock_, {.mode = EvictionOptions::Mode::kOn});
  const Pod pod = AddPod("web-1");
  EXPECT_EQ(pod.controller, "ReplicaSet/web-rs");
  EXPECT_TRUE(e.Try(pod, "gpu-0", "slo-aware", "runs below its SLO"));
  EXPECT_EQ(api_.evictions(), std::vector<std::string>{"ml/web-1"});
  EXPECT_EQ(Count(e, "evicted"), 1);
  EXPECT_EQ(Events("web-1", "Evicted"), 1);
  ASSERT_EQ(e.recent().size(), 1u);
  EXPECT_EQ(e.recent()[0].result, "evicted");
}

TEST_F(EvictorTest, APodWithoutAControllerIsNeverEvicted) {
  Evictor e(*client_, *binder_, clock_, {.mode = EvictionOptions::Mode::kOn});
  const Pod bare = AddPod("bare", /*owned=*/false);
  EXPECT_FALSE(e.Try(bare, "gpu-0", "slo-aware", "x"));
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(Count(e, "no_controller"), 1);
  EXPECT_EQ(Events("bare", "EvictionRefused"), 1);
}

TEST_F(EvictorTest, OffAndDryRunCallNoApi) {
  Evictor off(*client_, *binder_, clock_, {.mode = EvictionOptions::Mode::kOff});
  Evictor dry(*client_, *binder_, clock_, {.mode = EvictionOptions::Mode::kDryRun});
  const Pod pod = AddPod("web-1");
  EXPECT_FALSE(off.Try(pod, "gpu-0", "slo-aware", "x"));
  EXPECT_FALSE(dry.Try(pod, "gpu-0", "slo-aware", "x"));
  EXPECT_TRUE(api_.evictions().empty());
  EXPECT_EQ(Count(off, "off"), 1);
  EXPECT_EQ(Count(dry, "dry_run"), 1);
  EXPECT_EQ(Events("web-1", "EvictionDryRun"), 1);
}

// Budgets: 2 an hour per node, 3 cluster-wide. On gpu-0: evictions 1 and 2 go, the third is
// over the node's budget; on gpu-1 one more goes (3 cluster-wide), the next is over the
// cluster's. An hour after the first two, gpu-0 has room again.
TEST_F(EvictorTest, TheHourlyBudgetsRefuseWithoutQueueing) {
  Evictor e(*client_, *binder_, clock_,
            {.mode = EvictionOptions::Mode::kOn, .max_per_hour = 3, .max_per_node_hour = 2});
  for (int i = 0; i < 6; ++i) AddPod("web-" + std::to_string(i));
  auto pod = [&](int i) {
    return *PodFromJson(api_.Get("pods", fmt::format("ml/web-{}", i)).value());
  };
  EXPECT_TRUE(e.Try(pod(0), "gpu-0", "slo-aware", "x"));
  clock_.Advance(10);
  EXPECT_TRUE(e.Try(pod(1), "gpu-0", "slo-aware", "x"));
  EXPECT_FALSE(e.Try(pod(2), "gpu-0", "slo-aware", "x"));  // node budget
  EXPECT_TRUE(e.Try(pod(3), "gpu-1", "slo-aware", "x"));
  EXPECT_FALSE(e.Try(pod(4), "gpu-1", "slo-aware", "x"));  // cluster budget
  EXPECT_EQ(Count(e, "budget"), 2);
  EXPECT_EQ(api_.evictions().size(), 3u);
  EXPECT_FALSE(e.Waiting(pod(2).uid));  // refused, not queued
  clock_.Advance(3600);                 // evictions 1 and 2 are more than an hour old now
  EXPECT_TRUE(e.Try(pod(2), "gpu-0", "slo-aware", "x"));
}

// A PDB refuses (429): the pod waits for its retry, due retry_s later, never forced.
TEST_F(EvictorTest, ARefusedEvictionIsRetriedAfterTheDelay) {
  Evictor e(*client_, *binder_, clock_, {.mode = EvictionOptions::Mode::kOn, .retry_s = 30});
  api_.AddPdb("ml", "web",
              {{"selector", {{"matchLabels", {{"app", "web"}}}}}, {"minAvailable", 1}});
  const Pod pod = AddPod("web-1");
  EXPECT_FALSE(e.Try(pod, "gpu-0", "slo-aware", "x"));
  EXPECT_EQ(api_.eviction_refusals(), 1);
  EXPECT_EQ(Count(e, "refused_pdb"), 1);
  EXPECT_TRUE(e.Waiting(pod.uid));
  clock_.Advance(29);
  EXPECT_TRUE(e.Due().empty());
  clock_.Advance(1);
  const std::vector<Evictor::Retry> due = e.Due();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].pod.uid, pod.uid);
  EXPECT_EQ(due[0].node, "gpu-0");
  EXPECT_FALSE(e.Waiting(pod.uid));
  EXPECT_TRUE(api_.evictions().empty());
}

TEST(EvictionModeTest, ParsesTheThreeModes) {
  EXPECT_EQ(ParseEvictionMode("off").value(), EvictionOptions::Mode::kOff);
  EXPECT_EQ(ParseEvictionMode("dry-run").value(), EvictionOptions::Mode::kDryRun);
  EXPECT_EQ(ParseEvictionMode("on").value(), EvictionOptions::Mode::kOn);
  EXPECT_EQ(ParseEvictionMode("yes").error().message, "evictions: 'yes' is not off, dry-run or on");
}

}  // namespace
}  // namespace tessera::k8s
