#pragma once
// knots-pp — Kube-Knots' peak prediction scheduler (seed 004, §"Peak Prediction Scheduler",
// Algorithm 1), built on knots-cbp: what CBP refuses on a GPU — a pod whose use correlates with
// the GPU's, or that its size does not fit — may still go there when the GPU's memory peak is
// not impending.
//
// On a GPU CBP refused, the autocorrelation r_k (004 eq. 1) at lag `lag` of the GPU's memory
// series over the CBP window (004: the past 5 s) is computed. If it is positive, an AR(1) fitted
// by least squares (004 eq. 2) forecasts the GPU's memory use `horizon_s` ahead (004: 1 s; the
// fit is iterated once per sampling interval in it), and the pod goes there if its *request*
// fits in the memory minus the forecast, minus the sizes of pods bound after the newest sample.
// If r_k is zero or negative — 004: "the input time-series data is limited or the trend is not
// strong enough" — or the window is flat or too short, PP makes no forecast and does not
// overrule CBP there: the pod tries the next GPU in free-memory order, and waits if none takes
// it. GPUs keep CBP's free-memory order whichever check admits.
//
// Steering (`steer`, default on): 004 also says PP "identifies the set of pods that attains peak
// consumption of a resource at the same time and schedules them to different GPU nodes", and
// that the forecast lets the scheduler "guarantee the QoS of the application which would be
// scheduled to that particular GPU node". So on a GPU CBP admits, the same forecast runs too,
// and a pod whose request does not fit the memory forecast free goes to the next GPU. With
// `steer` false PP acts only in Algorithm 1's else-branch, as before.
//
// The next peak (`peak_window_s` > 0, the default): 004 also says the autocorrelation gives "the
// interval between two consecutive peak resource consumption" (≈143), which a 5-s window cannot
// show when a node's peaks recur every 40–60 s. So PP also reads the GPU's memory over the last
// `peak_window_s` (ours: 120 s, two of the longest intervals; 004's window "could be adjusted
// for prediction accuracy", ≈198) and, where a peak recurs there (RecurringPeakOf: r_k > 0 at
// the interval), forecasts the GPU's memory at its next peak: the newest reading plus the
// excess its last peak rose over its median. Both checks, the AR(1)'s next second and the next
// peak, must leave room for the pod's request, when it is steered (CBP admitted it) as when it
// is overruled (CBP refused it). 0: the 1-s forecast alone (the 2026-12-01 PP). Not thread-safe.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "policy/knots_cbp.h"

namespace tessera::policy {

struct KnotsPpOptions {
  KnotsCbpOptions cbp;
  int lag = 1;
  double horizon_s = 1;
  bool steer = true;
  double peak_window_s = 120;
};

std::vector<OptionInfo> KnotsPpOptionList();
[[nodiscard]] Expected<KnotsPpOptions> ParseKnotsPpOptions(const nlohmann::json& options);
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeKnotsPp(const PolicyContext& context,
                                                            const nlohmann::json& options);

class KnotsPp final : public KnotsCbp {
 public:
  KnotsPp(const telemetry::Telemetry* telemetry, KnotsPpOptions options = {});
  std::string_view name() const override { return "knots-pp"; }

 protected:
  void Overrule(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v) override;
  void Confirm(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v) override;

 private:
  std::optional<double> ForecastFree(GpuIndex g, const ClusterState& c, Verdict& v);
  // The GPU's free memory at its next recurring peak (noted); nullopt when none recurs.
  std::optional<double> PeakFree(GpuIndex g, const ClusterState& c, Verdict& v);
  // Whether w's request fits the forecast free memory (noted): the least of the two forecasts
  // that exist; nullopt without either.
  std::optional<bool> RequestFits(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v);

  // A GPU's recurring memory peak as of its newest sample (cached: one pass per GPU and
  // sample).
  struct PeakCache {
    double newest_t = -1;
    std::optional<RecurringPeak> peak;
    double newest = 0;
  };
  // The GPU's series over the peak window, its newest value and recurring peak; nullptr
  // without samples.
  const PeakCache* PeakOf(std::vector<PeakCache>& caches, const telemetry::Series& newest,
                          GpuIndex g, const std::function<telemetry::Series(double)>& read);
  int lag_;
  double horizon_s_;
  bool steer_;
  double peak_window_s_;
  std::vector<PeakCache> peaks_;
};

}  // namespace tessera::policy
