#pragma once
// A redis-server the test owns: started on a free loopback port in a fresh directory with
// append-only persistence (fsync on every write, so an acknowledged write survives SIGKILL),
// killed and restarted on the same port and directory on demand, and stopped by the destructor
// even when the test fails. The binary comes from TESSERA_TEST_REDIS_SERVER (set by
// scripts/test.sh); Available() is false without it.

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tessera::testing_support {

// A port the kernel just handed out on 127.0.0.1 (free at the time of asking).
inline int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool PortAccepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

class RedisProcess {
 public:
  explicit RedisProcess(std::string password = "")
      : password_(std::move(password)), port_(FreeLoopbackPort()) {
    const char* bin = std::getenv("TESSERA_TEST_REDIS_SERVER");
    if (bin == nullptr || *bin == '\0') return;
    binary_ = bin;
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera-redis-" + std::to_string(::getpid()) + "-" + std::to_string(port_));
    std::filesystem::create_directories(dir_);
  }
  ~RedisProcess() {
    Kill(SIGTERM);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;

  bool Available() const { return !binary_.empty(); }
  int port() const { return port_; }

  // Starts the server and waits (up to 10 s) until it accepts connections.
  bool Start() {
    std::vector<std::string> args = {binary_,
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--dir",
                                     dir_.string(),
                                     "--appendonly",
                                     "yes",
                                     "--appendfsync",
                                     "always",
                                     "--save",
                                     "",
                                     "--daemonize",
                                     "no",
                                     "--logfile",
                                     (dir_ / "redis.log").string()};
    if (!password_.empty()) {
      args.push_back("--requirepass");
      args.push_back(password_);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary_.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
      return false;
    }
    for (int i = 0; i < 1000; ++i) {
      if (PortAccepts(port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // SIGKILL: no shutdown save, no goodbye to clients — a crash.
  void Kill(int sig = SIGKILL) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string password_;
  int port_;
  std::string binary_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

}  // namespace tessera::testing_support
