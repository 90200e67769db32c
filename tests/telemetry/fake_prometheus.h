#pragma once
// An in-process HTTP server speaking the documented Prometheus HTTP API response format
// (https://prometheus.io/docs/prometheus/latest/querying/api/), with canned bodies chosen by
// the test: for client-side cases a real Prometheus cannot be made to produce on demand
// (timeouts, 503s, malformed bodies). The real server is exercised in integration/.

#include <httplib.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tessera::telemetry::testing_support {

class FakePrometheus {
 public:
  struct Reply {
    int status = 200;
    std::string body;
    double delay_s = 0;
  };
  // (path, query) → reply.
  using Handler = std::function<Reply(const std::string& path, const std::string& query)>;

  FakePrometheus() {
    auto serve = [this](const httplib::Request& req, httplib::Response& res) {
      Handler h;
      {
        std::lock_guard lock(mu_);
        h = handler_;
        ++requests_;
      }
      const Reply r = h ? h(req.path, req.get_param_value("query")) : Reply{404, "", 0};
      if (r.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(r.delay_s));
      res.status = r.status;
      res.set_content(r.body, "application/json");
    };
    server_.Post("/api/v1/query", serve);
    server_.Post("/api/v1/query_range", serve);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs: wait for it, or the destructor hangs.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakePrometheus() {
    server_.stop();
    thread_.join();
  }
  void Set(Handler h) {
    std::lock_guard lock(mu_);
    handler_ = std::move(h);
  }
  int requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  Handler handler_;
  int requests_ = 0;
};

}  // namespace tessera::telemetry::testing_support
