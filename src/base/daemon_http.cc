#include "base/daemon_http.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "base/health.h"

namespace tessera {

void ApplyHttpLimits(httplib::Server& server, const HttpLimits& limits, std::string who,
                     RequestGate gate) {
  server.set_payload_max_length(limits.max_body_bytes);
  server.set_read_timeout(limits.read_timeout_s, 0);
  server.set_write_timeout(limits.write_timeout_s, 0);
  server.set_keep_alive_timeout(limits.keep_alive_timeout_s);
  server.set_keep_alive_max_count(limits.keep_alive_max_requests);
  const size_t workers = limits.workers;
  server.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  // 0.11.4 applies set_payload_max_length only to a Content-Length; any other body it stores
  // whole. The pre-routing handler runs after the headers and before the body is read.
  server.set_pre_routing_handler([gate = std::move(gate)](const httplib::Request& req,
                                                          httplib::Response& res) {
    const bool chunked = req.has_header("Transfer-Encoding");
    const bool takes_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (!chunked && !(takes_body && !req.has_header("Content-Length"))) {
      return gate && gate(req, res) ? httplib::Server::HandlerResponse::Handled
                                    : httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 411;
    res.set_content("a request body needs a Content-Length\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  // Refusals the library makes (413) come with an empty body: say why, and log it.
  const uint64_t limit = limits.max_body_bytes;
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [limit, who = std::move(who)](const httplib::Request& req, httplib::Response& res) {
        if (res.status != 413 || !res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        const std::string length = req.get_header_value("Content-Length");
        spdlog::warn("{}: refused {} {} from {}: a body of {} bytes, over the limit of {} bytes",
                     who, req.method, req.path, req.remote_addr, length, limit);
        res.set_content(
            fmt::format("request body of {} bytes is over the limit of {} bytes\n", length, limit),
            "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }));
}

void ServeHealth(httplib::Server& server, const Health& health) {
  auto answer = [](const Health::Report& r, httplib::Response& res) {
    res.status = r.ok ? 200 : 503;
    res.set_content(r.text, "text/plain; charset=utf-8");
  };
  server.Get("/healthz", [&health, answer](const httplib::Request&, httplib::Response& res) {
    answer(health.Liveness(), res);
  });
  server.Get("/readyz", [&health, answer](const httplib::Request&, httplib::Response& res) {
    answer(health.Readiness(), res);
  });
}

Expected<std::pair<std::string, int>> ParseListenAddress(std::string_view address) {
  std::string_view host, port;
  if (address.starts_with('[')) {
    const auto close = address.find(']');
    if (close == std::string_view::npos) {
      return Fail("listen address '{}': '[' without its ']'", address);
    }
    host = address.substr(1, close - 1);
    if (host.empty() || host.find(':') == std::string_view::npos) {
      return Fail("listen address '{}': brackets hold an IPv6 address", address);
    }
    if (close + 1 >= address.size() || address[close + 1] != ':') {
      return Fail("listen address '{}': want [ipv6]:port", address);
    }
    port = address.substr(close + 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos) {
      return Fail("listen address '{}': want host:port", address);
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find_first_of("[]") != std::string_view::npos) {
      return Fail("listen address '{}': want host:port or [ipv6]:port", address);
    }
  }
  int n = -1;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || port.front() == '-' || port.front() == '+' || ec != std::errc() ||
      end != port.data() + port.size() || n > 65535) {
    return Fail("listen address '{}': port '{}' is not 0..65535", address, port);
  }
  return std::make_pair(host.empty() ? std::string("0.0.0.0") : std::string(host), n);
}

std::string JoinHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace tessera
