#pragma once
// Files of the `thesis` and `thesis-scale` experiments (DESIGN §1 report::), from the runs of
// every policy × scenario × seed:
//   report.json    the object `tessera simulate --json` prints (ThesisJson)
//   workloads.csv  one row per workload per run (ThesisWorkloadsCsv)
//   report.html    self-contained page: the comparison table (with the SLO-feasible pods and
//                  the attainment over them) and the all-runs aggregate per policy; per
//                  scenario the CDF of (achieved − SLO) / SLO per policy (thesis Fig. 9.5/9.6),
//                  bars of SLO violations (a dashed mark at the violations no policy can
//                  avoid), GPU utilisation and energy per policy. Inline SVG, no scripts.
// Runs are grouped by (scenario, policy) in the order they first appear; a policy keeps one
// colour on every plot.

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "sim/thesis.h"

namespace tessera::sim {

// The mean over seeds of each (scenario, policy), in order of first appearance.
std::vector<ThesisRun> ThesisMeans(std::span<const ThesisRun> runs);

// One policy over every run of the experiment, all scenarios and seeds pooled, as thesis
// Ch. 9.3 compares schedulers ("the average percentage difference among all the conducted
// experiments"): the mean over runs of each run's mean |achieved − SLO| / SLO (every run
// weighs the same, as each of the thesis's four experiments did), the energy summed, and the
// feasible pods' attainment pooled (met / feasible over all runs).
struct ThesisAggregate {
  std::string policy;
  size_t runs = 0;
  double qps_slo_abs_diff_mean = 0;
  double energy_j = 0;
  double slo_feasible = 0;  // pods, summed over runs
  double slo_met_feasible = 0;
  double slo_attainment_feasible() const;  // NaN when no pod was feasible
};
// In order of each policy's first appearance.
std::vector<ThesisAggregate> AggregateByPolicy(std::span<const ThesisRun> runs);

// The thesis's Ch. 9 table beside ours (docs/simulator.md, "The thesis table, reproduced"):
// seventeen figures, pooled over the four thesis scenarios (20 and 40 pods, low and high SLOs;
// not the unprofiled ones): attainment = pods that met their SLO ÷ pods per SLO level;
// makespan and energy = the policy's sum over the scenarios ÷ predictive's; |diff| = its mean of
// the scenario means ÷ predictive's. `thesis` is the thesis's value (Ch. 9.3-9.4), [lo, hi] the
// range a reproduction must hit (hi infinite: at least lo). Empty unless predictive and the
// four scenarios ran; a figure is left out when its policy did not run.
struct ReproductionFigure {
  std::string figure;  // "attainment low", "attainment high", "makespan", "energy", "|diff|"
  std::string policy;
  double thesis = 0;
  double ours = 0;
  double lo = 0, hi = 0;
  bool held() const { return ours >= lo && ours <= hi; }
};
std::vector<ReproductionFigure> ThesisReproduction(std::span<const ThesisRun> runs);
// The figures as the CLI prints them after its tables ("" when there are none).
std::string ReproductionText(std::span<const ReproductionFigure> figures);

// {"experiment", "seeds", "results": [mean of each (scenario, policy) with "per_seed": [...]],
//  "aggregate": [one AggregateByPolicy entry per policy], "reproduction": [one object per
// ThesisReproduction figure, "hi" null when unbounded]}. A fraction that does not exist (no
// feasible pod) is null.
nlohmann::json ThesisJson(const std::string& experiment, size_t seeds,
                          std::span<const ThesisRun> runs);

// Header: kThesisCsvHeader; one row per ThesisWorkloadRecord of every run.
inline constexpr const char* kThesisCsvHeader =
    "policy,scenario,seed,workload,app,slo_qps,achieved_qps,relative_diff,failed,failure,"
    "arrival_s,start_s,end_s,pending_s,node,partition,profile,mps_milli,moves";
std::string ThesisWorkloadsCsv(std::span<const ThesisRun> runs);

// The empirical CDF of a sample: one point per distinct value x, y = fraction of the sample
// ≤ x, in increasing x. Empty for an empty sample.
struct CdfPoint {
  double x = 0;
  double y = 0;
};
std::vector<CdfPoint> Cdf(std::vector<double> sample);

// The page alone (for tests): the reproduction table when there is one, 4 <svg> per scenario.
std::string ThesisHtml(const std::string& experiment, std::span<const ThesisRun> runs);

// Writes report.json, workloads.csv and report.html into `dir` (created if needed), all or
// nothing. Returns the paths written.
[[nodiscard]] Expected<std::vector<std::string>> WriteThesisReport(const std::string& dir,
                                                                   const std::string& experiment,
                                                                   size_t seeds,
                                                                   std::span<const ThesisRun> runs);

}  // namespace tessera::sim
