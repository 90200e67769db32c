#pragma once
// Telemetry: what policies may know about a partition's live behaviour — its graphics-engine
// activity (the thesis's util(p), DCGM_FI_PROF_GR_ENGINE_ACTIVE, Ch. 5.3 and 7), its memory
// in use and the recent memory series the forecasting policies extrapolate, and its power.
// Partitions are named by uuid: the GPU's "GPU-…" for a whole GPU, the "MIG-…" of an instance.
//
// "Unknown" is nullopt, never zero: a partition without fresh data must not look idle.
// Implementations: StaticTelemetry (set by hand: tests, the simulator's physics) and
// PrometheusTelemetry (a Prometheus server fed by DCGM or the Tessera agent). Lookups are the
// hot path — policies call them per partition while scoring thousands of GPUs — so they read
// memory only, never the network.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera::telemetry {

struct Sample {
  double t = 0;  // seconds (Unix time for Prometheus data)
  double value = 0;
  bool operator==(const Sample&) const = default;
};
using Series = std::vector<Sample>;  // ascending t

class Telemetry {
 public:
  virtual ~Telemetry() = default;
  // Fraction of time the graphics engine was active, 0..1.
  virtual std::optional<double> Utilization(std::string_view uuid) const = 0;
  // Framebuffer memory in use, MiB (DCGM_FI_DEV_FB_USED).
  virtual std::optional<double> MemoryUsedMib(std::string_view) const { return std::nullopt; }
  // The memory-in-use samples of the last `window_s` seconds (those the source holds). By a
  // partition's uuid, or by a workload's name for its own use (per-pod attribution, as the
  // agent exports it): what the usage-aware policies read (seeds 003/004).
  virtual std::optional<Series> MemoryUsed(std::string_view, double /*window_s*/) const {
    return std::nullopt;
  }
  // The SM-activity samples (0..1, DCGM_FI_PROF_SM_ACTIVE) and the memory-bandwidth samples
  // (0..1 of peak, DCGM_FI_PROF_DRAM_ACTIVE) of the last `window_s` seconds, by uuid or by a
  // workload's name as MemoryUsed: Kube-Knots' CBP correlates them (seed 004).
  virtual std::optional<Series> SmActivitySeries(std::string_view, double /*window_s*/) const {
    return std::nullopt;
  }
  virtual std::optional<Series> BandwidthSeries(std::string_view, double /*window_s*/) const {
    return std::nullopt;
  }
  // Board power draw, W (DCGM_FI_DEV_POWER_USAGE): a property of the GPU, so a MIG instance has
  // none of its own (ask for its GPU's uuid).
  virtual std::optional<double> PowerWatts(std::string_view) const { return std::nullopt; }
  // Queries per second a running workload serves now, by its name (Workload::name; in
  // Kubernetes "<namespace>/<pod>"): what the inference server's own request counter gives
  // through Prometheus (PrometheusTelemetry, for the pods named by SetWorkloadQueries). Zero is
  // a measured zero; nullopt is "not known", and WhyNoQps says why (no series, NaN, stale).
  virtual std::optional<double> WorkloadQps(std::string_view) const { return std::nullopt; }
  virtual std::string WhyNoQps(std::string_view) const { return "not measured"; }
  // Fraction of SM cycles with at least one warp resident, 0..1 (DCGM_FI_PROF_SM_ACTIVE), and
  // the SM clock in MHz (DCGM_FI_DEV_SM_CLOCK), by the GPU's uuid: what MuxFlow's SysMonitor
  // and dynamic SM read (seed 001 §4.1, §4.3).
  virtual std::optional<double> SmActivity(std::string_view) const { return std::nullopt; }
  virtual std::optional<double> SmClockMhz(std::string_view) const { return std::nullopt; }
  // Names the data lookups answer from now: while it stays the same value, every lookup returns
  // what it returned before, so a caller may cache per uuid (the policies' hot path does).
  // nullopt: no such promise (the default; also while the data is stale).
  virtual std::optional<uint64_t> Version() const { return std::nullopt; }
  // The same promise for Utilization alone: while it stays the same value, every Utilization
  // lookup returns what it returned before, whatever else changed. Default: Version().
  virtual std::optional<uint64_t> UtilizationVersion() const { return Version(); }
  // The uuids whose Utilization may have changed since UtilizationVersion was `since`,
  // appended to `changed` (views valid until the next change); false when that is not known,
  // and then any lookup may differ. Lets a cache keyed by uuid drop only what moved. Default:
  // false.
  virtual bool UtilizationChangedSince(uint64_t /*since*/,
                                       std::vector<std::string_view>* /*changed*/) const {
    return false;
  }
  // The same for WorkloadQps, by workload name, since Version was `since`.
  virtual bool WorkloadQpsChangedSince(uint64_t /*since*/,
                                       std::vector<std::string_view>* /*changed*/) const {
    return false;
  }
};

// The keys changed at each version, newest last, at most `capacity` of them: what a
// telemetry's *ChangedSince answers from.
class ChangeLog {
 public:
  explicit ChangeLog(size_t capacity) : capacity_(capacity) {}
  void Add(uint64_t version, std::string_view key);
  // Appends the keys changed at versions > since; false if some may have been dropped.
  bool Since(uint64_t since, std::vector<std::string_view>* changed) const;

 private:
  size_t capacity_;
  std::deque<std::pair<uint64_t, std::string>> log_;
  uint64_t floor_ = 0;  // changes at versions ≤ floor_ have been dropped
};

// Heterogeneous lookup so the hot path hashes a string_view without building a string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using UuidMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// Values set by their owner. Not thread-safe: set between scheduling cycles.
class StaticTelemetry final : public Telemetry {
 public:
  void SetUtilization(std::string_view uuid, double u) {
    if (Put(util_, uuid, u)) LogUtilization(uuid);  // unchanged: the version holds
  }
  void SetMemoryUsedMib(std::string_view uuid, double mib) {
    mem_[std::string(uuid)] = mib;
    ++version_;
  }
  void SetPowerWatts(std::string_view uuid, double w) {
    power_[std::string(uuid)] = w;
    ++version_;
  }
  void SetSmActivity(std::string_view uuid, double a) { Set(sm_activity_, uuid, a); }
  void SetSmClockMhz(std::string_view uuid, double mhz) { Set(sm_clock_, uuid, mhz); }
  void SetWorkloadQps(std::string_view workload, double qps) {
    if (Put(qps_, workload, qps)) qps_log_.Add(++version_, workload);
  }
  // Appends to the memory series (t ascending) and sets the current memory in use.
  void AddMemorySample(std::string_view uuid, double t, double mib);
  // Appends to the SM-activity series and sets the current SM activity; appends to the
  // bandwidth series. `key` is a uuid or a workload's name.
  void AddSmActivitySample(std::string_view key, double t, double activity);
  void AddBandwidthSample(std::string_view key, double t, double fraction);
  // Drops everything known under `key` (a partition's uuid or a workload's name).
  void Forget(std::string_view key);

  std::optional<double> Utilization(std::string_view uuid) const override;
  std::optional<double> MemoryUsedMib(std::string_view uuid) const override;
  // Relative to the series' newest sample: those with t ≥ newest − window_s.
  std::optional<Series> MemoryUsed(std::string_view uuid, double window_s) const override;
  std::optional<Series> SmActivitySeries(std::string_view key, double window_s) const override;
  std::optional<Series> BandwidthSeries(std::string_view key, double window_s) const override;
  std::optional<double> PowerWatts(std::string_view uuid) const override;
  std::optional<double> WorkloadQps(std::string_view workload) const override;
  std::optional<double> SmActivity(std::string_view uuid) const override;
  std::optional<double> SmClockMhz(std::string_view uuid) const override;
  std::optional<uint64_t> Version() const override { return version_; }
  // Moves only with a utilisation (SetUtilization, Forget of a uuid that had one).
  std::optional<uint64_t> UtilizationVersion() const override { return util_version_; }
  // From a log of the last kChangeLog changes of each.
  bool UtilizationChangedSince(uint64_t since,
                               std::vector<std::string_view>* changed) const override {
    return util_log_.Since(since, changed);
  }
  bool WorkloadQpsChangedSince(uint64_t since,
                               std::vector<std::string_view>* changed) const override {
    return qps_log_.Since(since, changed);
  }
  static constexpr size_t kChangeLog = size_t{1} << 14;

 private:
  // A utilisation changed: moves both versions and logs the uuid under the new one.
  void LogUtilization(std::string_view uuid);
  // Sets map[key] = v with one lookup (a string is built only for a new key); false when it
  // held v already.
  static bool Put(UuidMap<double>& map, std::string_view key, double v) {
    auto it = map.find(key);
    if (it == map.end()) {
      map.emplace(std::string(key), v);
      return true;
    }
    if (it->second == v) return false;
    it->second = v;
    return true;
  }
  // Appends s to map[key] with one lookup (a string is built only for a new key): the
  // simulator adds three samples a pod every second.
  static void Append(UuidMap<Series>& map, std::string_view key, Sample s) {
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(std::string(key), Series{}).first;
    it->second.push_back(s);
  }
  // Sets map[key] = v, bumping the version only when the value changes.
  void Set(UuidMap<double>& map, std::string_view key, double v) {
    if (Put(map, key, v)) ++version_;
  }
  uint64_t version_ = 0;       // bumped by every change
  uint64_t util_version_ = 0;  // version_ at the last change to util_
  ChangeLog util_log_{kChangeLog}, qps_log_{kChangeLog};
  UuidMap<double> util_, mem_, power_, qps_, sm_activity_, sm_clock_;
  UuidMap<Series> series_, sm_series_, bandwidth_series_;
};

// The samples of `series` with t ≥ its newest t − window_s.
Series Tail(const Series& series, double window_s);

}  // namespace tessera::telemetry
