#pragma once
// What the daemons' HTTP servers share (the agent's, `tessera schedule`'s probes and metrics, the
// extender's; docs/runtime.md "HTTP limits"): limits on what one client can take, set with
// cpp-httplib's own settings, the /healthz and /readyz routes over a Health (base/health.h), and
// the one parser of their --listen addresses.
//
// With cpp-httplib 0.11.4 (Debian 12; its server code is compiled into libcpp-httplib.so, so
// only the run-time settings below reach it, never CPPHTTPLIB_* macros):
//  - max_body_bytes: a request whose Content-Length is larger is answered 413; its body is read
//    and dropped, never stored (set_payload_max_length). A body not sized by Content-Length
//    (Transfer-Encoding: chunked, or a POST/PUT/PATCH without Content-Length), which 0.11.4
//    would store whatever its size, is answered 411 before any of it is read.
//  - read_timeout_s, write_timeout_s: a read or write that makes no progress for that long
//    closes the connection (set_read_timeout, set_write_timeout).
//  - keep_alive_timeout_s, keep_alive_max_requests: an idle kept-alive connection is closed
//    after that long, and after that many requests (set_keep_alive_*).
//  - workers: connections are served by a fixed pool of that many threads (new_task_queue with
//    httplib::ThreadPool); accepted connections beyond it wait in its queue. An idle or
//    stalled client holds a worker for keep_alive_timeout_s or read_timeout_s, and one that
//    trickles a byte per read timeout holds it as long as it keeps trickling; up to workers - 1
//    of them leave at least one worker for everyone else.
// Not bounded by 0.11.4, whatever the settings: a request line or header line is buffered until
// its newline arrives (docs/runtime.md, "HTTP limits").

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "base/error.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tessera {

class Health;

struct HttpLimits {
  uint64_t max_body_bytes = 0;
  int read_timeout_s = 5;
  int write_timeout_s = 5;
  int keep_alive_timeout_s = 5;
  size_t keep_alive_max_requests = 100;
  size_t workers = 16;
};

// The limits of a server whose routes are all GETs (the agent's, `tessera schedule`'s): no
// request body is read, so any body is refused.
inline constexpr HttpLimits kGetOnlyLimits{};

// Decides a request from its headers alone, before its body is read: true when it has answered
// (filled `res`, e.g. 401) and the request goes no further; false lets it through.
using RequestGate = std::function<bool(const httplib::Request&, httplib::Response&)>;

// Applies `limits` to `server` before it listens. `who` names the server in the log line
// written for each request refused for its size ("tessera-extender"). `gate`, when set, sees
// every request after the limits' own checks.
void ApplyHttpLimits(httplib::Server& server, const HttpLimits& limits, std::string who,
                     RequestGate gate = {});

// A --listen address, "host:port", into its host and port (0..65535; 0: any free port). The host
// is an RFC 3986 host: a name, an IPv4 address, or an IPv6 address in brackets
// ("[::1]:8888", returned without them); empty ("":8888") means every IPv4 interface, 0.0.0.0.
// An unbracketed IPv6 address ("::1:8888") is read as host "::1" and the last colon's port, as
// before brackets were accepted. The Error names the address and what is wrong with it.
[[nodiscard]] Expected<std::pair<std::string, int>> ParseListenAddress(std::string_view address);

// host and port as an address a person can paste back into --listen: "[::1]:8888" for IPv6.
std::string JoinHostPort(std::string_view host, int port);

// GET /healthz (liveness) and GET /readyz (readiness): 200 or 503 with health's plain text.
// `health` must outlive the server.
void ServeHealth(httplib::Server& server, const Health& health);

}  // namespace tessera
