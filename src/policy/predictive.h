#pragma once
// predictive — the thesis's scheduler (seed 000, Ch. 8.3, repeated in its Greek summary 1.5),
// to the letter. For a pending workload x and every partition p it could join, with X = the
// workloads already on p plus x:
//
//   expected(y, X, p) = isolated(y, p) − Σ_{z∈X, z≠y} interference(y, z, p)
//   err(y)            = |SLO(y) − expected(y)| / SLO(y)
//   score1 = 1 / (1 + (err + 1)²)   for y ∈ X_neg (expected < SLO)
//   score2 = 1 / (1 + err)          for y ∈ X_pos (expected ≥ SLO)
//   k = |X_neg| / |X|
//   score(X, p) = 100 · (1 − util(p)) · (k · mean score1 over X_neg + (1 − k) · mean score2
//                 over X_pos), the term of an empty set dropped
//   node score  = max over the node's partitions; the winning partition is the placement.
//
// isolated(y, p) is the predictor's cell for y's application on the configuration
// "<GPU>/<profile|whole>/<MPS %>" (predict/config_key.h). The predictor's interference is the
// fraction f(y, z) of y's isolated QPS that z takes away on a shared ("mps") partition, so the
// QPS degradation the thesis subtracts is f(y, z) · isolated(y, p); expected is floored at 0.
// util(p) is the Telemetry's instantaneous utilisation of p's uuid; when telemetry does not
// know it, an empty partition counts as 0 and an occupied one as its allocated MPS share.
//
// MPS limits (Ch. 8.4): x is tried at every active-thread percentage of `mps_percents` (the
// thesis profiled 1, 2 and 4 equal splits: 100, 50, 25 %) that the partition's free share
// allows, with a pinned-memory limit of the same share of the partition's memory; the one with
// the highest score is bound, so per-partition sums stay within 100 % and the partition memory.
// A workload whose stated GPU memory does not fit that share is filtered out.
//
// MIG reshaping (Ch. 8.3): a MIG-capable GPU that hosts nothing may be reshaped to the valid
// layout whose best partition scores highest for x (ties: the layout with the most instances,
// leaving room for what comes next); only when that beats every partition it has now. A GPU
// that hosts work is never reshaped.
//
// Outside the model: a request for more than one GPU, for a named MIG profile, without an SLO,
// or for an application the predictor does not know is placed first-fit with score
// 100 · (1 − util) — it still runs, the policy just cannot predict it. A neighbour whose
// application or configuration has no prediction counts only as an aggressor (at the kind's
// mean interference where the pair is unknown).
//
// Per-partition neighbour terms are cached and invalidated by the node's version counter, so
// scoring a workload against a cluster that mostly did not change reads arrays.
// Not thread-safe (one scheduler at a time); the predictor and telemetry must outlive it.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {

struct PredictiveOptions {
  std::vector<int> mps_percents = {100, 50, 25};
  bool reshape = true;
  std::string interference_kind = "mps";
  // Not in the thesis (0 = to the letter): score against SLO × (1 + headroom), so that a
  // prediction a few percent optimistic still lands above the SLO. See docs/policies.md.
  double slo_headroom = 0;
};

// The options above as the registry advertises them, defaults taken from PredictiveOptions{}.
std::vector<OptionInfo> PredictiveOptionList();
// Validates JSON options into PredictiveOptions (unknown keys are the registry's check); an Error
// names the policy and the option.
[[nodiscard]] Expected<PredictiveOptions> ParsePredictiveOptions(const nlohmann::json& options);
// The registry's factory: needs PolicyContext::predictor; telemetry is optional.
[[nodiscard]] Expected<std::unique_ptr<Policy>> MakePredictive(const PolicyContext& context,
                                                               const nlohmann::json& options);

// One member y of X as the score sees it (Explain prints these).
struct MemberScore {
  WorkloadId workload = 0;
  std::string app;
  double slo = 0;
  double isolated = 0;      // QPS alone on its slice
  double interference = 0;  // Σ f(y, z) over its co-runners: fraction of isolated lost
  double expected = 0;
  double err = 0;
  double score1 = 0;
  double score2 = 0;
  bool negative = false;  // in X_neg
};

// The pure formula: score(X, p) from X's expected values and SLOs and util(p).
struct SetScore {
  double score = 0;
  double k = 0;
  int negative = 0;
  int positive = 0;
};
double Err(double slo, double expected);
double Score1(double err);
double Score2(double err);
SetScore ScoreSet(const std::vector<MemberScore>& members, double util);

// One option the policy weighed: x at `mps_percent` on a partition (existing, or of a layout
// the GPU would be reshaped to), with its breakdown.
struct PartitionOption {
  NodeIndex node = 0;
  GpuIndex gpu = 0;
  std::string partition;  // uuid, or "<profile> (after reshape)"
  int mps_percent = 100;
  double util = 0;
  SetScore set;
  std::vector<MemberScore> members;  // x first
  std::optional<ReshapeTo> reshape;
  Placement placement;
};

class Predictive final : public Policy {
 public:
  Predictive(const predict::Predictor& predictor, const telemetry::Telemetry* telemetry,
             PredictiveOptions options = {});
  ~Predictive() override;

  std::string_view name() const override { return "predictive"; }
  OfferInputs OffersDependOn() const override { return {.score_ceilings = true}; }
  Feasibility Filter(const Workload& w, NodeIndex node, const ClusterState& c) const override;
  std::optional<Candidate> Score(const Workload& w, NodeIndex node, const ClusterState& c) override;
  // 100 · (1 − util) of the node's best partition with room (100 with an idle GPU it may
  // reshape): a set score is that factor times a mean of terms ≤ 1.
  std::optional<double> ScoreCeiling(const Workload& w, NodeIndex node,
                                     const ClusterState& c) override;
  std::string Explain(const Workload& w, const ClusterState& c) override;

  // Every option on `node`, best first (what Explain prints).
  std::vector<PartitionOption> Options(const Workload& w, NodeIndex node, const ClusterState& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::policy
