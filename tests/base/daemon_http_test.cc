// The daemons' one --listen parser (a bracketed IPv6 address, "[::1]:9400", works in schedule,
// extender and agent as the unbracketed form does), and a server listening on what it returns.
#include "base/daemon_http.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <string>
#include <thread>
#include <utility>

namespace tessera {
namespace {

using HostPort = std::pair<std::string, int>;

TEST(ParseListenAddressTest, AcceptsHostsOfEveryForm) {
  const std::vector<std::pair<std::string, HostPort>> good = {
      {"127.0.0.1:9400", {"127.0.0.1", 9400}},
      {":9400", {"0.0.0.0", 9400}},
      {"localhost:0", {"localhost", 0}},
      {"[::1]:8888", {"::1", 8888}},
      {"[::]:65535", {"::", 65535}},
      {"[fe80::1%eth0]:10259", {"fe80::1%eth0", 10259}},
      {"::1:8888", {"::1", 8888}},  // unbracketed: the last colon's port
  };
  for (const auto& [text, want] : good) {
    auto got = ParseListenAddress(text);
    ASSERT_TRUE(got.has_value()) << text << ": " << got.error().message;
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(ParseListenAddressTest, RefusesWhatIsNotHostColonPortNamingTheAddress) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"9400", "listen address '9400': want host:port"},
      {"h:x", "listen address 'h:x': port 'x' is not 0..65535"},
      {"h:", "listen address 'h:': port '' is not 0..65535"},
      {"h:-1", "listen address 'h:-1': port '-1' is not 0..65535"},
      {"h:65536", "listen address 'h:65536': port '65536' is not 0..65535"},
      {"[::1]", "listen address '[::1]': want [ipv6]:port"},
      {"[::1]8888", "listen address '[::1]8888': want [ipv6]:port"},
      {"[::1:8888", "listen address '[::1:8888': '[' without its ']'"},
      {"[]:8888", "listen address '[]:8888': brackets hold an IPv6 address"},
      {"[10.0.0.1]:8888", "listen address '[10.0.0.1]:8888': brackets hold an IPv6 address"},
      {"a]b:8888", "listen address 'a]b:8888': want host:port or [ipv6]:port"},
  };
  for (const auto& [text, want] : bad) {
    auto got = ParseListenAddress(text);
    ASSERT_FALSE(got.has_value()) << text;
    EXPECT_EQ(got.error().message, want);
  }
}

TEST(ParseListenAddressTest, JoinHostPortBracketsIpv6Only) {
  EXPECT_EQ(JoinHostPort("::1", 80), "[::1]:80");
  EXPECT_EQ(JoinHostPort("127.0.0.1", 80), "127.0.0.1:80");
  EXPECT_EQ(JoinHostPort("localhost", 0), "localhost:0");
}

// The parser's host is one cpp-httplib binds: a server on "[::1]:0" answers on IPv6 loopback.
TEST(ParseListenAddressTest, ABracketedIpv6AddressIsListenedOn) {
  std::ifstream inet6("/proc/net/if_inet6");
  std::string line;
  bool loopback = false;
  while (std::getline(inet6, line))
    loopback |= line.starts_with("00000000000000000000000000000001");
  if (!loopback) GTEST_SKIP() << "this machine has no IPv6 loopback (::1)";
  auto address = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(address.has_value()) << address.error().message;
  httplib::Server server;
  server.Get("/ping", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("pong", "text/plain");
  });
  const int port = server.bind_to_any_port(address->first);
  ASSERT_GT(port, 0) << "cannot bind " << address->first;
  std::thread serving([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  httplib::Client client("::1", port);
  auto res = client.Get("/ping");
  server.stop();
  serving.join();
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "pong");
}

}  // namespace
}  // namespace tessera
