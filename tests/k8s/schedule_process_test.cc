// The `tessera schedule` binary itself: kubeconfig credentials, the Lease, binding, and a
// graceful SIGTERM that releases the Lease — against the in-process API server.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>

#include "k8s_fixtures.h"

extern char** environ;

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::FakeApiServer;
using testing_support::WaitFor;

TEST(ScheduleProcessTest, BindsPodsAndReleasesTheLeaseOnSigterm) {
  FakeApiServer api;
  const std::string dir = api.pki().dir;
  std::ofstream(dir + "/ca.pem") << api.pki().ca_pem;
  std::ofstream(dir + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
      << "clusters:\n- name: c\n  cluster:\n    server: " << api.url()
      << "\n    certificate-authority: ca.pem\n"
      << "users:\n- name: u\n  user:\n    token: " << FakeApiServer::kToken << "\n"
      << "contexts:\n- name: t\n  context:\n    cluster: c\n    user: u\n";
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

}  // namespace
}  // namespace tessera::k8s
