// The `tessera schedule` binary itself: kubeconfig credentials, the Lease, binding, and a
// graceful SIGTERM that releases the Lease — against the in-process API server.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "k8s_fixtures.h"

extern char** environ;

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::FakeApiServer;
using testing_support::WaitFor;
using testing_support::WriteKubeconfig;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ScheduleProcessTest, BindsPodsAndReleasesTheLeaseOnSigterm) {
  FakeApiServer api;
  const std::string dir = api.pki().dir;
  WriteKubeconfig(api, dir);
  api.AddNode("cpu-0");
  // CPU-only pods: a memory store has no agent inventories, so no GPUs.
  for (int i = 0; i < 3; ++i) api.AddPod("default", "web-" + std::to_string(i), {{"cpu", "1"}});

  const std::string kubeconfig = dir + "/kubeconfig";
  std::vector<std::string> args = {
      TESSERA_BIN,  "schedule", "--kubeconfig",      kubeconfig,       "--store",  "memory",
      "--identity", "proc-1",   "--lease-namespace", "tessera-system", "--listen", "127.0.0.1:0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, TESSERA_BIN, nullptr, nullptr, argv.data(), environ), 0);

  auto bound = [&] {
    int n = 0;
    for (const json& p : api.All("pods")) n += p["spec"].value("nodeName", "") == "cpu-0";
    return n;
  };
  EXPECT_TRUE(WaitFor([&] { return bound() == 3; }));
  auto lease = api.Get("leases", "tessera-system/tessera-scheduler");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "proc-1");
  EXPECT_EQ(api.Get("configmaps", "default/web-0").value()["data"]["CUDA_VISIBLE_DEVICES"], "");

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(api.Get("leases", "tessera-system/tessera-scheduler").value()["spec"]["holderIdentity"],
            "");
}

// With a valid kubeconfig and no API server, and with an unreachable Redis, `tessera
// schedule` keeps retrying, /readyz answers 503 naming both, /healthz stays 200 (its loops
// turn), and each outage is logged once, not on every retry (the Lease is retried every 0.1 s
// here).
TEST(ScheduleProcessTest, ReadinessNamesAMissingApiServerAndRedisWhileLive) {
  std::string url, dir;
  std::unique_ptr<FakeApiServer> api = std::make_unique<FakeApiServer>();
  url = api->url();
  // The PKI directory goes with the server: keep the kubeconfig and CA elsewhere.
  char tmpl[] = "/tmp/tessera-schedule-proc-XXXXXX";
  dir = mkdtemp(tmpl);
  WriteKubeconfig(*api, dir);
  api.reset();  // nothing answers at that address any more
  const std::string log = dir + "/schedule.log";
  std::vector<std::string> args = {
      TESSERA_BIN,      "schedule", "--kubeconfig",      dir + "/kubeconfig",
      "--store",        "redis",    "--redis",           "127.0.0.1:1",
      "--identity",     "proc-2",   "--lease-namespace", "tessera-system",
      "--retry-period", "0.1",      "--listen",          "127.0.0.1:0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, TESSERA_BIN, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  struct Reaper {  // whatever fails below, the child does not outlive the test
    pid_t pid;
    ~Reaper() {
      if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{pid};

  int port = 0;
  ASSERT_TRUE(WaitFor([&] {
    std::smatch m;
    const std::string text = Slurp(log);
    if (!std::regex_search(text, m, std::regex("/metrics on 127\\.0\\.0\\.1:([0-9]+)"))) {
      return false;
    }
    port = std::stoi(m[1]);
    return true;
  })) << Slurp(log);
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(60);
  std::string body;
  ASSERT_TRUE(WaitFor([&] {
    auto r = http.Get("/readyz");
    if (!r || r->status != 503) return false;
    body = r->body;
    return body.find("redis 127.0.0.1:1/0: Connection refused\n") != std::string::npos &&
           body.find("api server " + url + ": leader election: ") != std::string::npos;
  })) << body;
  EXPECT_NE(body.find("role: standby (Lease tessera-system/tessera-scheduler held by nobody)"),
            std::string::npos)
      << body;
  auto live = http.Get("/healthz");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200) << live->body;
  // A standby's metrics and status page answer too (kube-scheduler's families, the live page).
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tessera_scheduler_pending_pods{queue=\"active\"} 0\n"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("# TYPE tessera_scheduler_scheduling_attempt_duration_seconds "
                               "histogram\n"),
            std::string::npos);
  auto page = http.Get("/status");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  // Thirty more readiness checks, a Lease round every 0.1 s meanwhile: each outage is still
  // logged once.
  for (int i = 0; i < 30; ++i) {
    auto r = http.Get("/readyz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string text = Slurp(log);
  EXPECT_EQ(Count(text, ": leader election: GET "), 1) << text;
  EXPECT_EQ(Count(text, "redis 127.0.0.1:1/0: Connection refused"), 1) << text;

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera::k8s
