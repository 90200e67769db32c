// The daemons' command lines (schedule, extender, agent; cli/daemon_flags.h and their
// *_cmd.cc), as a user meets them: hostile flag values are refused before anything starts, with
// one line naming the flag, and what is found at start (a kubeconfig, a port) is one error
// naming it, never a signal.
#include "cli/daemon_flags.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"

namespace tessera::cli {
namespace {

struct Outcome {
  int code;
  std::string err;
};

Outcome RunCaptured(std::vector<std::string> args) {
  args.insert(args.begin(), "tessera");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = Run(static_cast<int>(argv.size()), argv.data());
  testing::internal::GetCapturedStdout();
  return {code, testing::internal::GetCapturedStderr()};
}

// The lines of `err` that are not the daemon's log (spdlog's lines start with '[').
std::vector<std::string> ErrorLines(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.front() != '[') lines.push_back(line);
  }
  return lines;
}

// NaN passes CLI11's PositiveNumber ("--refresh nan" and "--retry-period nan" would make the
// daemons spin), and so do infinities and absurd values. Every duration flag of the three
// daemons refuses them at parse time: exit 2, one line naming the flag.
TEST(DaemonFlagsTest, EveryDurationFlagRefusesNonFiniteAndOutOfRangeValues) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> flags = {
      {"schedule",
       {"--lease-duration", "--renew-deadline", "--retry-period", "--inventory-poll",
        "--telemetry-interval", "--telemetry-window", "--telemetry-step"}},
      {"extender", {"--refresh", "--telemetry-interval", "--telemetry-window", "--telemetry-step"}},
      {"agent", {"--interval", "--heartbeat-ttl", "--mps-stuck-seconds", "--reshape-budget"}},
  };
  for (const auto& [sub, names] : flags) {
    for (const std::string& flag : names) {
      for (const char* value : {"nan", "-nan", "inf", "-inf", "1e308", "-1", "", "5s"}) {
        const Outcome o = RunCaptured({sub, flag, value});
        EXPECT_EQ(o.code, 2) << sub << " " << flag << " '" << value << "'\n" << o.err;
        const std::vector<std::string> lines = ErrorLines(o.err);
        ASSERT_EQ(lines.size(), 1u) << sub << " " << flag << " " << value << "\n" << o.err;
        EXPECT_TRUE(lines[0].starts_with("tessera " + sub + ": " + flag + ": ")) << lines[0];
      }
    }
  }
}

// The bounds, as the flags' help gives them; a value at a bound passes parsing.
TEST(DaemonFlagsTest, DurationBoundsAreNamedInTheMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"extender", "--refresh", "nan"}, "--refresh: 'nan' is not a number of seconds"},
      {{"extender", "--refresh", "0"}, "--refresh: 0 s is below the 0.1 s minimum"},
      {{"schedule", "--retry-period", "nan"}, "--retry-period: 'nan' is not a number of seconds"},
      {{"schedule", "--lease-duration", "nan"},
       "--lease-duration: 'nan' is not a number of seconds"},
      {{"schedule", "--renew-deadline", "nan"},
       "--renew-deadline: 'nan' is not a number of seconds"},
      {{"schedule", "--lease-duration", "1e9"},
       "--lease-duration: 1e9 s is above the 3600 s maximum"},
  };
  for (const auto& [args, want] : cases) {
    const Outcome o = RunCaptured(args);
    EXPECT_EQ(o.code, 2) << args[1];
    EXPECT_NE(o.err.find("tessera " + args[0] + ": " + want), std::string::npos) << o.err;
  }
}

std::string TempDir(const std::string& name) {
  const std::string dir = testing::TempDir() + "/" + name + "-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

// --kubeconfig naming a directory is an error naming the path, exit 1, not a SIGABRT out of
// schedule and extender (an uncaught std::__ios_failure, rc 134).
TEST(DaemonFlagsTest, AKubeconfigThatIsADirectoryIsOneErrorNamingIt) {
  const std::string dir = TempDir("kubeconfig-dir");
  for (const char* sub : {"schedule", "extender"}) {
    const Outcome o = RunCaptured({sub, "--kubeconfig", dir, "--store", "memory"});
    EXPECT_EQ(o.code, 1) << sub << "\n" << o.err;
    const std::vector<std::string> lines = ErrorLines(o.err);
    ASSERT_EQ(lines.size(), 1u) << o.err;
    EXPECT_EQ(lines[0], std::string("tessera ") + sub + ": kubeconfig " + dir +
                            ": is a directory, not a kubeconfig file");
  }
  std::filesystem::remove_all(dir);
}

// A port something else holds: "tessera extender: cannot listen on …", the prefix once (not
// "tessera extender: extender: cannot listen"); likewise the agent.
TEST(DaemonFlagsTest, APortInUseIsNamedOnceWithoutADoubledPrefix) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const std::string fake = std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fake_node.yaml";
  const std::vector<std::vector<std::string>> runs = {
      {"extender", "--store", "memory", "--no-api", "--listen", taken},
      {"agent", "--fake", fake, "--listen", taken},
  };
  for (const auto& args : runs) {
    const Outcome o = RunCaptured(args);
    EXPECT_EQ(o.code, 1) << args[0] << "\n" << o.err;
    const std::vector<std::string> lines = ErrorLines(o.err);
    ASSERT_EQ(lines.size(), 1u) << o.err;
    EXPECT_EQ(lines[0], "tessera " + args[0] + ": cannot listen on " + taken);
  }
  close(fd);
}

// '--listen [::1]:PORT' works in every daemon: the extender and the agent start on it (the stop
// flag is raised beforehand, so each returns as soon as it serves); a malformed bracket is a usage
// error naming the address.
TEST(DaemonFlagsTest, ABracketedIpv6ListenAddressIsServed) {
  std::ifstream inet6("/proc/net/if_inet6");
  std::string line;
  bool loopback = false;
  while (std::getline(inet6, line))
    loopback |= line.starts_with("00000000000000000000000000000001");
  const std::string fake = std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fake_node.yaml";
  for (const char* sub : {"extender", "agent", "schedule"}) {
    const Outcome o = RunCaptured({sub, "--listen", "[::1", "--store", "memory"});
    EXPECT_EQ(o.code, 2) << sub << "\n" << o.err;
    EXPECT_NE(o.err.find(std::string("tessera ") + sub +
                         ": --listen: listen address '[::1': '[' without its ']'"),
              std::string::npos)
        << o.err;
  }
  if (!loopback) GTEST_SKIP() << "this machine has no IPv6 loopback (::1)";
  daemon_flags::StopFlag() = true;
  const Outcome ext =
      RunCaptured({"extender", "--store", "memory", "--no-api", "--listen", "[::1]:0"});
  const Outcome agent = RunCaptured({"agent", "--fake", fake, "--listen", "[::1]:0"});
  daemon_flags::StopFlag() = false;
  EXPECT_EQ(ext.code, 0) << ext.err;
  EXPECT_NE(ext.err.find("HTTP on [::1]:"), std::string::npos) << ext.err;
  EXPECT_EQ(agent.code, 0) << agent.err;
  EXPECT_NE(agent.err.find("/readyz on [::1]:"), std::string::npos) << agent.err;
}

// Without --client-ca or --token-file any pod could POST /bind: the extender says at start, as
// a warning, that it serves every client; a token file that is empty or holds more
// than one word is an error naming it; --client-ca needs HTTPS.
TEST(DaemonFlagsTest, TheExtenderWarnsWhenUnauthenticatedAndChecksItsCredentials) {
  daemon_flags::StopFlag() = true;
  const Outcome open =
      RunCaptured({"extender", "--store", "memory", "--no-api", "--listen", "127.0.0.1:0"});
  daemon_flags::StopFlag() = false;
  EXPECT_EQ(open.code, 0) << open.err;
  EXPECT_NE(open.err.find("warning"), std::string::npos) << open.err;
  EXPECT_NE(open.err.find("no client authentication"), std::string::npos) << open.err;

  const std::string dir = TempDir("extender-token");
  std::ofstream(dir + "/empty") << "\n";
  std::ofstream(dir + "/two") << "one two\n";
  std::ofstream(dir + "/good") << "s3cret\n";
  for (const auto& [file, want] :
       {std::pair{dir + "/empty", "--token-file " + dir + "/empty: the file is empty"},
        std::pair{dir + "/two",
                  "--token-file " + dir + "/two: a token is one word; the file holds several"}}) {
    const Outcome o = RunCaptured({"extender", "--store", "memory", "--no-api", "--listen",
                                   "127.0.0.1:0", "--token-file", file});
    EXPECT_EQ(o.code, 1) << o.err;
    EXPECT_NE(o.err.find("tessera extender: " + want), std::string::npos) << o.err;
  }
  daemon_flags::StopFlag() = true;
  const Outcome good = RunCaptured({"extender", "--store", "memory", "--no-api", "--listen",
                                    "127.0.0.1:0", "--token-file", dir + "/good"});
  daemon_flags::StopFlag() = false;
  EXPECT_EQ(good.code, 0) << good.err;
  EXPECT_EQ(good.err.find("no client authentication"), std::string::npos) << good.err;
  EXPECT_EQ(good.err.find("s3cret"), std::string::npos) << "the token is logged";

  const Outcome ca =
      RunCaptured({"extender", "--store", "memory", "--no-api", "--client-ca", dir + "/good"});
  EXPECT_EQ(ca.code, 2) << ca.err;
  EXPECT_NE(ca.err.find("tessera extender: --client-ca needs --tls-cert and --tls-key"),
            std::string::npos)
      << ca.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera::cli
