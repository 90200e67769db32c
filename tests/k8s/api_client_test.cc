// The API client's TLS and credentials: the CA is always verified, tokens authenticate, and
// kubeconfig and in-cluster configuration are read as kubectl reads them. Informer recovery.
#include "k8s/api_client.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "k8s/informer.h"
#include "k8s/kubeconfig.h"
#include "k8s/leader.h"
#include "k8s_fixtures.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;
using testing_support::CredentialsFor;
using testing_support::FakeApiServer;
using testing_support::WaitFor;

std::string Base64(const std::string& s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(n);
  return out;
}

TEST(ApiClientTest, VerifiesTheServerAgainstTheCa) {
  FakeApiServer api;
  auto good = ApiClient::Create(CredentialsFor(api));
  ASSERT_TRUE(good.has_value()) << good.error().message;
  auto r = (*good)->Get("/api/v1/nodes");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->status, 200);

  Credentials wrong = CredentialsFor(api);
  wrong.ca_pem = api.pki().other_ca_pem;  // a CA that did not sign the server's certificate
  auto c = ApiClient::Create(wrong);
  ASSERT_TRUE(c.has_value());
  auto refused = (*c)->Get("/api/v1/nodes");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("GET " + api.url() + "/api/v1/nodes"), std::string::npos);
  EXPECT_NE(refused.error().message.find("certificate"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(refused.error().message.find(FakeApiServer::kToken), std::string::npos);

  Credentials none = CredentialsFor(api);
  none.ca_pem.clear();
  auto no_ca = ApiClient::Create(none);
  ASSERT_FALSE(no_ca.has_value());
  EXPECT_NE(no_ca.error().message.find("the CA is always verified"), std::string::npos);
}

TEST(ApiClientTest, AnUnreachableServerIsNamedWithWhatWentWrong) {
  // httplib reports a refused connect as just "Connection"; the message says what and where.
  Credentials gone;
  std::string url;
  {
    FakeApiServer api;
    gone = CredentialsFor(api);
    url = api.url();
  }  // the server is gone: its port refuses connections
  auto client = ApiClient::Create(gone);
  ASSERT_TRUE(client.has_value()) << client.error().message;
  auto r = (*client)->Get("/api/v1/pods");
  ASSERT_FALSE(r.has_value());
  const std::string host_port = url.substr(url.find("://") + 3);
  EXPECT_NE(r.error().message.find("cannot connect to " + host_port + " (connection refused"),
            std::string::npos)
      << r.error().message;
}

TEST(ApiClientTest, WrongTokenIsUnauthorized) {
  FakeApiServer api;
  Credentials c = CredentialsFor(api);
  c.token = "not-the-token";
  auto client = ApiClient::Create(c);
  ASSERT_TRUE(client.has_value());
  auto r = (*client)->Get("/api/v1/pods");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
}

TEST(ApiClientTest, KubeconfigCurrentContextWithInlineCa) {
  FakeApiServer api;
  const std::string dir = api.pki().dir;
  std::ofstream(dir + "/token") << FakeApiServer::kToken << "\n";
  std::ofstream(dir + "/config") << "apiVersion: v1\nkind: Config\n"
                                 << "current-context: test\n"
                                 << "clusters:\n- name: fake\n  cluster:\n    server: " << api.url()
                                 << "\n    certificate-authority-data: " << Base64(api.pki().ca_pem)
                                 << "\n- name: other\n  cluster:\n    server: https://10.0.0.1\n"
                                 << "    insecure-skip-tls-verify: true\n"
                                 << "users:\n- name: me\n  user:\n    tokenFile: token\n"
                                 << "contexts:\n- name: test\n  context:\n    cluster: fake\n"
                                 << "    user: me\n    namespace: ml\n"
                                 << "- name: insecure\n  context:\n    cluster: other\n"
                                 << "    user: me\n";
  auto creds = KubeconfigCredentials(dir + "/config");
  ASSERT_TRUE(creds.has_value()) << creds.error().message;
  EXPECT_EQ(creds->server, api.url());
  EXPECT_EQ(creds->namespace_, "ml");
  EXPECT_EQ(creds->token, FakeApiServer::kToken);  // tokenFile relative to the kubeconfig
  auto client = ApiClient::Create(*creds);
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ((*client)->Get("/api/v1/nodes").value().status, 200);

  auto insecure = KubeconfigCredentials(dir + "/config", "insecure");
  ASSERT_FALSE(insecure.has_value());
  EXPECT_EQ(insecure.error().message, "kubeconfig " + dir +
                                          "/config context insecure: insecure-skip-tls-verify is "
                                          "refused; give certificate-authority");
  auto missing = KubeconfigCredentials(dir + "/config", "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message, "kubeconfig " + dir + "/config: context 'nope' not found");
}

// Entries of the wrong kind (inputs of the kind fuzz/kubeconfig.cc generates) are each one error
// naming the file, not a yaml-cpp exception thrown out of KubeconfigCredentials, which would
// end `tessera schedule` at start.
TEST(ApiClientTest, AMalformedKubeconfigIsAnErrorNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/malformed-kubeconfig-" +
                           std::to_string(getpid());
  for (const char* text : {"current-context: c\ncontexts:\n  - just-a-name\n",
                           "current-context: c\ncontexts:\n  - name: [c]\n",
                           "current-context: c\ncontexts:\n  - name: c\n    context: {cluster: k}\n"
                           "clusters:\n  - k\n",
                           "- a\n- b\n"}) {
    std::ofstream(path) << text;
    auto creds = KubeconfigCredentials(path);
    ASSERT_FALSE(creds.has_value()) << text;
    EXPECT_EQ(creds.error().message.rfind("kubeconfig " + path + ": ", 0), 0u)
        << creds.error().message;
  }
  std::remove(path.c_str());
}

// A directory and a missing file given as --kubeconfig are errors naming the path, not a
// std::ios_base::failure out of YAML::LoadFile (not a YAML::Exception, so uncaught: `tessera
// schedule` and `extender` would end with SIGABRT).
TEST(ApiClientTest, AKubeconfigThatIsADirectoryOrMissingIsAnErrorNamingIt) {
  const std::string dir = ::testing::TempDir() + "/kubeconfig-dir-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  auto creds = KubeconfigCredentials(dir);
  ASSERT_FALSE(creds.has_value());
  EXPECT_EQ(creds.error().message, "kubeconfig " + dir + ": is a directory, not a kubeconfig file");
  creds = KubeconfigCredentials(dir + "/absent");
  ASSERT_FALSE(creds.has_value());
  EXPECT_EQ(creds.error().message, "kubeconfig " + dir + "/absent: no such file");
  std::filesystem::remove_all(dir);
}

// With no kubeconfig anywhere the message is not yaml-cpp's "bad file": it names the file
// looked for and the ways to give one (--kubeconfig, $KUBECONFIG, in-cluster config).
TEST(ApiClientTest, NoKubeconfigAnywhereNamesTheFlagAndInClusterConfig) {
  const std::string home = ::testing::TempDir() + "/empty-home-" + std::to_string(getpid());
  std::filesystem::create_directories(home);
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  const char* old_kubeconfig = std::getenv("KUBECONFIG");
  const std::string saved_kubeconfig = old_kubeconfig ? old_kubeconfig : "";
  setenv("HOME", home.c_str(), 1);
  unsetenv("KUBECONFIG");
  unsetenv("KUBERNETES_SERVICE_HOST");
  auto creds = DefaultCredentials();
  if (old_home) setenv("HOME", saved_home.c_str(), 1);
  if (old_kubeconfig) setenv("KUBECONFIG", saved_kubeconfig.c_str(), 1);
  ASSERT_FALSE(creds.has_value());
  const std::string& m = creds.error().message;
  EXPECT_NE(m.find(home + "/.kube/config does not exist"), std::string::npos) << m;
  EXPECT_NE(m.find("--kubeconfig"), std::string::npos) << m;
  EXPECT_NE(m.find("in-cluster"), std::string::npos) << m;
  std::filesystem::remove_all(home);
}

TEST(ApiClientTest, InClusterConfigFromTheServiceAccountFiles) {
  FakeApiServer api;
  const std::string dir = api.pki().dir + "/sa";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << FakeApiServer::kToken;
  std::ofstream(dir + "/ca.crt") << api.pki().ca_pem;
  std::ofstream(dir + "/namespace") << "tessera-system\n";
  const std::string port = api.url().substr(api.url().rfind(':') + 1);
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", port.c_str(), 1);
  auto creds = InClusterCredentials(dir);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(creds.has_value()) << creds.error().message;
  EXPECT_EQ(creds->server, api.url());
  EXPECT_EQ(creds->namespace_, "tessera-system");
  auto client = ApiClient::Create(*creds);
  ASSERT_TRUE(client.has_value());
  EXPECT_EQ((*client)->Get("/api/v1/pods").value().status, 200);
  EXPECT_FALSE(InClusterCredentials(dir).has_value());  // no service environment any more
}

TEST(InformerTest, RelistsOnGoneAndDeliversDeletionsMissedMeanwhile) {
  FakeApiServer api;
  auto client = ApiClient::Create(CredentialsFor(api));
  ASSERT_TRUE(client.has_value());
  api.AddNode("n-0");
  api.AddNode("n-1");
  std::mutex mu;
  std::vector<std::pair<EventType, std::string>> seen;
  InformerOptions o;
  o.path = "/api/v1/nodes";
  o.page_size = 1;  // list in pages
  o.backoff_initial_s = 0.01;
  Informer inf(**client, o, [&](EventType t, const json& obj) {
    std::lock_guard lock(mu);
    seen.emplace_back(t, obj["metadata"]["name"].get<std::string>());
  });
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(60));
  EXPECT_EQ(inf.Cache().size(), 2u);
  ASSERT_TRUE(WaitFor([&] { return api.open_watches() == 1; }));
  api.AddNode("n-2");
  ASSERT_TRUE(WaitFor([&] { return inf.Cache().size() == 3; }));
  // Cut the watch and answer the re-watch with 410: the informer re-lists.
  api.GoneOnNextWatches(1);
  api.DropWatches();
  ASSERT_TRUE(WaitFor([&] { return inf.stats().gone == 1 && inf.stats().lists == 2; }));
  api.AddNode("n-3");
  ASSERT_TRUE(WaitFor([&] { return inf.Cache().size() == 4; }));
  inf.Stop();
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.size(), 4u);  // four adds, nothing delivered twice
}

TEST(LeaderElectorTest, TakesOverOnlyAfterTheLeaseLapses) {
  FakeApiServer api;
  auto client = ApiClient::Create(CredentialsFor(api));
  ASSERT_TRUE(client.has_value());
  ManualClock clock;
  LeaderOptions a{"tessera-system", "lease", "a", 10, 8, 1};
  LeaderOptions b{"tessera-system", "lease", "b", 10, 8, 1};
  LeaderElector ea(**client, clock, a), eb(**client, clock, b);
  EXPECT_TRUE(ea.TryAcquireOrRenew().value());
  EXPECT_FALSE(eb.TryAcquireOrRenew().value());
  clock.Set(9);  // b has watched the record unchanged for 9 s < 10 s
  EXPECT_FALSE(eb.TryAcquireOrRenew().value());
  EXPECT_FALSE(ea.Leading());  // 9 s since a's renewal > renew deadline 8 s
  clock.Set(10.5);
  EXPECT_TRUE(eb.TryAcquireOrRenew().value());
  EXPECT_TRUE(eb.Leading());
  EXPECT_FALSE(ea.TryAcquireOrRenew().value());  // b renewed it just now
  auto lease = api.Get("leases", "tessera-system/lease").value();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  eb.Release();
  EXPECT_TRUE(ea.TryAcquireOrRenew().value());  // a released Lease is free at once
}

// A watch line is server data: decoding it must never throw. Before DecodeWatchEvent the
// informer read "type", "code" and "resourceVersion" with json::value, which throws
// type_error on a member of another type — an exception on the watch thread, and the daemon
// terminated.
TEST(WatchEventTest, DecodesEventsAndReadsMistypedMembersAsAbsent) {
  auto added = DecodeWatchEvent(
      R"({"type":"ADDED","object":{"metadata":{"name":"p","resourceVersion":"42"}}})");
  ASSERT_TRUE(added);
  EXPECT_EQ(added->kind, WatchEvent::Kind::kAdded);
  EXPECT_EQ(added->resource_version, "42");
  EXPECT_EQ(added->object["metadata"]["name"], "p");
  auto gone = DecodeWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->kind, WatchEvent::Kind::kError);
  EXPECT_EQ(gone->error_code, 410);
  EXPECT_EQ(gone->error_message, "too old");
  // Mistyped members: no throw, read as absent.
  auto odd_type = DecodeWatchEvent(R"({"type":7,"object":{}})");
  ASSERT_TRUE(odd_type);
  EXPECT_EQ(odd_type->kind, WatchEvent::Kind::kOther);
  auto odd_code = DecodeWatchEvent(R"({"type":"ERROR","object":{"code":"410","message":[1]}})");
  ASSERT_TRUE(odd_code);
  EXPECT_EQ(odd_code->error_code, 0);
  EXPECT_EQ(odd_code->error_message, "");
  auto odd_rv = DecodeWatchEvent(
      R"({"type":"MODIFIED","object":{"metadata":{"resourceVersion":42}}})");
  ASSERT_TRUE(odd_rv);
  EXPECT_EQ(odd_rv->resource_version, "");
  auto odd_meta = DecodeWatchEvent(R"({"type":"DELETED","object":{"metadata":"x"}})");
  ASSERT_TRUE(odd_meta);
  EXPECT_EQ(odd_meta->kind, WatchEvent::Kind::kDeleted);
  auto error_not_object = DecodeWatchEvent(R"({"type":"ERROR","object":"boom"})");
  ASSERT_TRUE(error_not_object);
  EXPECT_EQ(error_not_object->error_code, 0);
  // Not an event at all.
  EXPECT_FALSE(DecodeWatchEvent("not json"));
  EXPECT_FALSE(DecodeWatchEvent("[1,2]"));
  EXPECT_FALSE(DecodeWatchEvent(R"({"type":"ADDED"})"));
}

}  // namespace
}  // namespace tessera::k8s
