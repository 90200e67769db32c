// The `tessera agent` process: the one scripts/test.sh runs (publishing to the harness's Redis,
// scraped by Prometheus) and ones these tests start themselves (SIGTERM, a malformed file).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "store/redis_store.h"
#include "telemetry/prometheus_telemetry.h"
#include "harness_env.h"

extern char** environ;

namespace tessera::agent {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

TEST(AgentProcessTest, HarnessAgentPublishesItsInventoryAndHeartbeatToRedis) {
  const char* redis = Env("TESSERA_TEST_REDIS");
  const char* prefix = Env("TESSERA_TEST_AGENT_PREFIX");
  if (redis == nullptr || prefix == nullptr) {
    TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_REDIS or TESSERA_TEST_AGENT_PREFIX");
  }
  auto o = store::ParseRedisAddress(redis);
  ASSERT_TRUE(o);
  o->prefix = prefix;
  auto s = store::RedisStore::Connect(*o);
  ASSERT_TRUE(s) << s.error().message;
  auto inv = (*s)->GetInventory("fake-node-1");
  ASSERT_TRUE(inv) << inv.error().message;
  ASSERT_TRUE(inv->has_value());
  const store::NodeInventory& n = **inv;
  EXPECT_EQ(n.backend, "fake");
  EXPECT_EQ(n.cpu_milli, 32000);
  ASSERT_EQ(n.gpus.size(), 2u);
  EXPECT_EQ(n.gpus[0].partitions[1].uuid, "MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb");
  EXPECT_EQ(n.gpus[1].model, "A30-24GB");
  EXPECT_TRUE(*(*s)->IsAlive("fake-node-1"));
  // The partitions are ready for placements: 2g.10gb holds 10240 MiB.
  auto u = (*s)->GetPartition("MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb");
  ASSERT_TRUE(u && u->has_value());
  EXPECT_EQ((*u)->memory_mib, 10240);
}

// Starts `tessera agent ARGS...` with stderr in `log`; returns its pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int WaitExit(pid_t pid, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OwnAgentTest : public testing::Test {
 protected:
  void SetUp() override {
    const char* bin = Env("TESSERA_TEST_TESSERA_BIN");
    if (bin == nullptr) TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_TESSERA_BIN");
    bin_ = bin;
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-agent-proc-" + std::to_string(getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string bin_;
  std::filesystem::path dir_;
};

TEST_F(OwnAgentTest, MalformedFakeFileAtStartupExitsNonZeroNamingFileAndLine) {
  const std::string file = (dir_ / "bad.yaml").string();
  std::ofstream(file) << "node: n\ngpus:\n  - model: A30-24GB\n    mig: \"9g.99gb\"\n";
  const std::string log = (dir_ / "err.log").string();
  const pid_t pid = Spawn({bin_, "agent", "--fake", file, "--listen", "127.0.0.1:0"}, log);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitExit(pid, 30), 1);  // an exit, not a crash (abort would be 128)
  EXPECT_NE(Slurp(log).find(file + ":4:"), std::string::npos) << Slurp(log);
}

TEST_F(OwnAgentTest, SigtermStopsTheAgentCleanly) {
  const std::string log = (dir_ / "agent.log").string();
  const pid_t pid = Spawn(
      {bin_, "agent", "--fake", std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fake_node.yaml",
       "--listen", "127.0.0.1:0", "--interval", "0.1"},
      log);
  ASSERT_GT(pid, 0);
  // Whatever fails below, the child does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};
  // Wait until it runs (it logs the port it serves on), then ask it to stop.
  for (int i = 0; i < 300 && Slurp(log).find("serving /metrics") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(Slurp(log).find("serving /metrics"), std::string::npos) << Slurp(log);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid, 30), 0) << Slurp(log);
  EXPECT_NE(Slurp(log).find("shutting down"), std::string::npos);
}

TEST(AgentProcessTest, HarnessAgentServesHealthz) {
  const char* agent = Env("TESSERA_TEST_AGENT");
  if (agent == nullptr) TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_AGENT");
  const std::string a = agent;
  httplib::Client cli(a.substr(0, a.rfind(':')), std::stoi(a.substr(a.rfind(':') + 1)));
  auto r = cli.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// The port an agent started with --listen 127.0.0.1:0 logged, or 0 after `timeout_s`.
int ServingPort(const std::string& log, double timeout_s = 60) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  const std::regex served("/readyz on 127\\.0\\.0\\.1:([0-9]+)");
  while (std::chrono::steady_clock::now() < until) {
    std::smatch m;
    const std::string text = Slurp(log);
    if (std::regex_search(text, m, served)) return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// With `tessera agent --redis 127.0.0.1:1` /readyz answers 503 naming Redis and what went wrong,
// /healthz 200 (the agent still discovers and serves /metrics), and the outage is logged once
// however often it is retried.
TEST_F(OwnAgentTest, UnreachableRedisIsUnreadyAndNamedButLive) {
  const std::string log = (dir_ / "agent.log").string();
  const pid_t pid =
      Spawn({bin_, "agent", "--fake",
             std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fake_node.yaml", "--listen",
             "127.0.0.1:0", "--interval", "0.1", "--store", "redis", "--redis", "127.0.0.1:1"},
            log);
  ASSERT_GT(pid, 0);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};
  const int port = ServingPort(log);
  ASSERT_GT(port, 0) << Slurp(log);
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60);
  // Wait (generously) until a round has tried the store and five have failed on it.
  std::string body, metrics;
  for (int i = 0; i < 600; ++i) {
    auto r = cli.Get("/readyz");
    auto m = cli.Get("/metrics");
    if (r && m) {
      body = r->body;
      metrics = m->body;
      std::smatch errors;
      const std::regex counter("tessera_agent_store_errors_total\\{[^}]*\\} ([0-9]+)");
      if (r->status == 503 && body.starts_with("redis 127.0.0.1:1/0: ") &&
          std::regex_search(metrics, errors, counter) && std::stoi(errors[1]) >= 5) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(body.starts_with("redis 127.0.0.1:1/0: ")) << body;
  EXPECT_NE(body.find("Connection refused\n"), std::string::npos) << body;
  EXPECT_NE(body.find("GPU discovery (fake): ok\n"), std::string::npos) << body;
  auto live = cli.Get("/healthz");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200) << live->body;
  EXPECT_EQ(Count(Slurp(log), "Connection refused"), 1) << Slurp(log);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid, 30), 0) << Slurp(log);
}

// The harness agent publishes to a real redis-server: ready, and /readyz says so.
TEST(AgentProcessTest, HarnessAgentIsReadyWithARealRedis) {
  const char* agent = Env("TESSERA_TEST_AGENT");
  const char* redis = Env("TESSERA_TEST_REDIS");
  if (agent == nullptr || redis == nullptr) {
    TESSERA_SKIP_WITHOUT_HARNESS("TESSERA_TEST_AGENT or TESSERA_TEST_REDIS");
  }
  const std::string a = agent;
  httplib::Client cli(a.substr(0, a.rfind(':')), std::stoi(a.substr(a.rfind(':') + 1)));
  auto r = cli.Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, "GPU discovery (fake): ok\nredis " + std::string(redis) + "/0: ok\n");
}

// A pod's own GPU use travels agent → Prometheus → PrometheusTelemetry, keyed by the
// name the scheduler gives the pod's workload ("<namespace>/<pod>"), beside the A30's SM and
// DRAM activity and SM clock. tests/agent/fake_node.yaml gives the A30 one process of pod uid
// 7e57a30a-… using 3072 MiB, 0.3 of the SMs and 0.1 of the bandwidth; it is a pod's once a
// placement on fake-node-1 names that uid (the agent re-reads placements every 5 s). The
// placement holds no slice, so no partition's series gains pod labels.
TEST(AgentProcessTest, APodsOwnUseReachesTheSchedulersTelemetryThroughPrometheus) {
  const char* redis = Env("TESSERA_TEST_REDIS");
  const char* prefix = Env("TESSERA_TEST_AGENT_PREFIX");
  const char* prometheus = Env("TESSERA_TEST_PROMETHEUS");
  if (redis == nullptr || prefix == nullptr || prometheus == nullptr) {
    TESSERA_SKIP_WITHOUT_HARNESS(
        "TESSERA_TEST_REDIS, TESSERA_TEST_AGENT_PREFIX or TESSERA_TEST_PROMETHEUS");
  }
  auto o = store::ParseRedisAddress(redis);
  ASSERT_TRUE(o);
  o->prefix = prefix;
  auto s = store::RedisStore::Connect(*o);
  ASSERT_TRUE(s) << s.error().message;
  const std::string uid = "7e57a30a-0000-4000-8000-000000000001";
  store::PlacementRecord p;
  p.workload = uid;
  p.node = "fake-node-1";
  p.pod = "infer-0";
  p.namespace_ = "usage-e2e";
  auto put = (*s)->PutPlacement(p);
  ASSERT_TRUE(put) << put.error().message;
  ASSERT_TRUE(put->applied) << put->refusal;
  struct Remove {
    store::Store& store;
    std::string uid;
    ~Remove() { (void)store.RemovePlacement(uid); }
  } remove{**s, uid};

  SteadyClock clock;
  telemetry::PrometheusTelemetryOptions t;
  t.server = {prometheus, 5};
  t.selector = R"(Hostname="fake-node-1")";
  t.memory_window_s = 60;
  t.memory_step_s = 1;
  auto telemetry = telemetry::PrometheusTelemetry::Create(t, clock);
  ASSERT_TRUE(telemetry) << telemetry.error().message;
  std::optional<telemetry::Series> memory;
  for (int i = 0; i < 300 && !memory; ++i) {  // attribution (5 s) + scrape (1 s), with slack
    if ((*telemetry)->Refresh()) memory = (*telemetry)->MemoryUsed("usage-e2e/infer-0", 60);
    if (!memory) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(memory) << "the pod's series never reached Prometheus";
  EXPECT_EQ(memory->back().value, 3072);
  auto sm = (*telemetry)->SmActivitySeries("usage-e2e/infer-0", 60);
  ASSERT_TRUE(sm);
  EXPECT_DOUBLE_EQ(sm->back().value, 0.3);
  auto bw = (*telemetry)->BandwidthSeries("usage-e2e/infer-0", 60);
  ASSERT_TRUE(bw);
  EXPECT_DOUBLE_EQ(bw->back().value, 0.1);
  const std::string a30 = "GPU-22222222-2222-4222-8222-222222222222";
  EXPECT_EQ((*telemetry)->SmActivity(a30), 0.5);
  EXPECT_EQ((*telemetry)->SmClockMhz(a30), 1440);
  auto gpu_bw = (*telemetry)->BandwidthSeries(a30, 60);
  ASSERT_TRUE(gpu_bw);
  EXPECT_EQ(gpu_bw->back().value, 0.25);
  EXPECT_EQ((*telemetry)->MemoryUsed("usage-e2e/nobody", 60), std::nullopt);
}

}  // namespace
}  // namespace tessera::agent
