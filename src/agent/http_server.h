#pragma once
// AgentServer: the agent's HTTP endpoints — GET /metrics (Prometheus text format 0.0.4),
// GET /healthz (liveness: the discovery loop turns) and GET /readyz (readiness: GPUs discovered,
// the store answers; 503 with the reason otherwise), from Agent::health(). GETs only: any
// request body is refused (kGetOnlyLimits, base/daemon_http.h: 413, timeouts, 16 workers).
// Runs cpp-httplib on its own thread; Stop() (also the destructor) ends it and waits. Does not
// own the agent.

#include <memory>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "base/error.h"

namespace httplib {
class Server;
}

namespace tessera::agent {

class AgentServer {
 public:
  explicit AgentServer(Agent& agent);
  ~AgentServer();
  // Binds host:port (port 0: any free port) and serves; returns the bound port.
  [[nodiscard]] Expected<int> Start(const std::string& host, int port);
  void Stop();

 private:
  Agent& agent_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace tessera::agent
