#include "agent/http_server.h"

#include <httplib.h>

#include <chrono>

#include "base/daemon_http.h"

namespace tessera::agent {

AgentServer::AgentServer(Agent& agent)
    : agent_(agent), server_(std::make_unique<httplib::Server>()) {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(agent_.Metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  ServeHealth(*server_, agent_.health());
  ApplyHttpLimits(*server_, kGetOnlyLimits, "tessera-agent");
}

AgentServer::~AgentServer() { Stop(); }

Expected<int> AgentServer::Start(const std::string& host, int port) {
  const int bound =
      port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) return Fail("cannot listen on {}", JoinHostPort(host, port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

void AgentServer::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace tessera::agent
