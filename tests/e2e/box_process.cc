#include "e2e/box_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tessera::e2e {

namespace {

// The pids of the live children, for KillAllChildren (lock-free: a signal handler reads them).
constexpr int kMaxChildren = 64;
std::atomic<pid_t> g_children[kMaxChildren];

void Register(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void Unregister(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

}  // namespace

void KillAllChildren() {
  for (auto& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) kill(pid, SIGKILL);
  }
}

Child::Child(std::string name, std::vector<std::string> argv, const std::string& log)
    : name_(std::move(name)) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  const int rc = posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot start " + name_ + " (" + argv[0] + "): " + strerror(rc));
  }
  Register(pid_);
}

Child::~Child() { Stop(); }

Child::Child(Child&& o) noexcept : name_(std::move(o.name_)), pid_(o.pid_) { o.pid_ = -1; }

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    Stop();
    name_ = std::move(o.name_);
    pid_ = o.pid_;
    o.pid_ = -1;
  }
  return *this;
}

bool Child::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    Unregister(pid_);
    pid_ = -1;
    return false;
  }
  return true;
}

void Child::Stop() {
  if (!Running()) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      Unregister(pid_);
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Kill();
}

void Child::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  Unregister(pid_);
  pid_ = -1;
}

namespace {

// Whether a listener could bind 127.0.0.1:port now (with SO_REUSEADDR, as the daemons bind).
bool CanBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace

int FreePort() {
  // Below Linux's ephemeral range (32768–60999 by default): the suite's outgoing connections
  // take their local ports there, and one of them held a port picked from it by the time
  // `tessera schedule` bound it ("cannot listen on 127.0.0.1:34894", a fresh-clone run).
  static std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    const int port = 20000 + static_cast<int>(rng() % 12000);
    if (CanBind(port)) return port;
  }
  throw std::runtime_error("no free loopback port");
}

bool HttpOk(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(1);
  c.set_read_timeout(2);
  auto r = c.Get(path);
  return r && r->status == 200;
}

void WaitUntil(const std::string& what, const std::string& log, double timeout_s,
               const std::function<bool()>& check) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (check()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (check()) return;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string tail = ss.str();
  if (tail.size() > 2000) tail = tail.substr(tail.size() - 2000);
  throw std::runtime_error(what + " did not come up; " + log + " ends:\n" + tail);
}

}  // namespace tessera::e2e
