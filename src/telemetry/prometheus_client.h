#pragma once
// PrometheusClient: the Prometheus HTTP API (https://prometheus.io/docs/prometheus/latest/
// querying/api/) — instant queries (/api/v1/query) and range queries (/api/v1/query_range) in
// PromQL, with connect/read timeouts. Every failure is an Error naming the server and the
// query: unreachable, timed out, an HTTP status with Prometheus's own errorType and error text
// from the body, or a body that is not the documented JSON. Values "NaN", "+Inf", "-Inf" parse.
// Stateless between calls (a connection per call); thread-safe.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "telemetry/telemetry.h"

namespace tessera::telemetry {

using Labels = std::map<std::string, std::string>;

struct InstantSample {
  Labels labels;
  Sample sample;
};

struct RangeSeries {
  Labels labels;
  Series samples;
};

struct PrometheusOptions {
  std::string url = "http://127.0.0.1:9090";  // scheme://host:port[/path-prefix]
  double timeout_s = 2.0;                     // connect and read, each
};

class PrometheusClient {
 public:
  // Refuses a URL that is not http(s)://host[:port][/prefix].
  [[nodiscard]] static Expected<PrometheusClient> Create(PrometheusOptions options);

  // Evaluates `promql` at `at` (Unix seconds; default: the server's now). A scalar result comes
  // back as one sample without labels.
  [[nodiscard]] Expected<std::vector<InstantSample>> Query(std::string_view promql,
                                                           std::optional<double> at = {}) const;
  [[nodiscard]] Expected<std::vector<RangeSeries>> QueryRange(std::string_view promql, double start,
                                                              double end, double step_s) const;
  const std::string& url() const { return options_.url; }

 private:
  PrometheusClient(PrometheusOptions options, std::string origin, std::string prefix)
      : options_(std::move(options)), origin_(std::move(origin)), prefix_(std::move(prefix)) {}
  // POSTs the form to prefix + path and returns the "data" object's JSON text.
  Expected<std::string> Post(std::string_view path,
                             const std::vector<std::pair<std::string, std::string>>& form,
                             std::string_view promql) const;

  PrometheusOptions options_;
  std::string origin_;  // scheme://host:port
  std::string prefix_;  // "" or "/prometheus"
};

// Parses one response body of the HTTP API (exposed for tests): the "data" of a success, or the
// Error its errorType/error describe.
[[nodiscard]] Expected<std::vector<InstantSample>> ParseInstantResponse(std::string_view body);
[[nodiscard]] Expected<std::vector<RangeSeries>> ParseRangeResponse(std::string_view body);

}  // namespace tessera::telemetry
