#pragma once
// An experiment of `tessera simulate`: one file pair in sim/ and one line in experiments.cc.
// The line says what the experiment is called, what it is, which seeds and flags it reads,
// and how to run it; `simulate` dispatches through the registry and generates its --help and
// --list-experiments from it, so adding an experiment touches no file of cli/.
//
// An experiment runs every policy it is given (or its own defaults) over the seeds, and returns
// what `simulate` prints — its JSON, its table — and the report files it wrote under --out.
// Progress and warnings go through the callbacks (the CLI sends them to stderr). Policies
// reach it checked: registered, with options their policy accepts, and needing no predictor
// unless the experiment builds one (`builds_predictor`).
//
// Not thread-safe; runs share nothing.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "sim/apps.h"
#include "sim/explain.h"

namespace tessera::sim {

// What an experiment may read: `simulate`'s flags, parsed and range-checked. Which of them an
// experiment reads is its Experiment::reads; the others keep their defaults.
struct Experiment;

struct ExperimentArgs {
  std::vector<std::string> policies;  // NAME or NAME{json}; empty: the experiment's own set
  std::vector<uint64_t> seeds;
  std::string apps;        // application catalogue; empty: the built-in data/apps.yaml
  std::string data;        // a data directory (calibrate: MIGProfiler)
  std::string trace;       // a pod list CSV (openb-alloc)
  std::string nodes;       // a node list CSV (openb-alloc; empty: beside the trace)
  std::string out;         // where its report goes (a directory; calibrate: a file)
  int cluster_nodes = 64;  // nodes of 8 GPUs (packing, thesis-scale); disaggregation's nodes
  bool cluster_nodes_given = false;  // on the command line (disaggregation reads it only then)
  int workloads = 5000;              // thesis-scale
  int unprofiled = 0;      // thesis-scale: engines never profiled (ThesisScenario::unprofiled)
  double inflation = 1.3;  // openb-alloc
  // KEY=VALUE,...: which reading of its seed the world takes where the seed reads two ways
  // (thesis: sim/thesis.h ThesisReading); empty: the experiment's defaults.
  std::string reading;
  // One line of progress ("" when done); a warning about a run. Either may be empty.
  std::function<void(const std::string&)> progress;
  std::function<void(const std::string&)> warn;
  void Progress(const std::string& line) const {
    if (progress) progress(line);
  }
};

struct ExperimentOutput {
  nlohmann::json json;               // --json (null: it has none)
  std::string table;                 // what it prints without --json
  std::vector<std::string> written;  // report files written under --out
};

struct Experiment {
  std::string_view name;
  std::string_view summary;        // one line, for --help and --list-experiments
  std::string_view default_seeds;  // "N" (1..N) or "A-B"
  // Flags it reads beyond --experiment, --policy, --seed(s) and --json (without dashes); any
  // other given is a usage error.
  std::vector<std::string_view> reads;
  bool runs_policies = true;      // false: --policy, --seed(s) and --json do not apply
  bool builds_predictor = false;  // it profiles its cluster, so predictive policies may run
  // Its policies when --policy is not given.
  std::function<std::vector<std::string>()> default_policies;
  // A usage error in the arguments, found before anything runs (e.g. a policy it cannot run);
  // may be empty.
  std::function<Expected<void>(const ExperimentArgs&)> check;
  std::function<Expected<ExperimentOutput>(const ExperimentArgs&, const Experiment&)> run;
  // Its --policy names its own arms (checked by `check`), not registered policies.
  bool policies_are_arms = false;
  // `tessera explain` in a world like this experiment's, for the policies whose
  // PolicyInfo::world names it (sim/explain.h); may be empty.
  std::function<Expected<Explanation>(const ExplainArgs&)> explain;
};

// Every experiment, in --help order; the first is the default.
std::span<const Experiment> Experiments();
const Experiment* FindExperiment(std::string_view name);

// Helpers experiments share.
// The policies to run: the given ones, or the experiment's defaults.
std::vector<std::string> PoliciesOrDefault(const ExperimentArgs& args, const Experiment& e);
// The application catalogue of --apps, or the built-in data/apps.yaml.
[[nodiscard]] Expected<AppCatalog> CatalogOf(const ExperimentArgs& args);
// `out` with report.json (its JSON) and report.html written into `dir`, all or nothing; `out`
// as it is when `dir` is empty.
[[nodiscard]] Expected<ExperimentOutput> WithReport(ExperimentOutput out, const std::string& dir,
                                                    const std::string& html);
// The items of a --reading, KEY=VALUE,...: split at the commas ("" has none; "a,,b" has an
// empty one, which every parser refuses by name).
std::vector<std::string_view> ReadingItems(std::string_view reading);
// `value` (a reading's VALUE), as a whole, a number in [lo, hi] into `out`; false (not a number,
// trailing text, NaN, out of range) leaves `out` as it was.
bool ReadingNumberIn(std::string_view value, double lo, double hi, double& out);
// Those of `wanted` this build registers (a note on stderr for each it does not).
std::vector<std::string> RegisteredOf(const std::vector<std::string>& wanted);
// Every registered policy that needs no predictor and allocates GPU compute (the packing
// experiments' default set).
std::vector<std::string> PackingPolicies();
// The mean of `run_one(seed)` over every seed by `mean`, or the first error; progress as
// "<label> seed N".
template <typename Run, typename RunOne, typename Mean>
Expected<Run> MeanOverSeeds(const ExperimentArgs& args, const std::string& label,
                            const RunOne& run_one, const Mean& mean) {
  std::vector<Run> runs;
  for (uint64_t seed : args.seeds) {
    args.Progress(label + " seed " + std::to_string(seed));
    Expected<Run> run = run_one(seed);
    if (!run) return std::unexpected(run.error());
    runs.push_back(std::move(*run));
  }
  return mean(std::span<const Run>(runs));
}

// MeanOverSeeds for every policy to run (the given ones or the experiment's defaults), labelled
// "<experiment>: <policy>"; `run_one(policy, seed)`.
template <typename Run, typename RunOne, typename Mean>
Expected<std::vector<Run>> MeansPerPolicy(const ExperimentArgs& args, const Experiment& e,
                                          const RunOne& run_one, const Mean& mean) {
  std::vector<Run> means;
  for (const std::string& policy : PoliciesOrDefault(args, e)) {
    Expected<Run> m = MeanOverSeeds<Run>(
        args, std::string(e.name) + ": " + policy,
        [&](uint64_t seed) { return run_one(policy, seed); }, mean);
    if (!m) return std::unexpected(m.error());
    means.push_back(std::move(*m));
  }
  return means;
}

}  // namespace tessera::sim
