#include "agent/agent.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/fake_backend.h"
#include "agent/http_server.h"
#include "slow_clients.h"
#include "store/memory_store.h"

namespace tessera::agent {
namespace {

constexpr const char* kNode = R"(node: n1
gpus:
  - uuid: GPU-a
    model: A100-40GB
    mig: "3g.20gb@0,3g.20gb@4"
    instances:
      - {uuid: MIG-a1, gi_id: 1, script: {points: [{t: 0, util: 0.3, fb_used_mib: 100}]}}
      - {uuid: MIG-a2, gi_id: 2}
  - uuid: GPU-b
    model: A30-24GB
    script: {points: [{t: 0, util: 0.7, fb_used_mib: 200, power_w: 90}]}
)";

// A store whose calls fail while `down` is set, and which holds no inventory while
// `forgotten` is set (a Redis restarted empty) until one is put again.
class FlakyStore : public store::MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  bool down = false;
  bool forgotten = false;
  std::string Name() const override { return "redis 127.0.0.1:1/0"; }
  Expected<void> PutInventory(const store::NodeInventory& inv) override {
    if (down) return Fail("redis 127.0.0.1:1/0: connection refused");
    forgotten = false;
    return MemoryStore::PutInventory(inv);
  }
  Expected<std::optional<store::NodeInventory>> GetInventory(std::string_view node) override {
    if (forgotten) return std::optional<store::NodeInventory>{};
    return MemoryStore::GetInventory(node);
  }
  Expected<void> Heartbeat(std::string_view node, double ttl) override {
    if (down) return Fail("redis 127.0.0.1:1/0: connection refused");
    return MemoryStore::Heartbeat(node, ttl);
  }
};

class AgentTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-agent-" + std::to_string(::getpid()) + "-" +
             testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml");
    Write(kNode);
    auto b = FakeBackend::Load(path_.string(), clock_, 0);
    ASSERT_TRUE(b) << b.error().message;
    backend_ = std::move(*b);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::unique_ptr<Agent> Make() {
    return std::make_unique<Agent>(AgentOptions{.node = "n1", .heartbeat_ttl_s = 10}, *backend_,
                                   &store_, clock_);
  }
  store::NodeInventory Stored() {
    auto got = store_.GetInventory("n1");
    EXPECT_TRUE(got && got->has_value());
    return got && got->has_value() ? **got : store::NodeInventory{};
  }

  std::filesystem::path path_;
  ManualClock clock_{0};
  FlakyStore store_{clock_};
  std::unique_ptr<FakeBackend> backend_;
};

TEST_F(AgentTest, PublishesOnceAndRepublishesOnlyOnChange) {
  auto agent = Make();
  agent->Tick();
  EXPECT_EQ(Stored().generation, 1);
  EXPECT_EQ(Stored().agent_id, agent->agent_id());
  ASSERT_EQ(Stored().gpus.size(), 2u);
  EXPECT_EQ(Stored().gpus[0].partitions[1].uuid, "MIG-a2");
  clock_.Advance(1);
  agent->Tick();
  EXPECT_EQ(agent->Stats().publishes, 1);  // nothing changed
  // MIG reshape: GPU-a becomes one 7g.40gb.
  std::string reshaped = kNode;
  reshaped.replace(reshaped.find("    mig"),
                   reshaped.find("  - uuid: GPU-b") - reshaped.find("    mig"),
                   "    mig: \"7g.40gb\"\n");
  Write(reshaped);
  agent->Tick();
  EXPECT_EQ(Stored().generation, 2);
  ASSERT_EQ(Stored().gpus[0].partitions.size(), 1u);
  EXPECT_EQ(Stored().gpus[0].partitions[0].profile, "7g.40gb");
  // GPU-b disappears: it is kept, lost, and its partition accepts nothing.
  Write(reshaped.substr(0, reshaped.find("  - uuid: GPU-b")));
  agent->Tick();
  EXPECT_EQ(Stored().generation, 3);
  ASSERT_EQ(Stored().gpus.size(), 2u);
  EXPECT_TRUE(Stored().gpus[1].lost);
  auto u = store_.GetPartition("GPU-b");
  ASSERT_TRUE(u && u->has_value());
  EXPECT_FALSE((*u)->present);
  // A restarted agent publishes again under a new agent id.
  auto restarted = Make();
  restarted->Tick();
  EXPECT_EQ(Stored().agent_id, restarted->agent_id());
  EXPECT_NE(restarted->agent_id(), agent->agent_id());
}

// A store that lost the inventory (a Redis restarted empty) has it again one attribution
// interval (5 s) later: the agent reads it back when due and publishes it again, once.
TEST_F(AgentTest, RepublishesAnInventoryTheStoreLost) {
  auto agent = Make();
  agent->Tick();  // t = 0: published; the read-back is due at 5
  EXPECT_EQ(agent->Stats().publishes, 1);
  store_.forgotten = true;
  clock_.Advance(1);
  agent->Tick();  // t = 1: not due
  EXPECT_EQ(agent->Stats().publishes, 1);
  EXPECT_TRUE(store_.forgotten);
  clock_.Advance(5);
  agent->Tick();  // t = 6: read back, missing: published again next round
  agent->Tick();
  EXPECT_EQ(agent->Stats().publishes, 2);
  EXPECT_EQ(agent->Stats().republishes, 1);
  EXPECT_FALSE(store_.forgotten);
  EXPECT_EQ(Stored().generation, 1);  // the same inventory, not a new generation
  EXPECT_NE(agent->Metrics().find("tessera_agent_inventory_republishes_total{Hostname=\"n1\"} 1"),
            std::string::npos);
  clock_.Advance(6);
  agent->Tick();  // t = 12: read back, held
  agent->Tick();
  EXPECT_EQ(agent->Stats().publishes, 2);
}

TEST_F(AgentTest, HeartbeatLapsesWhenTheAgentStops) {
  auto agent = Make();
  agent->Tick();
  EXPECT_TRUE(*store_.IsAlive("n1"));
  clock_.Advance(9);
  agent->Tick();
  clock_.Advance(9);
  EXPECT_TRUE(*store_.IsAlive("n1"));  // renewed at 9, expires at 19
  clock_.Advance(2);
  EXPECT_FALSE(*store_.IsAlive("n1"));
}

TEST_F(AgentTest, MalformedFileAndStoreOutageAreSurvived) {
  auto agent = Make();
  agent->Tick();
  Write("node: n1\ngpus: [ {model: ");
  agent->Tick();
  agent->Tick();
  EXPECT_EQ(agent->Stats().backend_errors, 2);  // every round the file is still broken
  EXPECT_EQ(agent->Inventory().generation, 1);
  EXPECT_NE(agent->Metrics().find("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), std::string::npos);
  store_.down = true;
  Write(std::string(kNode) + "  - {uuid: GPU-c, model: T4}\n");
  agent->Tick();
  EXPECT_EQ(agent->Inventory().generation, 2);
  EXPECT_FALSE(agent->Stats().published);
  EXPECT_EQ(Stored().generation, 1);
  store_.down = false;
  agent->Tick();  // the unpublished change goes out once the store is back
  EXPECT_EQ(Stored().generation, 2);
  EXPECT_TRUE(agent->Stats().published);
  EXPECT_EQ(agent->Stats().store_errors, 1);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The log says "recovered" only when a broken file was fixed, not on the round after it broke.
TEST_F(AgentTest, RecoveredIsLoggedOnlyWhenTheFileIsFixed) {
  std::ostringstream log;
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "agent-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  auto agent = Make();
  agent->Tick();
  Write("node: n1\ngpus: [ {model: ");
  agent->Tick();
  agent->Tick();
  agent->Tick();
  EXPECT_EQ(Count(log.str(), "GPU discovery: "), 1) << log.str();  // logged once
  EXPECT_EQ(Count(log.str(), "recovered"), 0) << log.str();
  Write(std::string(kNode) + "  - {uuid: GPU-c, model: T4}\n");
  agent->Tick();
  agent->Tick();
  EXPECT_EQ(Count(log.str(), "GPU discovery recovered"), 1) << log.str();
  EXPECT_EQ(agent->Inventory().generation, 2);
  spdlog::set_default_logger(previous);
}

TEST_F(AgentTest, MetricsCarryThePodsPlacedOnAPartition) {
  auto agent = Make();
  agent->Tick();
  auto put = store_.PutPlacement({.workload = "w1",
                                  .node = "n1",
                                  .pod = "resnet-0",
                                  .namespace_ = "ml",
                                  .slices = {{"MIG-a1", 500, 1024}}});
  ASSERT_TRUE(put && put->applied);
  clock_.Advance(10);  // past the attribution interval
  agent->Tick();
  const std::string text = agent->Metrics();
  EXPECT_NE(text.find(R"(partition_uuid="MIG-a1",pod="resnet-0",namespace="ml"} 0.3)"),
            std::string::npos)
      << text;
  // MIG-a2 has no script: unknown, so no activity series at all.
  EXPECT_EQ(text.find(R"(GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a",modelName="NVIDIA A100-40GB",)"
                      R"(Hostname="n1",GPU_I_PROFILE="3g.20gb",GPU_I_ID="2")"),
            std::string::npos);
}

// A pod's own use of a partition. Two processes of one pod (one named by the backend,
// one resolved from its cgroup under the proc root) sum to 2048 + 1024 = 3072 MiB and SM 0.25 +
// 0.125 = 0.375 on the A30; a process of a system service and one whose cgroup file is gone are
// counted as unattributed. The pod's placement holds no slices: its uid still names it.
TEST_F(AgentTest, PodUsageSeriesSumThePodsProcessesAndCountTheUnattributed) {
  const std::filesystem::path proc = path_.string() + ".proc";
  std::filesystem::create_directories(proc / "4242");
  std::filesystem::create_directories(proc / "77");
  std::ofstream(proc / "4242" / "cgroup")
      << "0::/kubepods.slice/kubepods-burstable.slice/"
         "kubepods-burstable-pod7e57a30a_0000_4000_8000_000000000001.slice/"
         "cri-containerd-abc.scope\n";
  std::ofstream(proc / "77" / "cgroup") << "0::/system.slice/containerd.service\n";
  Write(std::string(kNode) + R"(    processes:
      - {pid: 4241, pod_uid: 7e57a30a-0000-4000-8000-000000000001,
         script: {points: [{t: 0, fb_used_mib: 2048, sm_active: 0.25}]}}
      - {pid: 4242, script: {points: [{t: 0, fb_used_mib: 1024, sm_active: 0.125}]}}
      - {pid: 77, script: {points: [{t: 0, fb_used_mib: 300}]}}
      - {pid: 78, script: {points: [{t: 0, fb_used_mib: 400}]}}
)");
  Agent agent(AgentOptions{.node = "n1", .heartbeat_ttl_s = 10, .proc_root = proc.string()},
              *backend_, &store_, clock_);
  auto put = store_.PutPlacement({.workload = "7e57a30a-0000-4000-8000-000000000001",
                                  .node = "n1",
                                  .pod = "train-0",
                                  .namespace_ = "ml"});
  ASSERT_TRUE(put && put->applied);
  agent.Tick();
  const std::string text = agent.Metrics();
  const std::string b =
      R"({gpu="1",UUID="GPU-b",modelName="NVIDIA A30-24GB",Hostname="n1",partition_uuid="GPU-b",)"
      R"(pod="train-0",namespace="ml"})";
  EXPECT_NE(text.find("tessera_pod_fb_used_mib" + b + " 3072\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tessera_pod_sm_active" + b + " 0.375\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("tessera_pod_dram_active"), std::string::npos) << text;  // never scripted
  EXPECT_NE(text.find(R"(tessera_agent_unattributed_processes{Hostname="n1"} 2)"),
            std::string::npos)
      << text;
  std::filesystem::remove_all(proc);
}

TEST_F(AgentTest, ServesMetricsAndHealthOverHttp) {
  auto agent = Make();
  AgentServer server(*agent);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port) << port.error().message;
  httplib::Client cli("127.0.0.1", *port);
  // Live from the start; ready once an inventory exists and the store took it.
  auto live = cli.Get("/healthz");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);
  auto before = cli.Get("/readyz");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 503);
  EXPECT_EQ(before->body,
            "GPU discovery (fake): not checked yet\nredis 127.0.0.1:1/0: not checked yet\n");
  agent->Tick();
  auto ready = cli.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "GPU discovery (fake): ok\nredis 127.0.0.1:1/0: ok\n");
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find(R"(DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-b")"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("tessera_agent_inventory_generation{Hostname=\"n1\"} 1"),
            std::string::npos);
  server.Stop();
  EXPECT_FALSE(cli.Get("/healthz"));
}

// Seed 001 §4.2: an MPS server whose clients stop getting work done. The A30's two clients stay
// attached while its activity drops to 0 at t = 30 and comes back at t = 70; with 3 samples
// over 20 s, ticks every 10 s judge it stuck at t = 50 (samples 30, 40, 50: 3, spanning 20 s)
// and clear it at t = 70.
TEST_F(AgentTest, AStuckMpsServerIsLoggedOnceExposedAndPublished) {
  Write(R"(node: n1
gpus:
  - uuid: GPU-m
    model: A30-24GB
    product_name: NVIDIA A30
    script:
      points:
        - {t: 0, util: 0.6}
        - {t: 30, util: 0}
        - {t: 70, util: 0.5}
    mps: {server: running, clients: 2}
)");
  std::ostringstream log;
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "agent-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  Agent agent({.node = "n1", .mps_stuck = {.min_samples = 3, .min_span_s = 20}}, *backend_, &store_,
              clock_);
  const std::string gauge =
      R"(tessera_mps_server_stuck{gpu="0",UUID="GPU-m",modelName="NVIDIA A30",Hostname="n1"} )";
  for (int t = 0; t <= 40; t += 10) {
    clock_.Set(t);
    agent.Tick();
    EXPECT_NE(agent.Metrics().find(gauge + "0\n"), std::string::npos) << "t = " << t;
  }
  EXPECT_EQ(Stored().generation, 1);
  EXPECT_FALSE(Stored().gpus[0].mps_stuck);
  clock_.Set(50);
  agent.Tick();
  const std::string text = agent.Metrics();
  EXPECT_NE(text.find(gauge + "1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(tessera_mps_clients{gpu="0",UUID="GPU-m",modelName="NVIDIA A30",)"
                      R"(Hostname="n1"} 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE tessera_mps_server_stuck gauge\n"), std::string::npos);
  // The verdict is an inventory change: published under a new generation.
  EXPECT_EQ(Stored().generation, 2);
  EXPECT_TRUE(Stored().gpus[0].mps_stuck);
  clock_.Set(60);
  agent.Tick();
  EXPECT_EQ(Count(log.str(), "MPS server stuck"), 1) << log.str();
  EXPECT_NE(log.str().find("GPU 0 (GPU-m): MPS server stuck: 2 client(s) attached and no GPU "
                           "activity for 3 samples over 20 s"),
            std::string::npos)
      << log.str();
  clock_.Set(70);
  agent.Tick();
  EXPECT_NE(agent.Metrics().find(gauge + "0\n"), std::string::npos);
  EXPECT_EQ(Stored().generation, 3);
  EXPECT_FALSE(Stored().gpus[0].mps_stuck);
  EXPECT_EQ(Count(log.str(), "MPS server no longer stuck"), 1) << log.str();
  spdlog::set_default_logger(previous);
}

// A server that stops answering at t = 5, with the default thresholds (3 samples, 120 s) and
// the daemon's default 1 s rounds: the suspect samples are t = 5, 6, …; at t = 124 they span
// 119 s, at t = 125 the 121st spans 120 s and the server is stuck — seen over HTTP.
TEST_F(AgentTest, AHungMpsServerShowsInMetricsOverHttp) {
  Write(R"(node: n1
gpus:
  - uuid: GPU-h
    model: H100-80GB
    script: {points: [{t: 0, util: 0.8}]}
    mps:
      points:
        - {t: 0, server: running, clients: 3}
        - {t: 5, server: hung, clients: 3}
  - {uuid: GPU-plain, model: T4, script: {points: [{t: 0, util: 0}]}}
)");
  auto agent = Make();
  AgentServer server(*agent);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port) << port.error().message;
  httplib::Client cli("127.0.0.1", *port);
  const std::string labels = R"({gpu="0",UUID="GPU-h",modelName="NVIDIA H100-80GB",Hostname="n1"})";
  for (int t = 0; t <= 124; ++t) {
    clock_.Set(t);
    agent->Tick();
  }
  auto before = cli.Get("/metrics");
  ASSERT_TRUE(before);
  EXPECT_NE(before->body.find("tessera_mps_server_stuck" + labels + " 0\n"), std::string::npos)
      << before->body;
  clock_.Set(125);
  agent->Tick();
  auto after = cli.Get("/metrics");
  ASSERT_TRUE(after);
  EXPECT_NE(after->body.find("tessera_mps_server_stuck" + labels + " 1\n"), std::string::npos)
      << after->body;
  EXPECT_NE(after->body.find("tessera_mps_server_up" + labels + " 1\n"), std::string::npos);
  EXPECT_NE(after->body.find("tessera_mps_clients" + labels + " 3\n"), std::string::npos);
  // The T4 has no MPS reading: no MPS series at all, rather than a 0 that means "healthy".
  EXPECT_EQ(after->body.find(R"(tessera_mps_server_stuck{gpu="1")"), std::string::npos);
  EXPECT_TRUE(Stored().gpus[0].mps_stuck);
  EXPECT_FALSE(Stored().gpus[1].mps_stuck);
  server.Stop();
}

// With its store unreachable the agent is not ready: readiness says 503 and names the store with
// the store's own error, liveness stays 200 (restarting the agent would not bring Redis back), and
// both follow the store back.
TEST_F(AgentTest, AnUnreachableStoreMakesItUnreadyButStillLive) {
  auto agent = Make();
  agent->Tick();
  EXPECT_TRUE(agent->health().Readiness().ok);
  store_.down = true;
  Write(std::string(kNode) + "  - {uuid: GPU-c, model: T4}\n");  // a change to publish
  agent->Tick();
  const Health::Report down = agent->health().Readiness();
  EXPECT_FALSE(down.ok);
  EXPECT_EQ(down.text, "redis 127.0.0.1:1/0: connection refused\nGPU discovery (fake): ok\n");
  EXPECT_TRUE(agent->health().Liveness().ok);
  store_.down = false;
  agent->Tick();
  EXPECT_TRUE(agent->health().Readiness().ok);
}

// Liveness is the discovery loop turning: 30 s (the default stall_s) after the last round the
// agent is live, one second more and it is not.
TEST_F(AgentTest, LivenessFailsWhenTheDiscoveryLoopStalls) {
  auto agent = Make();
  agent->Tick();
  clock_.Advance(30);
  EXPECT_TRUE(agent->health().Liveness().ok);
  clock_.Advance(1);
  const Health::Report stalled = agent->health().Liveness();
  EXPECT_FALSE(stalled.ok);
  EXPECT_EQ(stalled.text, "discovery loop: stalled, no turn for 31 s (limit 30 s)\n");
  agent->Tick();
  EXPECT_TRUE(agent->health().Liveness().ok);
}

// The agent serves GETs only: a request body of any size is refused with 413 before it is
// stored (a 150 MB POST, stored, would take a server to 888 MB), and the agent keeps serving.
TEST_F(AgentTest, ARequestBodyIsRefusedWith413AndTheServerStaysUp) {
  auto agent = Make();
  agent->Tick();
  AgentServer server(*agent);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port) << port.error().message;
  httplib::Client cli("127.0.0.1", *port);
  for (size_t bytes : {size_t{1}, size_t{16} << 20}) {
    auto r = cli.Post("/metrics", std::string(bytes, 'x'), "text/plain");
    ASSERT_TRUE(r) << bytes << " bytes: " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 413) << bytes << " bytes";
  }
  auto health = cli.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// Twelve connections that keep a request line unfinished (a byte every half second, so no per-read
// timeout fires) do not hold every worker: /healthz is answered while they hold on, and once they
// go quiet the server closes them after its read timeout.
TEST_F(AgentTest, SlowClientsDoNotStarveOtherRequests) {
  auto agent = Make();
  agent->Tick();
  AgentServer server(*agent);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port) << port.error().message;
  testing_support::SlowClients slow(*port, 12, "GET /metrics?slow=");
  ASSERT_EQ(slow.connected(), 12);
  httplib::Client cli("127.0.0.1", *port);
  cli.set_read_timeout(120);  // generous: the point is that it is served at all
  auto health = cli.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  slow.StopTrickling();
  EXPECT_EQ(slow.ClosedByServer(120), 12);
}

}  // namespace
}  // namespace tessera::agent
