#pragma once
// knots-cbp — Kube-Knots' correlation-based provisioning (seed 004, §"Correlation Based
// Provisioning" and Algorithm 1): pods are co-located only when their use does not correlate
// with what already runs on the GPU, and are sized for the common case, not the peak.
//
//  - Order: first-fit decreasing by requested GPU memory (largest first, FIFO among equals).
//  - Size: a pod counts at the `percentile`-th percentile (004: 90th) of its application's
//    memory use — the series of one earlier or running pod of the same Workload::app, read from
//    telemetry by the pod's name (usage_view.h: AppHistory) — or at its request while its
//    application has fewer than `min_samples` samples.
//  - Free memory of a GPU: its memory minus its newest memory-used sample, minus the sizes of
//    its pods bound after that sample (FreshPods) and of those restarting after a crash, whose
//    own series ends at 0 (HoldsNothingNow; 004 does neither). Without memory telemetry, its
//    memory minus the sizes of its pods. GPUs are tried by free memory, the most first (Algorithm 1
//    sorts nodes by free memory at the most recent timestamp): a GPU's score is its free memory.
//  - Co-location: on a GPU that hosts pods, the Pearson correlation between the pod's history
//    and the GPU's series over the last `window_s` (004: 5 s), aligned at their newest samples,
//    must stay below `correlation_threshold` (004: 0.5) for memory, SM activity and bandwidth.
//    A flat series correlates with nothing (0); SM or bandwidth without data on either side are
//    left out; memory without data (no history of the application, or no GPU series) refuses.
//  - Admission: not correlated and the size fits the free memory.
//
// Pods reserve no memory in the cluster state; compute is capped at the request's share. What
// CBP refuses, knots-pp may still admit (the Overrule hook); what CBP admits, knots-pp may steer
// away (the Confirm hook). Offers follow telemetry
// (OfferInputs::live_state). Not thread-safe; the telemetry must outlive it.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "policy/usage_view.h"

namespace tessera::policy {

struct KnotsCbpOptions {
  double correlation_threshold = 0.5;
  double percentile = 90;
  double window_s = 5;
  double history_s = 600;
  int min_samples = 3;
};

std::vector<OptionInfo> KnotsCbpOptionList();
// Reads the CBP options for `policy` (knots-cbp, or knots-pp which builds on them).
[[nodiscard]] Expected<KnotsCbpOptions> ParseKnotsCbpOptions(std::string_view policy,
                                                             const nlohmann::json& options);
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeKnotsCbp(const PolicyContext& context,
                                                             const nlohmann::json& options);

class KnotsCbp : public Policy {
 public:
  using Check = UsageCheck;
  // One GPU's judgement of a pod: the check that let it in, the GPU's free memory (the sort
  // key) and, when `explain`, every step with its numbers.
  struct Verdict : Explanation {
    GpuIndex gpu = 0;
    Check by = Check::kNone;
    double free_mib = 0;
  };

  KnotsCbp(const telemetry::Telemetry* telemetry, KnotsCbpOptions options = {});

  std::string_view name() const override { return "knots-cbp"; }
  bool CustomOrder() const override { return true; }
  void Order(std::vector<const Workload*>& pending) const override;
  OfferInputs OffersDependOn() const override { return {.live_state = true}; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // Notes pods bound this cycle and the applications' use (no actions).
  CycleActions AfterCycle(const ClusterState& c) override;
  std::string Explain(const Workload& w, const ClusterState& c) override;

  // `explain`: fill Verdict::detail (Explain and the tests); the decision is the same without.
  Verdict Judge(const Workload& w, GpuIndex g, const ClusterState& c, bool explain = true);
  // The memory w counts at, and how it was sized.
  double SizeOf(const Workload& w, std::string* how = nullptr) const;

 protected:
  // Called when CBP refuses w on g: may admit it anyway (knots-pp), appending its reasoning to
  // `v.detail` and setting `v.by`. Default: no.
  virtual void Overrule(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v);
  // Called when CBP admits w on g: may refuse it (knots-pp steering a pod away from a GPU whose
  // peak is impending), appending its reasoning and resetting `v.by`. Default: no.
  virtual void Confirm(const Workload& w, GpuIndex g, const ClusterState& c, Verdict& v);
  // Σ sizes of g's pods that data ending at `newest_t` cannot show yet.
  double UnseenMib(GpuIndex g, double newest_t, const ClusterState& c) const;
  const KnotsCbpOptions& cbp_options() const { return options_; }
  const telemetry::Telemetry* telemetry() const { return telemetry_; }

 private:
  void Observe(const ClusterState& c);

  const telemetry::Telemetry* telemetry_;
  KnotsCbpOptions options_;
  FreshPods fresh_;
  AppHistory history_;
  std::optional<uint64_t> observed_version_;
};

}  // namespace tessera::policy
