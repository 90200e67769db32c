#include "sim/openb_defrag.h"

#include <fmt/core.h>

#include <cmath>
#include <vector>

#include "sim/openb.h"

namespace tessera::sim {
namespace {

struct MeanSd {
  double mean = 0, sd = 0;
};

MeanSd Stats(const std::vector<double>& xs) {
  MeanSd m;
  if (xs.empty()) return m;
  for (double x : xs) m.mean += x / static_cast<double>(xs.size());
  double sq = 0;
  for (double x : xs) sq += (x - m.mean) * (x - m.mean);
  m.sd = xs.size() > 1 ? std::sqrt(sq / static_cast<double>(xs.size() - 1)) : 0;
  return m;
}

// One row: a policy at one budget, over the seeds, and paired against the budget-0 runs.
struct Row {
  std::string policy;
  double budget = 0;
  MeanSd at100, at_last, gain, moves, rescued, failed;
};

Row Summarize(const std::string& policy, double budget, const std::vector<OpenbRun>& runs,
              const std::vector<OpenbRun>& base, int last) {
  std::vector<double> a100, alast, gain, moves, rescued, failed;
  for (size_t i = 0; i < runs.size(); ++i) {
    a100.push_back(runs[i].alloc_pct[100]);
    alast.push_back(runs[i].alloc_pct[static_cast<size_t>(last)]);
    gain.push_back(runs[i].alloc_pct[static_cast<size_t>(last)] -
                   base[i].alloc_pct[static_cast<size_t>(last)]);
    moves.push_back(static_cast<double>(runs[i].moves));
    rescued.push_back(static_cast<double>(runs[i].rescued));
    failed.push_back(static_cast<double>(runs[i].failed_pods));
  }
  return {policy,      budget,       Stats(a100),    Stats(alast),
          Stats(gain), Stats(moves), Stats(rescued), Stats(failed)};
}

}  // namespace

Expected<void> CheckOpenbDefragArgs(const ExperimentArgs& args) {
  if (args.trace.empty()) return Fail("--experiment openb-defrag needs --trace POD_CSV");
  return {};
}

Expected<ExperimentOutput> RunOpenbDefragExperiment(const ExperimentArgs& args,
                                                    const Experiment& experiment) {
  auto input = LoadOpenbArgs(args);
  if (!input) return std::unexpected(input.error());
  const int last = std::min(kOpenbMaxPct, static_cast<int>(std::lround(args.inflation * 100)));
  ExperimentOutput out;
  out.json = {{"experiment", "openb-defrag"},
              {"trace", input->trace_stem},
              {"total_gpus", input->total_gpus},
              {"seeds", args.seeds},
              {"rows", nlohmann::json::array()}};
  out.table = fmt::format(
      "openb-defrag: {} on {} GPUs, seeds {}..{}; allocation (% of GPUs), mean ± sd; gain "
      "paired by seed against the same policy without moves\n\n{:<12} {:>6} {:>14} {:>14} "
      "{:>16} {:>8} {:>8} {:>8}\n",
      input->trace_stem, input->total_gpus, args.seeds.front(), args.seeds.back(), "policy",
      "moves%", "alloc@100", fmt::format("alloc@{}", last), fmt::format("gain@{}", last), "moves",
      "rescued", "failed");
  for (const std::string& policy : PoliciesOrDefault(args, experiment)) {
    std::vector<OpenbRun> base;
    for (double budget : kOpenbMoveBudgets) {
      std::vector<OpenbRun> runs;
      for (uint64_t seed : args.seeds) {
        args.Progress(fmt::format("openb-defrag: {} {} moves/100 seed {}", policy, budget, seed));
        auto run = RunOpenb(*input, policy, seed, args.inflation, budget);
        if (!run) return std::unexpected(run.error());
        runs.push_back(std::move(*run));
      }
      if (budget == 0) base = runs;
      const Row r = Summarize(policy, budget, runs, base, last);
      out.table += fmt::format(
          "{:<12} {:>6g} {:>7.2f} ± {:<4.2f} {:>7.2f} ± {:<4.2f} {:>+8.2f} ± {:<5.2f} {:>8.1f} "
          "{:>8.1f} {:>8.1f}\n",
          r.policy, r.budget, r.at100.mean, r.at100.sd, r.at_last.mean, r.at_last.sd, r.gain.mean,
          r.gain.sd, r.moves.mean, r.rescued.mean, r.failed.mean);
      out.json["rows"].push_back({{"policy", r.policy},
                                  {"moves_per_100_arrivals", r.budget},
                                  {"alloc_pct_100", r.at100.mean},
                                  {"alloc_pct_100_sd", r.at100.sd},
                                  {"alloc_pct_last", r.at_last.mean},
                                  {"alloc_pct_last_sd", r.at_last.sd},
                                  {"gain_last", r.gain.mean},
                                  {"gain_last_sd", r.gain.sd},
                                  {"moves", r.moves.mean},
                                  {"rescued", r.rescued.mean},
                                  {"failed_pods", r.failed.mean}});
    }
  }
  return out;
}

}  // namespace tessera::sim
