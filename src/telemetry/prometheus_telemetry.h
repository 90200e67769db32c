#pragma once
// PrometheusTelemetry: Telemetry read from a Prometheus server that scrapes DCGM-named metrics
// (dcgm-exporter or the Tessera agent; thesis Ch. 5.3.2: util(p) is the partition's
// DCGM_FI_PROF_GR_ENGINE_ACTIVE as Prometheus returns it).
//
// Lookups never touch the network: they read a snapshot that Refresh() — called by its owner,
// or every interval by the poller StartPolling() starts — replaces wholesale with the results
// of one round of PromQL queries:
//  - instant, per partition: GR_ENGINE_ACTIVE (util), FB_USED (MiB), POWER_USAGE (W),
//    SM_ACTIVE (0..1) and SM_CLOCK (MHz) — what MuxFlow's SysMonitor and dynamic SM read;
//  - range (the last memory_window_s at memory_step_s), per partition: FB_USED, SM_ACTIVE and
//    DRAM_ACTIVE — the series the usage-aware policies of seeds 003/004 read;
//  - range, per pod: the agent's tessera_pod_fb_used_mib (summed over the partitions a pod
//    uses), tessera_pod_sm_active and tessera_pod_dram_active (their maximum), keyed by the
//    workload name "<namespace>/<pod>" — a pod's own use on a GPU it shares.
//  - instant, per pod named by SetWorkloadQueries: the QPS it serves, from a PromQL template in
//    which $namespace and $pod are replaced by the pod's (the pod's own template, else
//    options.qps_query; the default reads NVIDIA Triton's nv_inference_request_success counter
//    as a rate). An empty answer is "no series", a NaN or infinite one "NaN", a failed query
//    "query failed: …" (WhyNoQps) — never zero; a failed QPS query does not fail the refresh.
// A metric nobody exports (DCGM's profiling metrics are off, no Tessera agent) is simply
// unknown; only a failed query fails the refresh. A failed refresh keeps the last good
// snapshot: lookups keep answering from it while it is younger than options.staleness_bound_s,
// and answer "unknown" (nullopt, never zero) after that. Health() and MetricsText() say how old
// the data is and how often refreshing failed, so a scheduler can export that beside its own
// metrics.
//
// Series are matched to partitions by the `partition_uuid` label (the Tessera agent's), else
// by (UUID, GPU_I_ID) through SetMigInstances (plain dcgm-exporter), else by UUID (whole GPU).
// Thread-safe: lookups from any thread while the poller refreshes. Does not own the clock.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "telemetry/prometheus_client.h"
#include "telemetry/telemetry.h"

namespace tessera::telemetry {

// Successful inferences per second over the last minute, summed over the pod's models and
// versions: NVIDIA Triton's counter as Prometheus scrapes it with Kubernetes service discovery
// (namespace and pod labels). docs/kubernetes.md lists the metric for other servers.
inline constexpr std::string_view kTritonQpsQuery =
    R"(sum(rate(nv_inference_request_success{namespace="$namespace",pod="$pod"}[1m])))";

// The PromQL of `query_template` for one pod: $namespace and $pod replaced by the label values,
// escaped for a PromQL string.
std::string WorkloadQpsQuery(std::string_view query_template, std::string_view namespace_,
                             std::string_view pod);

struct PrometheusTelemetryOptions {
  PrometheusOptions server;
  double staleness_bound_s = 30;  // older data is "unknown"
  double memory_window_s = 300;   // how much memory history a refresh fetches
  double memory_step_s = 5;       // its resolution
  std::string selector;           // extra label matchers, e.g. Hostname=~"gpu-.*"
  std::string qps_query = std::string(kTritonQpsQuery);  // $namespace, $pod substituted
};

struct TelemetryHealth {
  int64_t refreshes = 0;  // successful
  int64_t failures = 0;
  double age_s = -1;  // since the last successful refresh; -1 before the first
  bool stale = true;  // no data younger than the staleness bound
  std::string last_error;
  size_t partitions = 0;  // in the snapshot
};

class PrometheusTelemetry final : public Telemetry {
 public:
  [[nodiscard]] static Expected<std::unique_ptr<PrometheusTelemetry>> Create(
      PrometheusTelemetryOptions options, const Clock& clock);
  ~PrometheusTelemetry() override;  // stops the poller

  // Whether Prometheus has at least one series of each metric: an Error naming the first it
  // lacks ("prometheus URL has no series DCGM_FI_DEV_SM_CLOCK") or the query that failed.
  [[nodiscard]] Expected<void> RequireSeries(const std::vector<std::string>& metrics) const;
  // One round of queries; on failure the previous snapshot stays and the Error says why.
  [[nodiscard]] Expected<void> Refresh();
  void StartPolling(double interval_s);
  void StopPolling();

  // (GPU uuid, GPU instance id) → MIG uuid, for exporters that do not label partition_uuid.
  void SetMigInstances(std::map<std::pair<std::string, int>, std::string> instances);
  // The pods whose QPS the next refreshes read, "<namespace>/<pod>" → their own PromQL
  // template ("" for options.qps_query). Replaces the previous set.
  void SetWorkloadQueries(std::map<std::string, std::string> queries);

  std::optional<double> Utilization(std::string_view uuid) const override;
  std::optional<double> MemoryUsedMib(std::string_view uuid) const override;
  // By a partition's uuid or a pod's "<namespace>/<pod>".
  std::optional<Series> MemoryUsed(std::string_view key, double window_s) const override;
  std::optional<Series> SmActivitySeries(std::string_view key, double window_s) const override;
  std::optional<Series> BandwidthSeries(std::string_view key, double window_s) const override;
  std::optional<double> PowerWatts(std::string_view uuid) const override;
  // By a partition's uuid; else by a workload's name, its pod series' last point.
  std::optional<double> SmActivity(std::string_view key) const override;
  std::optional<double> SmClockMhz(std::string_view uuid) const override;
  std::optional<double> WorkloadQps(std::string_view workload) const override;
  std::string WhyNoQps(std::string_view workload) const override;
  // The snapshot's sequence number while it is fresh; nullopt once stale or before the first.
  std::optional<uint64_t> Version() const override;

  TelemetryHealth Health() const;
  // tessera_telemetry_{refreshes_total,refresh_failures_total,age_seconds,stale} in the
  // Prometheus text format.
  std::string MetricsText() const;

 private:
  struct Values {
    std::optional<double> util, memory, power, sm_activity, sm_clock;
    Series memory_series, sm_series, bandwidth_series;
    std::optional<double> qps;  // by workload only
    std::string qps_note;       // why qps is unknown
  };
  struct Snapshot {
    uint64_t sequence = 0;  // 1, 2, ... in the order snapshots were taken
    double fetched_at = 0;  // clock time
    UuidMap<Values> by_uuid;
    UuidMap<Values> by_workload;  // "<namespace>/<pod>": the series only
  };

  PrometheusTelemetry(PrometheusTelemetryOptions options, PrometheusClient client,
                      const Clock& clock)
      : options_(std::move(options)), client_(std::move(client)), clock_(clock) {}
  std::shared_ptr<const Snapshot> Fresh() const;  // nullptr when stale or never fetched
  // The fresh value of `field` for a partition; nullopt when stale or unknown.
  std::optional<double> Instant(std::string_view uuid, std::optional<double> Values::*field) const;
  // The fresh series `field` of a partition or else a pod, its last window_s.
  std::optional<Series> Range(std::string_view key, double window_s, Series Values::*field) const;
  std::string KeyOf(const Labels& labels) const;  // "" when it names no partition
  std::string Selector(std::string_view metric) const;
  void RefreshQps(Snapshot& snap) const;  // the SetWorkloadQueries pods' QPS into snap

  PrometheusTelemetryOptions options_;
  PrometheusClient client_;
  const Clock& clock_;

  mutable std::mutex mu_;  // guards snapshot_, mig_, health fields
  std::shared_ptr<const Snapshot> snapshot_;
  std::map<std::pair<std::string, int>, std::string> mig_;
  std::map<std::string, std::string> qps_queries_;
  int64_t refreshes_ = 0;
  int64_t failures_ = 0;
  std::string last_error_;

  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stop_ = false;
  std::thread poller_;
};

}  // namespace tessera::telemetry
