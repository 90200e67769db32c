#pragma once
// What the GPU-sharing-by-memory policies (gpushare, resource-aware, knots-resag, knots-cbp,
// knots-pp; seeds 003 §5 and 004 §"Resource agnostic sharing", CBP, PP) read from the cluster
// and the telemetry, in one place.
//
// Requests. A *memory share* is one GPU, no MIG profile, with a GPU memory request or a share
// below a whole GPU (Alibaba's aliyun.com/gpu-mem). Compute is not a scheduling dimension for
// these policies (003 and 004 share by memory alone): the slice's MPS share is the request's
// milli as a cap that reserves nothing (Slice::best_effort). Memory shares go to MIG-disabled
// GPUs that no workload holds exclusively; every other request keeps the fit rules of fit.h.
//
// Memory accounting. Policies that pack by request (gpushare, knots-resag) reserve the request
// in the cluster state (it is also the MPS pinned-memory limit); policies that pack by use
// (resource-aware, knots-cbp, knots-pp) admit pods whose requests together exceed the GPU, so
// they reserve nothing (no pinned limit: 003 and 004 run pods without memory isolation) and keep
// their own account: the requests on a GPU from the cluster state, the use from telemetry.
//
// Telemetry lags placements: a pod bound after a GPU's newest sample is not in its series yet,
// and a percentile over a window reflects it only once enough of the window follows its bind.
// FreshPods remembers, per pod, the newest sample its GPU had when the pod was first seen, so a
// check can add the pods its data cannot show yet. AppHistory keeps, per application, the
// memory, SM and bandwidth series of one of its pods (Kube-Knots sizes and correlates a pending
// pod by its application's earlier use). Not thread-safe; the telemetry must outlive them.

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/policy.h"
#include "predict/forecast.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

// One GPU, no MIG profile, and GPU memory asked for or a share below a whole GPU.
bool SharesByMemory(const Workload& w);
// Whether memory share w may go to GPU g: available, MIG off, its model allowed, and every
// client on it a memory share too (best effort), so none holds it exclusively.
bool MemoryShareable(const Workload& w, GpuIndex g, const ClusterState& c);
// Σ requested GPU memory (Workload::gpu.memory_mib) of the workloads on GPU g.
int64_t RequestedMib(GpuIndex g, const ClusterState& c);
// The GPU's memory (its one partition's, MIG being off).
int64_t CapacityMib(GpuIndex g, const ClusterState& c);
// Memory share w on GPU g, reserving `reserve_mib` (0: no pinned-memory limit).
Placement MemorySharePlacement(const Workload& w, GpuIndex g, int64_t reserve_mib,
                               const ClusterState& c);
// Node-level feasibility of a memory share: ready, CPU, memory, some shareable GPU. Other
// requests: NodeFits.
Feasibility MemoryShareNodeFits(const Workload& w, NodeIndex n, const ClusterState& c);
// The check that let a memory share onto a GPU (resource-aware's three; Kube-Knots' CBP and PP).
enum class UsageCheck { kNone, kAgnostic, kCbp, kPeakPrediction };
std::string_view ToString(UsageCheck check);

// Policy::Score for these policies: a request that is not a memory share is placed first-fit
// (score 100); a memory share goes to the shareable GPU of `node` with the highest score(g)
// (nullopt: g does not take it; the lowest index among equals), reserving `reserve_mib`.
std::optional<Candidate> MemoryShareOffer(
    const Workload& w, NodeIndex node, const ClusterState& c, int64_t reserve_mib,
    const std::function<std::optional<double>(GpuIndex)>& score);

// Policy::Explain for a memory share: per node its filter reason, or one line per shareable GPU
// of it, "<node> <gpu uuid> " + line(g); other requests get the default Explain.
std::string ExplainMemoryShare(Policy& p, const Workload& w, const ClusterState& c,
                               const std::function<std::string(GpuIndex)>& line);
// Largest GPU memory request first (003's priority queue, 004's first-fit decreasing); FIFO
// (arrival, id) among equals.
void OrderByRequestedMemory(std::vector<const Workload*>& pending);
// A score in 0..100 that grows with `mib` (an amount of GPU memory) the same way on every GPU
// model: mib over the largest GPU memory in the catalog.
double MemoryScore(double mib);

// A judgement's steps, with their numbers, as text for `tessera explain`; nothing when not
// explaining: Score reads no text, and formatting it for every GPU it scores made Score about
// three times slower. The verdicts of knots-cbp, knots-pp and resource-aware extend it.
struct Explanation {
  std::string detail;
  bool explain = true;

  template <typename... Args>
  void Note(fmt::format_string<Args...> format, Args&&... args) {
    if (explain) fmt::format_to(std::back_inserter(detail), format, std::forward<Args>(args)...);
  }
};

// Statistics of a window, on the seed's formulas (predict/forecast.h), with a flat window
// (every value equal, zero included) read as no variation rather than refused.
std::vector<double> Values(const telemetry::Series& s);
// σ/μ; 0 for a flat window; nullopt for an empty one.
std::optional<double> VariationOf(std::span<const double> v);
// Pearson correlation of the last n values of each, n the shorter length; 0 when either is
// flat (it moves with nothing); nullopt when n < min_samples.
std::optional<double> TailCorrelation(std::span<const double> a, std::span<const double> b,
                                      int min_samples);
// r_k (004 eq. 1); nullopt when the window is flat or has at most k values.
std::optional<double> AutocorrelationOf(std::span<const double> v, int lag);
// A series' recurring peak (004 ≈143: "the interval between two consecutive peak resource
// consumption … could be determined by the auto-correlation factor"): `interval`, in samples,
// is the lag k of the largest r_k (eq. 1) past r's first fall to ≤ 0, and `r` that r_k, > 0;
// `excess` is how far the peak rose above the median of the last `interval` samples (their max
// − their median). nullopt: flat, fewer than 4 samples, or no positive r_k after the fall (no
// peak recurs within half the window).
struct RecurringPeak {
  int interval = 0;
  double r = 0;
  double excess = 0;
};
std::optional<RecurringPeak> RecurringPeakOf(std::span<const double> v);
// AR(1) fitted on the window (004 eq. 2) and iterated `steps` times from its last value.
struct Ar1Forecast {
  predict::Ar1 fit;
  double value = 0;
};
std::optional<Ar1Forecast> ForecastAhead(std::span<const double> v, int steps);

// Whether pod w's own memory series (by its name) ends at 0 MiB: it holds nothing now — its
// container is starting, or restarting after a crash (the kubelet's CrashLoopBackOff). Its
// GPU's series cannot show what it will take back when it runs again, so the usage checks
// count it as they count a pod not yet seen: at its request (or size). Without that, a crashed
// pod's back-off reads as free memory, another pod is admitted into it, and the relaunch runs
// the GPU out of memory again — a crash loop. false without a series.
bool HoldsNothingNow(const Workload& w, const telemetry::Telemetry* t);

// Per pod: the newest memory sample of its GPU when the pod was first seen there.
class FreshPods {
 public:
  // Notes the pods on the nodes that changed since the last call. At the first call every pod
  // already placed counts as seen (it was there before this policy looked); afterwards a pod is
  // stamped with its GPU's newest memory sample time then (−∞ when the GPU has none yet).
  void Observe(const ClusterState& c, const telemetry::Telemetry* t);
  // Whether the pod on g is not yet reflected by data ending at `newest_t` that needs
  // `settle_s` seconds of samples after the bind: newest_t ≤ stamp + settle_s.
  bool Unseen(GpuIndex g, WorkloadId id, double newest_t, double settle_s) const;

 private:
  std::vector<std::vector<std::pair<WorkloadId, double>>> by_gpu_;
  std::vector<uint64_t> node_version_;
  bool first_ = true;
};

// Memory (MiB), SM activity and bandwidth (0..1) series of one pod, oldest first.
struct UsageHistory {
  telemetry::Series memory, sm, bandwidth;
};

class AppHistory {
 public:
  // Reads every running memory share's own series (by its name) over the last `history_s`,
  // when the telemetry changed, and keeps per application the one with most samples (the
  // newest, then the highest workload id, on ties): usually a whole run of an earlier pod.
  void Observe(const ClusterState& c, const telemetry::Telemetry* t, double history_s);
  const UsageHistory* Find(std::string_view app) const;
  // The p-th percentile (predict::Percentile) of the application's kept memory series; nullopt
  // without one. Kept until Observe replaces the series: Kube-Knots sizes every pod on every
  // GPU it judges by it, and sorting the series each time was most of a knots run's time.
  std::optional<double> MemoryPercentile(std::string_view app, double p) const;

 private:
  struct Kept {
    WorkloadId from = 0;
    UsageHistory usage;
    mutable std::optional<std::pair<double, double>> percentile;  // (p, value)
  };
  telemetry::UuidMap<Kept> by_app_;
  std::optional<uint64_t> seen_version_;
  bool seen_once_ = false;
};

// The GPU's memory samples of the last `window_s` (empty: none).
telemetry::Series GpuMemorySeries(const telemetry::Telemetry* t, const model::Gpu& gpu,
                                  double window_s);

}  // namespace tessera::policy
