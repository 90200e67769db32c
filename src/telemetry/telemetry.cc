#include "telemetry/telemetry.h"

#include <algorithm>

namespace tessera::telemetry {
namespace {

std::optional<Series> TailOf(const UuidMap<Series>& m, std::string_view key, double window_s) {
  auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  return Tail(it->second, window_s);
}

template <typename V>
std::optional<V> Get(const UuidMap<V>& m, std::string_view uuid) {
  auto it = m.find(uuid);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace

Series Tail(const Series& series, double window_s) {
  if (series.empty()) return {};
  const double from = series.back().t - window_s;
  auto first = std::lower_bound(series.begin(), series.end(), from,
                                [](const Sample& s, double t) { return s.t < t; });
  return Series(first, series.end());
}

void StaticTelemetry::AddMemorySample(std::string_view uuid, double t, double mib) {
  Append(series_, uuid, {t, mib});
  Put(mem_, uuid, mib);
  ++version_;
}

void StaticTelemetry::AddSmActivitySample(std::string_view key, double t, double activity) {
  Append(sm_series_, key, {t, activity});
  Put(sm_activity_, key, activity);
  ++version_;
}

void StaticTelemetry::AddBandwidthSample(std::string_view key, double t, double fraction) {
  Append(bandwidth_series_, key, {t, fraction});
  ++version_;
}

void StaticTelemetry::Forget(std::string_view name) {
  const std::string key(name);
  // An empty map (most runs keep only a few of them) is not hashed into.
  const auto erase = [&key](auto& map) { return !map.empty() && map.erase(key) > 0; };
  const bool had_qps = erase(qps_);
  const bool had_util = erase(util_);
  erase(mem_);
  erase(power_);
  erase(sm_activity_);
  erase(sm_clock_);
  erase(series_);
  erase(sm_series_);
  erase(bandwidth_series_);
  if (had_util) {
    LogUtilization(name);
  } else {
    ++version_;
  }
  if (had_qps) qps_log_.Add(version_, name);
}

void StaticTelemetry::LogUtilization(std::string_view uuid) {
  util_version_ = ++version_;
  util_log_.Add(version_, uuid);
}

void ChangeLog::Add(uint64_t version, std::string_view key) {
  if (log_.size() == capacity_) {
    floor_ = log_.front().first;
    log_.pop_front();
  }
  log_.emplace_back(version, key);
}

bool ChangeLog::Since(uint64_t since, std::vector<std::string_view>* changed) const {
  if (since < floor_) return false;
  for (auto it = log_.rbegin(); it != log_.rend() && it->first > since; ++it) {
    changed->push_back(it->second);
  }
  return true;
}

std::optional<double> StaticTelemetry::Utilization(std::string_view uuid) const {
  return Get(util_, uuid);
}
std::optional<double> StaticTelemetry::MemoryUsedMib(std::string_view uuid) const {
  return Get(mem_, uuid);
}
std::optional<double> StaticTelemetry::PowerWatts(std::string_view uuid) const {
  return Get(power_, uuid);
}
std::optional<double> StaticTelemetry::WorkloadQps(std::string_view workload) const {
  return Get(qps_, workload);
}
std::optional<double> StaticTelemetry::SmActivity(std::string_view uuid) const {
  return Get(sm_activity_, uuid);
}
std::optional<double> StaticTelemetry::SmClockMhz(std::string_view uuid) const {
  return Get(sm_clock_, uuid);
}
std::optional<Series> StaticTelemetry::MemoryUsed(std::string_view uuid, double window_s) const {
  return TailOf(series_, uuid, window_s);
}
std::optional<Series> StaticTelemetry::SmActivitySeries(std::string_view key,
                                                        double window_s) const {
  return TailOf(sm_series_, key, window_s);
}
std::optional<Series> StaticTelemetry::BandwidthSeries(std::string_view key,
                                                       double window_s) const {
  return TailOf(bandwidth_series_, key, window_s);
}

}  // namespace tessera::telemetry
