#include "telemetry/prometheus_client.h"

#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace tessera::telemetry {
namespace {

using nlohmann::json;

// Prometheus encodes sample values as strings ("1.5", "NaN", "+Inf").
double ParseValue(const json& v) {
  const std::string s = v.get<std::string>();
  if (s == "NaN") return std::nan("");
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  return std::stod(s);
}

Labels ParseLabels(const json& metric) {
  Labels out;
  for (const auto& [k, v] : metric.items()) out.emplace(k, v.get<std::string>());
  return out;
}

Sample ParsePair(const json& pair) { return {pair.at(0).get<double>(), ParseValue(pair.at(1))}; }

// The "data" object of a success body, or the Error of an error body.
Expected<json> Data(std::string_view body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const std::exception&) {
    return Fail("response is not JSON: '{}'", body.substr(0, 200));
  }
  if (!j.is_object()) return Fail("response is not a JSON object");
  const std::string status = j.value("status", "");
  if (status != "success") {
    return Fail("{}: {}", j.value("errorType", "error"), j.value("error", "(no error text)"));
  }
  if (!j.contains("data")) return Fail("success without data");
  return j.at("data");
}

}  // namespace

Expected<std::vector<InstantSample>> ParseInstantResponse(std::string_view body) {
  auto data = Data(body);
  if (!data) return std::unexpected(data.error());
  try {
    const std::string type = data->at("resultType").get<std::string>();
    std::vector<InstantSample> out;
    if (type == "vector") {
      for (const json& r : data->at("result")) {
        out.push_back({ParseLabels(r.at("metric")), ParsePair(r.at("value"))});
      }
    } else if (type == "scalar") {
      out.push_back({{}, ParsePair(data->at("result"))});
    } else {
      return Fail("unexpected resultType '{}' for an instant query", type);
    }
    return out;
  } catch (const std::exception& e) {
    return Fail("malformed instant result: {}", e.what());
  }
}

Expected<std::vector<RangeSeries>> ParseRangeResponse(std::string_view body) {
  auto data = Data(body);
  if (!data) return std::unexpected(data.error());
  try {
    const std::string type = data->at("resultType").get<std::string>();
    if (type != "matrix") return Fail("unexpected resultType '{}' for a range query", type);
    std::vector<RangeSeries> out;
    for (const json& r : data->at("result")) {
      RangeSeries s{ParseLabels(r.at("metric")), {}};
      for (const json& pair : r.at("values")) s.samples.push_back(ParsePair(pair));
      out.push_back(std::move(s));
    }
    return out;
  } catch (const std::exception& e) {
    return Fail("malformed range result: {}", e.what());
  }
}

Expected<PrometheusClient> PrometheusClient::Create(PrometheusOptions options) {
  const std::string& url = options.url;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    return Fail("prometheus url '{}': want http://host:port", url);
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Fail("prometheus url '{}': scheme must be http or https", url);
  }
  const auto path_start = url.find('/', scheme_end + 3);
  std::string origin = url.substr(0, path_start);
  std::string prefix = path_start == std::string::npos ? "" : url.substr(path_start);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (origin.size() <= scheme_end + 3) return Fail("prometheus url '{}': no host", url);
  if (options.timeout_s <= 0) return Fail("prometheus timeout must be positive");
  return PrometheusClient(std::move(options), std::move(origin), std::move(prefix));
}

Expected<std::string> PrometheusClient::Post(
    std::string_view path, const std::vector<std::pair<std::string, std::string>>& form,
    std::string_view promql) const {
  // httplib throws only on programming errors (bad origin), which Create rules out; catch anyway
  // so nothing crosses the module edge.
  try {
    httplib::Client cli(origin_);
    const auto sec = static_cast<time_t>(options_.timeout_s);
    const auto usec = static_cast<time_t>((options_.timeout_s - sec) * 1e6);
    cli.set_connection_timeout(sec, usec);
    cli.set_read_timeout(sec, usec);
    cli.set_write_timeout(sec, usec);
    httplib::Params params;
    for (const auto& [k, v] : form) params.emplace(k, v);
    const std::string full = prefix_ + std::string(path);
    auto res = cli.Post(full, params);
    if (!res) {
      return Fail("prometheus {}: query '{}': {}", options_.url, promql,
                  httplib::to_string(res.error()));
    }
    if (res->status != 200) {
      // Prometheus explains 400/422/503 in a JSON error body; anything else is shown raw.
      auto parsed = Data(res->body);
      const std::string why = parsed ? std::string("(no error body)") : parsed.error().message;
      return Fail("prometheus {}: query '{}': HTTP {}: {}", options_.url, promql, res->status, why);
    }
    return res->body;
  } catch (const std::exception& e) {
    return Fail("prometheus {}: query '{}': {}", options_.url, promql, e.what());
  }
}

Expected<std::vector<InstantSample>> PrometheusClient::Query(std::string_view promql,
                                                             std::optional<double> at) const {
  std::vector<std::pair<std::string, std::string>> form = {{"query", std::string(promql)}};
  if (at) form.emplace_back("time", fmt::format("{:.3f}", *at));
  form.emplace_back("timeout", fmt::format("{:.3f}", options_.timeout_s));
  auto body = Post("/api/v1/query", form, promql);
  if (!body) return std::unexpected(body.error());
  auto parsed = ParseInstantResponse(*body);
  if (!parsed) {
    return Fail("prometheus {}: query '{}': {}", options_.url, promql, parsed.error().message);
  }
  return parsed;
}

Expected<std::vector<RangeSeries>> PrometheusClient::QueryRange(std::string_view promql,
                                                                double start, double end,
                                                                double step_s) const {
  if (step_s <= 0 || end < start) return Fail("range query '{}': bad range or step", promql);
  auto body = Post("/api/v1/query_range",
                   {{"query", std::string(promql)},
                    {"start", fmt::format("{:.3f}", start)},
                    {"end", fmt::format("{:.3f}", end)},
                    {"step", fmt::format("{:.3f}", step_s)},
                    {"timeout", fmt::format("{:.3f}", options_.timeout_s)}},
                   promql);
  if (!body) return std::unexpected(body.error());
  auto parsed = ParseRangeResponse(*body);
  if (!parsed) {
    return Fail("prometheus {}: query '{}': {}", options_.url, promql, parsed.error().message);
  }
  return parsed;
}

}  // namespace tessera::telemetry
