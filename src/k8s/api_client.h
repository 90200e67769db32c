#pragma once
// ApiClient: REST calls and watch streams against the Kubernetes API server (DESIGN §6) over
// HTTPS with the server certificate always verified against the credentials' CA (host name
// included), authenticated by bearer token or client certificate.
//
// Requests reuse a small pool of keep-alive connections; each Stream (a watch) gets its own
// connection until it ends. A non-2xx answer is a value (HttpResponse.status), not an Error;
// an Error means no answer (connect, TLS, timeout) and names the method, server and path —
// never the token. Thread-safe: any thread may call any method.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "k8s/kubeconfig.h"

namespace httplib {
class ClientImpl;
}

namespace tessera::k8s {

struct HttpResponse {
  int status = 0;
  std::string body;
  bool ok() const { return status >= 200 && status < 300; }
};

struct ApiClientOptions {
  double timeout_s = 30;         // per request (connect, read, write)
  double connect_timeout_s = 5;  // also for streams
  std::string user_agent = "tessera";
  size_t max_idle_connections = 8;
  double max_idle_s = 2;  // a pooled connection idle longer is not reused
};

inline constexpr std::string_view kMergePatch = "application/merge-patch+json";

class ApiClient {
 public:
  [[nodiscard]] static Expected<std::unique_ptr<ApiClient>> Create(Credentials credentials,
                                                                   ApiClientOptions options = {});
  ~ApiClient();

  [[nodiscard]] Expected<HttpResponse> Get(const std::string& path);
  [[nodiscard]] Expected<HttpResponse> Post(const std::string& path, const std::string& body);
  [[nodiscard]] Expected<HttpResponse> Put(const std::string& path, const std::string& body);
  [[nodiscard]] Expected<HttpResponse> Patch(const std::string& path, const std::string& body,
                                             std::string_view content_type = kMergePatch);
  [[nodiscard]] Expected<HttpResponse> Delete(const std::string& path);

  // GET `path` and hand every newline-delimited line of a 200 answer to `on_line` as it
  // arrives (a watch). Returns when the server ends the stream, `on_line` returns false, no
  // byte arrives for `idle_timeout_s`, or CancelStreams() is called. A non-200 answer comes
  // back with its body; an Error means the stream could not be opened or broke.
  [[nodiscard]] Expected<HttpResponse> Stream(const std::string& path,
                                              const std::function<bool(std::string_view)>& on_line,
                                              double idle_timeout_s, const void* owner = nullptr);
  // Closes the open streams of `owner` (nullptr: all) now and refuses new ones for it until
  // ResumeStreams(owner): how an informer's Stop interrupts a watch blocked in a read.
  void CancelStreams(const void* owner = nullptr);
  void ResumeStreams(const void* owner = nullptr);

  const Credentials& credentials() const { return credentials_; }

 private:
  struct Target {
    bool tls = true;
    std::string host;
    int port = 443;
  };
  ApiClient(Credentials credentials, ApiClientOptions options, Target target);
  Expected<std::unique_ptr<httplib::ClientImpl>> Connect(double read_timeout_s);
  std::unique_ptr<httplib::ClientImpl> Acquire(Error& error);
  void Release(std::unique_ptr<httplib::ClientImpl> client);
  std::string Token();
  Expected<HttpResponse> Call(std::string_view method, const std::string& path,
                              const std::string& body, std::string_view content_type);
  std::string Describe(std::string_view method, const std::string& path) const;

  Credentials credentials_;
  ApiClientOptions options_;
  Target target_;
  std::mutex mu_;
  // Idle keep-alive connections and when they went idle: one idle longer than a server's
  // keep-alive timeout is closed at its end and would stall the next request on it.
  std::vector<std::pair<std::unique_ptr<httplib::ClientImpl>, double>> idle_;
  std::map<httplib::ClientImpl*, const void*> streams_;
  std::set<const void*> cancelled_;  // owners; nullptr = everyone
  std::string token_;
  double token_read_at_ = 0;
};

// "/api/v1/namespaces/NS/pods/NAME" and friends, with the segments escaped.
std::string UrlEscape(std::string_view s);

}  // namespace tessera::k8s
