#pragma once
// slo-aware — the thesis's score (seed 000, Ch. 8.3; see predictive.h) plus what it needs to
// keep the SLOs it can keep. Every mechanism is an option that turns it off (docs/policies.md
// has the ablation):
//
//  - A margin sized by what the predictor knows (`margin_z`): each member y of X is scored on
//    the lower bound
//        lb(y) = iso(y)·(1 − Σ f(y, z)) − z · iso(y) · √(σ_iso(y)² + n(y) · σ_f²)
//    where σ_iso is the cell's relative uncertainty (PredictionView: a measured cell's
//    run-to-run spread; for a completed one the predictor's calibrated σ, or the fixed
//    `completed_sigma` with calibrated_sigma=false), n(y) the number of its
//    co-runners and σ_f (`co_runner_sigma`) the uncertainty each pairwise interference term
//    adds. z = 0 scores on the mean, as the thesis does.
//  - Admission control (`admission`): an option is admissible when lb(x) ≥ target(x) and, with
//    `protect_neighbours`, no co-runner predicted to meet its target falls below it once x
//    joins. target(y) = min(SLO(y), ceiling(y)), where ceiling(y) is y's best lower bound alone
//    on any configuration of the cluster's GPU models (whole GPU or a MIG instance, 100 %): a
//    pod no configuration is predicted to serve aims at its best one. When no node has an
//    admissible option the pod waits (Score makes no offer; `explain` says what for) instead of
//    binding below its SLO. Since whether an offer exists now depends on the SLO value, the
//    policy declares it (Policy::OffersDependOn). Without admission the best option is bound
//    whatever it predicts, as `predictive` does.
//  - Finer MPS limits (`mps_step`): x is tried at every multiple of the step from 100 % down;
//    a share the profile has no column for is interpolated between the profiled shares of the
//    partition (PredictionView), never extrapolated; 0 keeps the thesis's 100/50/25 %.
//  - Among admissible options, the thesis's score on (target, lb): 100 · (1 − util(p)) · mean
//    1 / (1 + err) — the least surplus above the targets on the idlest partition. Two
//    departures: an empty partition has util 0 whatever the telemetry last saw (it lags the pod
//    that just left, and predictive's score is then 0 for every share, so the largest wins),
//    and util is capped at 0.95 so that a busy partition's options still rank by their members.
//    An idle MIG-capable GPU may be reshaped as in `predictive`.
//  - Learning from what it observes (`observe`, with PolicyContext::learner and telemetry):
//    at the end of every cycle (Policy::AfterCycle), a pod that has been alone on its partition
//    since it was bound, on a configuration the profile has a column for, has the QPS the
//    telemetry reports for it (Telemetry::WorkloadQps) folded into the predictor once
//    (Predictor::Observe) while the cell has fewer than ten runs (Ch. 6.1's characterisation;
//    each observation re-completes the matrix); its cell gains a measurement, later scores
//    read it. A pod ever seen with co-runners is not observed (its rate is not an isolated
//    one).
//  - Re-placement (`replace`, where the driver restarts moved pods: PolicyContext::can_move):
//    a pod whose telemetry QPS is below its target — seen so on a sample taken after its
//    partition last changed — while some other free option is admissible for it, is moved
//    there (Eviction::requeue; at most `max_moves` times per pod). The simulator charges a
//    restart (EngineOptions::move_restart_s); Kubernetes evicts the pod for its controller.
//
// Outside the model (several GPUs, a named MIG profile, no SLO, an unknown application) the
// workload is placed first-fit, as `predictive` does. Not thread-safe; the predictor and the
// telemetry must outlive it.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "policy/policy.h"
#include "policy/registry.h"

namespace tessera::policy {

struct SloAwareOptions {
  bool admission = true;
  bool protect_neighbours = true;
  double margin_z = 2.0;
  double completed_sigma = 0.20;
  bool calibrated_sigma = false;
  double co_runner_sigma = 0.05;
  int mps_step = 5;
  bool observe = true;
  bool replace = true;
  int max_moves = 1;
  bool reshape = true;
  std::string interference_kind = "mps";
};

std::vector<OptionInfo> SloAwareOptionList();
[[nodiscard]] Expected<SloAwareOptions> ParseSloAwareOptions(const nlohmann::json& options);
// The registry's factory: needs PolicyContext::predictor; telemetry is optional.
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakeSloAware(const PolicyContext& context,
                                                             const nlohmann::json& options);

// One member of X on one option, as Explain prints it.
struct SloMember {
  WorkloadId workload = 0;
  double target = 0;        // min(SLO, ceiling)
  double isolated = 0;      // predicted QPS alone on its slice
  double sigma = 0;         // relative uncertainty of `isolated`
  double interference = 0;  // Σ f over its co-runners once x joins
  int co_runners = 0;
  double lower = 0;  // the lower bound the score uses
};

// One option weighed: x at `mps_percent` on a partition (existing, or after a reshape).
struct SloOption {
  NodeIndex node = 0;
  GpuIndex gpu = 0;
  std::string partition;  // uuid, or "<profile> (reshape: <layout>)"
  int mps_percent = 100;
  double util = 0;
  double score = 0;
  bool admissible = false;
  std::string why_not;             // when not admissible
  std::vector<SloMember> members;  // x first
  std::optional<ReshapeTo> reshape;
  Placement placement;
};

class SloAware final : public Policy {
 public:
  // `learner` (may be null: nothing is learnt) must be `predictor` itself.
  // `clock` and `qps_window_s` (PolicyContext's): a pod found below its target is moved only
  // once its rate has been read over a whole window since it was first found so (none: at once).
  SloAware(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
           SloAwareOptions options = {}, predict::Predictor* learner = nullptr,
           bool can_move = false, const Clock* clock = nullptr, double qps_window_s = 0);
  ~SloAware() override;

  std::string_view name() const override { return "slo-aware"; }
  OfferInputs OffersDependOn() const override;
  // 100 · (1 − util) of the node's best occupied partition with room, x's offer on its best
  // empty partition or reshaped idle GPU: a set score is that factor times a mean of terms ≤ 1.
  std::optional<double> ScoreCeiling(const Workload& w, NodeIndex node,
                                     const ClusterState& c) override;
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  std::string Explain(const Workload& w, const ClusterState& c) override;
  // Observes the running pods (`observe`) and moves those below their target (`replace`).
  CycleActions AfterCycle(const ClusterState& c) override;
  int observations() const;  // folded into the predictor so far
  int moves() const;         // proposed so far

  // Every option on `node`, best first (admissible before the rest).
  std::vector<SloOption> Options(const Workload& w, NodeIndex node, const ClusterState& c);
  // x's target and ceiling (predicted best lower bound alone on the cluster's GPU models).
  double Ceiling(const Workload& w, const ClusterState& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::policy
