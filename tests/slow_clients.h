#pragma once
// SlowClients: raw loopback connections that behave like a slowloris: each sends the
// start of a request and then stalls, either trickling one more header byte every
// `trickle_s` (every byte resets a server's per-read timeout, so a worker stays held for as long
// as the test wants) or, after StopTrickling(), sending nothing at all. ClosedByServer() says
// whether the server hung up on each of them. Test-only; never a timed assertion: callers wait
// with generous bounds for a request to be served at all.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing_support {

class SlowClients {
 public:
  // Opens `n` connections to 127.0.0.1:port and sends each `head` (a partial request).
  SlowClients(int port, int n, const std::string& head, double trickle_s = 0.5)
      : trickle_s_(trickle_s) {
    for (int i = 0; i < n; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        if (fd >= 0) close(fd);
        continue;
      }
      (void)send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      fds_.push_back(fd);
    }
    trickler_ = std::thread([this] {
      while (trickling_) {
        for (int fd : fds_) (void)send(fd, "a", 1, MSG_NOSIGNAL);
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(trickle_s_);
        while (trickling_ && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  ~SlowClients() {
    StopTrickling();
    for (int fd : fds_) close(fd);
  }
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;

  int connected() const { return static_cast<int>(fds_.size()); }

  // From now on the connections send nothing more.
  void StopTrickling() {
    trickling_ = false;
    if (trickler_.joinable()) trickler_.join();
  }

  // How many connections the server has closed, waiting up to `timeout_s` on each for the end
  // of the stream (an error response before it is read and dropped).
  int ClosedByServer(double timeout_s) {
    int closed = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (int fd : fds_) {
      char buf[4096];
      for (;;) {
        const double left =
            std::chrono::duration<double>(until - std::chrono::steady_clock::now()).count();
        if (left <= 0) break;
        timeval tv{static_cast<time_t>(left), static_cast<suseconds_t>((left - int(left)) * 1e6)};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        const ssize_t got = recv(fd, buf, sizeof buf, 0);
        if (got > 0) continue;  // an answer (e.g. 400) before the close
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) ++closed;
        if (got == 0 || errno != EINTR) break;
      }
    }
    return closed;
  }

 private:
  double trickle_s_;
  std::vector<int> fds_;
  std::atomic<bool> trickling_{true};
  std::thread trickler_;
};

}  // namespace tessera::testing_support
