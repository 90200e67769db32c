#include "telemetry/prometheus_telemetry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

namespace tessera::telemetry {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<double> Finite(double v) {
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::string WorkloadQpsQuery(std::string_view query_template, std::string_view namespace_,
                             std::string_view pod) {
  auto escape = [](std::string_view v) {
    std::string out;
    for (char ch : v) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    return out;
  };
  std::string out(query_template);
  for (const auto& [key, value] : {std::pair{std::string_view("$namespace"), namespace_},
                                   std::pair{std::string_view("$pod"), pod}}) {
    const std::string v = escape(value);
    for (size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + v.size())) {
      out.replace(at, key.size(), v);
    }
  }
  return out;
}

Expected<std::unique_ptr<PrometheusTelemetry>> PrometheusTelemetry::Create(
    PrometheusTelemetryOptions options, const Clock& clock) {
  if (options.staleness_bound_s <= 0 || options.memory_window_s <= 0 ||
      options.memory_step_s <= 0) {
    return Fail("prometheus telemetry: staleness bound, memory window and step must be positive");
  }
  auto client = PrometheusClient::Create(options.server);
  if (!client) return std::unexpected(client.error());
  return std::unique_ptr<PrometheusTelemetry>(
      new PrometheusTelemetry(std::move(options), std::move(*client), clock));
}

PrometheusTelemetry::~PrometheusTelemetry() { StopPolling(); }

Expected<void> PrometheusTelemetry::RequireSeries(const std::vector<std::string>& metrics) const {
  for (const std::string& metric : metrics) {
    auto r = client_.Query(fmt::format("count({})", Selector(metric)));
    if (!r) return std::unexpected(r.error());
    if (r->empty()) return Fail("prometheus {} has no series {}", client_.url(), metric);
  }
  return {};
}

void PrometheusTelemetry::SetWorkloadQueries(std::map<std::string, std::string> queries) {
  std::lock_guard lock(mu_);
  qps_queries_ = std::move(queries);
}

void PrometheusTelemetry::RefreshQps(Snapshot& snap) const {
  std::map<std::string, std::string> queries;
  {
    std::lock_guard lock(mu_);
    queries = qps_queries_;
  }
  for (const auto& [workload, own] : queries) {
    const size_t slash = workload.find('/');
    if (slash == std::string::npos) continue;
    const std::string promql =
        WorkloadQpsQuery(own.empty() ? options_.qps_query : own, workload.substr(0, slash),
                         workload.substr(slash + 1));
    Values& v = snap.by_workload[workload];
    auto r = client_.Query(promql);
    if (!r) {
      v.qps_note = "query failed: " + r.error().message;
      continue;
    }
    if (r->empty()) {
      v.qps_note = "no series";
      continue;
    }
    double sum = 0;  // a template without an aggregation may answer per container or model
    for (const InstantSample& x : *r) sum += x.sample.value;
    if (!std::isfinite(sum)) {
      v.qps_note = "NaN";
      continue;
    }
    v.qps = sum;
  }
}

void PrometheusTelemetry::SetMigInstances(
    std::map<std::pair<std::string, int>, std::string> instances) {
  std::lock_guard lock(mu_);
  mig_ = std::move(instances);
}

std::string PrometheusTelemetry::Selector(std::string_view metric) const {
  return options_.selector.empty() ? std::string(metric)
                                   : fmt::format("{}{{{}}}", metric, options_.selector);
}

std::string PrometheusTelemetry::KeyOf(const Labels& labels) const {
  if (auto it = labels.find("partition_uuid"); it != labels.end() && !it->second.empty()) {
    return it->second;
  }
  auto uuid = labels.find("UUID");
  if (uuid == labels.end() || uuid->second.empty()) return "";
  if (auto gi = labels.find("GPU_I_ID"); gi != labels.end() && !gi->second.empty()) {
    int id = -1;
    try {
      id = std::stoi(gi->second);
    } catch (const std::exception&) {
      return "";
    }
    std::lock_guard lock(mu_);
    auto it = mig_.find({uuid->second, id});
    return it == mig_.end() ? "" : it->second;
  }
  return uuid->second;
}

Expected<void> PrometheusTelemetry::Refresh() {
  // Per-pod attribution repeats a partition's series once per pod: collapse them.
  auto by = [this](std::string_view metric) {
    return fmt::format("max by (UUID, GPU_I_ID, partition_uuid) ({})", Selector(metric));
  };
  auto snap = std::make_shared<Snapshot>();
  auto fail = [this](const Error& e) -> Expected<void> {
    std::lock_guard lock(mu_);
    ++failures_;
    last_error_ = e.message;
    return std::unexpected(e);
  };
  struct InstantQuery {
    const char* metric;
    std::optional<double> Values::*field;
  };
  // DCGM's units are the Telemetry interface's: GR_ENGINE_ACTIVE and SM_ACTIVE are 0..1
  // ratios, FB_USED is MiB, POWER_USAGE W, SM_CLOCK MHz.
  for (const InstantQuery& q : {InstantQuery{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", &Values::util},
                                InstantQuery{"DCGM_FI_DEV_FB_USED", &Values::memory},
                                InstantQuery{"DCGM_FI_DEV_POWER_USAGE", &Values::power},
                                InstantQuery{"DCGM_FI_PROF_SM_ACTIVE", &Values::sm_activity},
                                InstantQuery{"DCGM_FI_DEV_SM_CLOCK", &Values::sm_clock}}) {
    auto r = client_.Query(by(q.metric));
    if (!r) return fail(r.error());
    for (const auto& s : *r) {
      const std::string key = KeyOf(s.labels);
      if (key.empty()) continue;
      snap->by_uuid[key].*q.field = Finite(s.sample.value);
    }
  }
  const double end = UnixNow();
  const double start = end - options_.memory_window_s;
  struct RangeQuery {
    std::string promql;
    Series Values::*field;
    bool per_pod;
  };
  // A pod's memory is what it holds on all its partitions; its SM and bandwidth activity the
  // highest on any of them, so it stays a 0..1 fraction of one GPU.
  auto per_pod = [this](std::string_view how, std::string_view metric) {
    return fmt::format("{} by (namespace, pod) ({})", how, Selector(metric));
  };
  const RangeQuery ranges[] = {
      {by("DCGM_FI_DEV_FB_USED"), &Values::memory_series, false},
      {by("DCGM_FI_PROF_SM_ACTIVE"), &Values::sm_series, false},
      {by("DCGM_FI_PROF_DRAM_ACTIVE"), &Values::bandwidth_series, false},
      {per_pod("sum", "tessera_pod_fb_used_mib"), &Values::memory_series, true},
      {per_pod("max", "tessera_pod_sm_active"), &Values::sm_series, true},
      {per_pod("max", "tessera_pod_dram_active"), &Values::bandwidth_series, true},
  };
  for (const RangeQuery& q : ranges) {
    auto range = client_.QueryRange(q.promql, start, end, options_.memory_step_s);
    if (!range) return fail(range.error());
    for (auto& s : *range) {
      std::string key;
      if (q.per_pod) {
        auto ns = s.labels.find("namespace");
        auto pod = s.labels.find("pod");
        if (ns == s.labels.end() || pod == s.labels.end() || pod->second.empty()) continue;
        key = ns->second + "/" + pod->second;
      } else {
        key = KeyOf(s.labels);
      }
      if (key.empty()) continue;
      Series& out = (q.per_pod ? snap->by_workload : snap->by_uuid)[key].*q.field;
      for (const Sample& x : s.samples) {
        if (std::isfinite(x.value)) out.push_back(x);
      }
    }
  }
  RefreshQps(*snap);
  snap->fetched_at = clock_.Now();
  std::lock_guard lock(mu_);
  snap->sequence = snapshot_ ? snapshot_->sequence + 1 : 1;
  snapshot_ = std::move(snap);
  ++refreshes_;
  return {};
}

void PrometheusTelemetry::StartPolling(double interval_s) {
  StopPolling();
  {
    std::lock_guard lock(poll_mu_);
    stop_ = false;
  }
  poller_ = std::thread([this, interval_s] {
    std::string last_logged;
    std::unique_lock lock(poll_mu_);
    while (!stop_) {
      lock.unlock();
      auto ok = Refresh();
      // One line per distinct failure, and one when it recovers: no log flood while down.
      if (!ok && ok.error().message != last_logged) {
        spdlog::warn("telemetry: {} (serving the last values until they are {}s old)",
                     ok.error().message, options_.staleness_bound_s);
        last_logged = ok.error().message;
      } else if (ok && !last_logged.empty()) {
        spdlog::info("telemetry: prometheus {} reachable again", client_.url());
        last_logged.clear();
      }
      lock.lock();
      poll_cv_.wait_for(lock, std::chrono::duration<double>(interval_s), [this] { return stop_; });
    }
  });
}

void PrometheusTelemetry::StopPolling() {
  {
    std::lock_guard lock(poll_mu_);
    stop_ = true;
  }
  poll_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
}

std::shared_ptr<const PrometheusTelemetry::Snapshot> PrometheusTelemetry::Fresh() const {
  std::shared_ptr<const Snapshot> s;
  {
    std::lock_guard lock(mu_);
    s = snapshot_;
  }
  if (!s || clock_.Now() - s->fetched_at > options_.staleness_bound_s) return nullptr;
  return s;
}

std::optional<uint64_t> PrometheusTelemetry::Version() const {
  auto s = Fresh();
  if (!s) return std::nullopt;
  return s->sequence;
}

std::optional<double> PrometheusTelemetry::Instant(std::string_view uuid,
                                                   std::optional<double> Values::*field) const {
  auto s = Fresh();
  if (!s) return std::nullopt;
  auto it = s->by_uuid.find(uuid);
  return it == s->by_uuid.end() ? std::nullopt : it->second.*field;
}

std::optional<Series> PrometheusTelemetry::Range(std::string_view key, double window_s,
                                                 Series Values::*field) const {
  auto s = Fresh();
  if (!s) return std::nullopt;
  auto it = s->by_uuid.find(key);
  if (it == s->by_uuid.end()) {
    it = s->by_workload.find(key);
    if (it == s->by_workload.end()) return std::nullopt;
  }
  const Series& series = it->second.*field;
  if (series.empty()) return std::nullopt;
  return Tail(series, window_s);
}

std::optional<double> PrometheusTelemetry::Utilization(std::string_view uuid) const {
  return Instant(uuid, &Values::util);
}
std::optional<double> PrometheusTelemetry::MemoryUsedMib(std::string_view uuid) const {
  return Instant(uuid, &Values::memory);
}
std::optional<double> PrometheusTelemetry::PowerWatts(std::string_view uuid) const {
  return Instant(uuid, &Values::power);
}
std::optional<double> PrometheusTelemetry::SmActivity(std::string_view key) const {
  if (auto a = Instant(key, &Values::sm_activity)) return a;
  // A pod's own activity (muxflow reads a service's by its workload name): the last point of
  // its tessera_pod_sm_active series.
  auto s = Fresh();
  if (!s) return std::nullopt;
  auto it = s->by_workload.find(key);
  if (it == s->by_workload.end() || it->second.sm_series.empty()) return std::nullopt;
  return it->second.sm_series.back().value;
}
std::optional<double> PrometheusTelemetry::SmClockMhz(std::string_view uuid) const {
  return Instant(uuid, &Values::sm_clock);
}
std::optional<Series> PrometheusTelemetry::MemoryUsed(std::string_view key, double window_s) const {
  return Range(key, window_s, &Values::memory_series);
}
std::optional<Series> PrometheusTelemetry::SmActivitySeries(std::string_view key,
                                                            double window_s) const {
  return Range(key, window_s, &Values::sm_series);
}
std::optional<Series> PrometheusTelemetry::BandwidthSeries(std::string_view key,
                                                           double window_s) const {
  return Range(key, window_s, &Values::bandwidth_series);
}

std::optional<double> PrometheusTelemetry::WorkloadQps(std::string_view workload) const {
  auto s = Fresh();
  if (!s) return std::nullopt;
  auto it = s->by_workload.find(workload);
  return it == s->by_workload.end() ? std::nullopt : it->second.qps;
}

std::string PrometheusTelemetry::WhyNoQps(std::string_view workload) const {
  std::shared_ptr<const Snapshot> s;
  {
    std::lock_guard lock(mu_);
    s = snapshot_;
  }
  if (!s) return "no telemetry yet";
  const double age = clock_.Now() - s->fetched_at;
  if (age > options_.staleness_bound_s) return fmt::format("stale ({:.0f} s old)", age);
  auto it = s->by_workload.find(workload);
  if (it == s->by_workload.end()) return "not queried yet";
  return it->second.qps ? "" : it->second.qps_note;
}

TelemetryHealth PrometheusTelemetry::Health() const {
  std::lock_guard lock(mu_);
  TelemetryHealth h;
  h.refreshes = refreshes_;
  h.failures = failures_;
  h.last_error = last_error_;
  if (snapshot_) {
    h.age_s = clock_.Now() - snapshot_->fetched_at;
    h.stale = h.age_s > options_.staleness_bound_s;
    h.partitions = snapshot_->by_uuid.size();
  }
  return h;
}

std::string PrometheusTelemetry::MetricsText() const {
  const TelemetryHealth h = Health();
  return fmt::format(
      "# HELP tessera_telemetry_refreshes_total Successful telemetry refreshes from Prometheus.\n"
      "# TYPE tessera_telemetry_refreshes_total counter\n"
      "tessera_telemetry_refreshes_total {}\n"
      "# HELP tessera_telemetry_refresh_failures_total Failed telemetry refreshes.\n"
      "# TYPE tessera_telemetry_refresh_failures_total counter\n"
      "tessera_telemetry_refresh_failures_total {}\n"
      "# HELP tessera_telemetry_age_seconds Age of the telemetry the scheduler uses "
      "(-1: none yet).\n"
      "# TYPE tessera_telemetry_age_seconds gauge\n"
      "tessera_telemetry_age_seconds {:.3f}\n"
      "# HELP tessera_telemetry_stale 1 when the telemetry is older than the staleness bound "
      "and policies see unknown.\n"
      "# TYPE tessera_telemetry_stale gauge\n"
      "tessera_telemetry_stale {}\n",
      h.refreshes, h.failures, h.age_s, h.stale ? 1 : 0);
}

}  // namespace tessera::telemetry
