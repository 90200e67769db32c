#pragma once
// resource-aware — the resource-aware GPU-sharing scheduler of seed 003 (§5, Fig. 4). Pending
// pods form a priority queue, the largest GPU memory request first (Order). A memory share
// (policy/usage_view.h) goes through three checks on each GPU, in turn, until one lets it in:
//
//  1. Resource-agnostic sharing: the GPU's memory minus the requests of the pods on it (003's
//     "indicator variable") still holds the request.
//  2. CBP: the coefficient of variation of the GPU's memory-used series over `cbp_window_s` is
//     below `cv_threshold`; then the GPU's use is its `percentile`-th percentile (003: 80), and
//     the request must fit in the memory minus that.
//  3. Peak prediction: the autocorrelation r_k (seed 004 eq. 1) at lag `lag` of the series over
//     `pp_window_s` is above `autocorrelation_threshold`; then an AR(1) fitted by least squares
//     forecasts the next sample, and the request must fit in the memory minus that forecast.
//
// If all three fail on every GPU, the pod stays queued and the next one is tried (003: "put
// into the priority queue … attempts to schedule the next"). Checks 2 and 3 size a pod (the one
// asking, and those they add) by `resize`: the most memory a pod of its application has been
// seen holding, in its own series (Kube-Knots' resize to consumption, 004 §CBP, which 003 cites
// for CBP); a pod of an application not seen yet by its request × the largest use ÷ request
// any pod was seen at (`unseen_by_ratio`, ours: one tenant over-provisions alike); or, `resize`
// off, by its request (003 §5's text).
// They add, at that size, the pods their data cannot show yet (usage_view.h: FreshPods) and the
// pods that hold nothing now, restarting after a crash (HoldsNothingNow): 003 does neither. With
// `cover_growth` (ours, off) they add instead every pod's growth still to come (its size less its
// own newest reading), the loading engines 003 §6.2 blames its restarts on included. Among GPUs
// that take the pod, one let in by an earlier check wins; among those of check 1, the tightest
// (less memory left unrequested, as gpushare); of checks 2 and 3, the one with the most estimated
// memory left. Pods reserve no memory in the cluster state (their requests may together exceed
// the GPU); compute is capped at the request's share. Usage comes from Telemetry only; without
// it, only check 1 runs. Offers follow telemetry (OfferInputs::live_state). Not thread-safe.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "policy/usage_view.h"

namespace tessera::policy {

struct ResourceAwareOptions {
  bool cbp = true;
  bool peak_prediction = true;
  double cv_threshold = 0.2;
  double percentile = 80;
  double cbp_window_s = 30;
  int lag = 1;
  double autocorrelation_threshold = 0.5;
  double pp_window_s = 30;
  int min_samples = 5;
  bool resize = true;
  bool unseen_by_ratio = true;
  bool cover_growth = false;
};

std::vector<OptionInfo> ResourceAwareOptionList();
[[nodiscard]] Expected<ResourceAwareOptions> ParseResourceAwareOptions(
    const nlohmann::json& options);
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeResourceAware(const PolicyContext& context,
                                                                  const nlohmann::json& options);

class ResourceAware final : public Policy {
 public:
  using Check = UsageCheck;
  // One GPU's judgement of a pod: the check that let it in (kNone: none did), the memory the
  // admitting check leaves after the request, and every check tried, with its numbers.
  struct Verdict : Explanation {
    GpuIndex gpu = 0;
    Check by = Check::kNone;
    double left_mib = 0;
  };

  ResourceAware(const telemetry::Telemetry* telemetry, ResourceAwareOptions options = {});

  std::string_view name() const override { return "resource-aware"; }
  bool CustomOrder() const override { return true; }
  void Order(std::vector<const Workload*>& pending) const override;
  OfferInputs OffersDependOn() const override { return {.live_state = true}; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // Notes the pods bound this cycle against the telemetry they came after (no actions).
  CycleActions AfterCycle(const ClusterState& c) override;
  std::string Explain(const Workload& w, const ClusterState& c) override;

  // The checks of memory share w on shareable GPU g, as they stand now; `explain` false leaves
  // the verdict's detail empty.
  Verdict Judge(const Workload& w, GpuIndex g, const ClusterState& c, bool explain = true);

 private:
  void Observe(const ClusterState& c);
  // Checks 2 and 3's size of w (`resize`): its application's seen peak, else its request (×
  // the largest use ÷ request seen, with `unseen_by_ratio`).
  double SizeMib(const Workload& w) const;
  // Σ sizes of g's pods that data ending at `newest_t` needing `settle_s` cannot show yet, or
  // hold nothing now; with `cover_growth`, Σ over g's pods of size less own newest reading.
  double UnseenMib(GpuIndex g, double newest_t, double settle_s, const ClusterState& c) const;
  // Checks 2 and 3: the memory g's pods take by the check's estimate (their use and the pods
  // not yet seen), nullopt when it cannot judge; each notes its numbers in the verdict.
  std::optional<double> CbpTakenMib(GpuIndex g, const ClusterState& c, Verdict& v) const;
  std::optional<double> PeakTakenMib(GpuIndex g, const ClusterState& c, Verdict& v) const;
  bool Enough(const telemetry::Series& s, std::string_view check, Verdict& v) const;
  static double ScoreOf(const Verdict& v, double capacity_mib);

  const telemetry::Telemetry* telemetry_;
  ResourceAwareOptions options_;
  FreshPods fresh_;
  std::optional<uint64_t> observed_version_;
  // Per application, the most memory one of its pods was seen holding (its own series).
  std::unordered_map<std::string, double> app_peak_mib_;
  // The largest use ÷ request any pod was seen at, at most 1 (0: none seen).
  double seen_ratio_ = 0;
  std::optional<uint64_t> peaks_version_;
  bool peaks_seen_ = false;
};

}  // namespace tessera::policy
