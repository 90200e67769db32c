// The experiments of `tessera simulate`, one line each: adding one is its file pair in sim/ and
// a line here (sim/experiment.h). The first is the default.
#include <fmt/core.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "policy/registry.h"
#include "report/html.h"
#include "sim/calibrate.h"
#include "sim/disaggregation.h"
#include "sim/embedded_apps.h"
#include "sim/experiment.h"
#include "sim/knots.h"
#include "sim/online_offline.h"
#include "sim/openb.h"
#include "sim/openb_bound.h"
#include "sim/openb_defrag.h"
#include "sim/overprovision.h"
#include "sim/packing.h"
#include "sim/thesis.h"

namespace tessera::sim {
namespace {

// The memory a packing or thesis-scale run will need, from its size flags, against the
// machine's: a run that cannot fit is refused before it allocates (it would grow for minutes
// with no output, then be killed). Costs measured on Release builds (docs/benchmarks.md,
// "Sizes"): about 23 KB per node of 8 GPUs with its workloads (packing 500 → 2,000 nodes: 22 →
// 56 MB) and 3.1 KB per thesis-scale workload (5,000 → 20,000: 26 → 71 MB), doubled for margin.
Expected<void> CheckRunFits(const ExperimentArgs& args, bool per_workload) {
  constexpr double kBase = 32e6, kPerNode = 2 * 23e3, kPerWorkload = 2 * 3.1e3;
  const double need =
      kBase + kPerNode * args.cluster_nodes + (per_workload ? kPerWorkload * args.workloads : 0);
  const double have =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (have > 0 && need > 0.8 * have) {
    return Fail(
        "--cluster-nodes {} {}: the run would need about {:.1f} GB of memory, more than 80% of "
        "this machine's {:.1f} GB; ask for fewer",
        args.cluster_nodes, per_workload ? fmt::format("--workloads {}", args.workloads) : "",
        need / 1e9, have / 1e9);
  }
  return {};
}
Expected<void> CheckThesisReading(const ExperimentArgs& args) {
  if (auto r = ThesisReading::Parse(args.reading); !r) return std::unexpected(r.error());
  return {};
}
Expected<void> CheckOverprovisionReading(const ExperimentArgs& args) {
  if (auto r = OverprovisionScenarioOf(args.reading); !r) return std::unexpected(r.error());
  return {};
}
Expected<void> CheckKnotsReading(const ExperimentArgs& args) {
  if (auto r = KnotsReading::Parse(args.reading); !r) return std::unexpected(r.error());
  return {};
}
// 002's largest scenario is 128 nodes; eight times that (32,768 jobs) is as far as the
// experiment has been run (docs/results.md), so a larger one is a usage error, not a gamble.
Expected<void> CheckDisaggregationNodes(const ExperimentArgs& args) {
  constexpr int kMaxNodes = 1024;
  if (args.cluster_nodes_given && args.cluster_nodes > kMaxNodes) {
    return Fail("--cluster-nodes {}: the disaggregation experiment runs at most {} nodes",
                args.cluster_nodes, kMaxNodes);
  }
  if (auto s = DisaggregationScenariosOf(args); !s) return std::unexpected(s.error());
  return {};
}
Expected<void> PackingFits(const ExperimentArgs& args) { return CheckRunFits(args, false); }
Expected<void> ThesisScaleFits(const ExperimentArgs& args) {
  if (auto r = CheckThesisReading(args); !r) return r;
  return CheckRunFits(args, true);
}

template <std::span<const std::string_view> (*List)()>
std::vector<std::string> Names() {
  std::vector<std::string> out;
  for (std::string_view p : List()) out.emplace_back(p);
  return out;
}

// The registry: one entry per experiment (sim/experiment.h says what each field means).
const Experiment kExperiments[] = {
    {.name = "thesis",
     .summary = "the thesis's cluster and SLO scenarios (seed 000, Ch. 9)",
     .default_seeds = "10",
     .reads = {"apps", "out", "reading"},
     .builds_predictor = true,
     .default_policies = ThesisPolicies,
     .check = CheckThesisReading,
     .run = RunThesisExperiment,
     .explain = ExplainThesis},
    {.name = "thesis-scale",
     .summary = "the thesis's policies on a large cluster, Poisson arrivals",
     .default_seeds = "1",
     .reads = {"apps", "out", "reading", "workloads", "cluster-nodes", "unprofiled"},
     .builds_predictor = true,
     .default_policies = ThesisPolicies,
     .check = ThesisScaleFits,
     .run = RunThesisExperiment},
    {.name = "packing",
     .summary = "a mixed cluster filled to 130% of its GPUs, arrive-only",
     .default_seeds = "3",
     .reads = {"cluster-nodes"},
     .default_policies = PackingPolicies,
     .check = PackingFits,
     .run = RunPackingExperiment},
    {.name = "openb-alloc",
     .summary = "Alibaba's openb trace replayed: allocation and fragmentation (FGD)",
     .default_seeds = "42-42",
     .reads = {"trace", "nodes", "inflation", "out"},
     .default_policies = PackingPolicies,
     .check = CheckOpenbArgs,
     .run = RunOpenbExperiment},
    {.name = "openb-defrag",
     .summary = "openb-alloc with 0, 1 and 5 pod moves per 100 arrivals (defragmentation)",
     .default_seeds = "42-42",
     .reads = {"trace", "nodes", "inflation"},
     .default_policies = [] { return std::vector<std::string>{"fgd"}; },
     .check = CheckOpenbDefragArgs,
     .run = RunOpenbDefragExperiment},
    {.name = "openb-bound",
     .summary = "the most any packer could allocate of openb's GPUs (an upper bound)",
     .default_seeds = "42-42",
     .reads = {"trace", "nodes", "inflation"},
     .default_policies = OpenbBoundArms,
     .check = CheckOpenbBoundArgs,
     .run = RunOpenbBoundExperiment,
     .policies_are_arms = true},
    {.name = "online-offline",
     .summary = "online services and offline training on a T4 cluster (seed 001)",
     .default_seeds = "3",
     .reads = {"apps", "out", "reading"},
     .default_policies = Names<OnlineOfflinePolicies>,
     .check = CheckOnlineOfflineArgs,
     .run = RunOnlineOfflineExperiment,
     .policies_are_arms = true,
     .explain = ExplainOnlineOffline},
    {.name = "overprovision",
     .summary = "inference engines over-asking GPU memory on one V100 (seed 003 §6)",
     .default_seeds = "10",
     .reads = {"apps", "out", "reading"},
     .default_policies = Names<OverprovisionPolicies>,
     .check = CheckOverprovisionReading,
     .run = RunOverprovisionExperiment,
     .explain = ExplainOverprovision},
    {.name = "knots",
     .summary = "batch jobs and inference pods on 10 GPU nodes (seed 004)",
     .default_seeds = "10",
     .reads = {"apps", "out", "reading"},
     .default_policies = Names<KnotsPolicies>,
     .check = CheckKnotsReading,
     .run = RunKnotsExperiment},
    {.name = "disaggregation",
     .summary = "Rodinia-like jobs on K80 nodes, GPUs local or remote (seed 002)",
     .default_seeds = "3",
     .reads = {"apps", "out", "cluster-nodes", "reading"},
     .default_policies = Names<DisaggregationPolicies>,
     .check = CheckDisaggregationNodes,
     .run = RunDisaggregationExperiment,
     .explain = ExplainDisaggregation},
    {.name = "calibrate",
     .summary = "fit the MIGProfiler measurements into the application catalogue",
     .default_seeds = "1",
     .reads = {"apps", "data", "out"},
     .runs_policies = false,
     .check = CheckCalibrateArgs,
     .run = RunCalibrateExperiment},
};

}  // namespace

std::span<const Experiment> Experiments() { return kExperiments; }

const Experiment* FindExperiment(std::string_view name) {
  for (const Experiment& e : Experiments()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> PoliciesOrDefault(const ExperimentArgs& args, const Experiment& e) {
  if (!args.policies.empty() || !e.default_policies) return args.policies;
  return e.default_policies();
}

std::vector<std::string_view> ReadingItems(std::string_view reading) {
  std::vector<std::string_view> items;
  for (size_t at = 0; at < reading.size();) {
    size_t end = reading.find(',', at);
    if (end == std::string_view::npos) end = reading.size();
    items.push_back(reading.substr(at, end - at));
    at = end + 1;
  }
  return items;
}

bool ReadingNumberIn(std::string_view value, double lo, double hi, double& out) {
  double x = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
  if (ec != std::errc() || end != value.data() + value.size() || !(x >= lo && x <= hi)) {
    return false;
  }
  out = x;
  return true;
}

std::vector<std::string> RegisteredOf(const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  for (const std::string& name : wanted) {
    if (policy::FindPolicy(name)) {
      out.push_back(name);
    } else {
      std::fprintf(stderr, "tessera simulate: policy %s is not in this build; skipped\n",
                   name.c_str());
    }
  }
  return out;
}

std::vector<std::string> PackingPolicies() {
  // Their pods name no application (nothing to predict from), and they measure GPU compute
  // allocation (the memory-sharing policies reserve none).
  std::vector<std::string> out;
  for (const policy::PolicyInfo& p : policy::Policies()) {
    if (!p.needs_predictor && p.allocates_compute) out.push_back(p.name);
  }
  return out;
}

Expected<AppCatalog> CatalogOf(const ExperimentArgs& args) {
  return args.apps.empty() ? ParseAppCatalog(std::string(EmbeddedAppsYaml()), "data/apps.yaml")
                           : LoadAppCatalog(args.apps);
}

Expected<ExperimentOutput> WithReport(ExperimentOutput out, const std::string& dir,
                                      const std::string& html) {
  if (dir.empty()) return out;
  auto written =
      report::WriteFiles(dir, {{"report.json", out.json.dump(2) + "\n"}, {"report.html", html}});
  if (!written) return std::unexpected(written.error());
  out.written = std::move(*written);
  return out;
}

}  // namespace tessera::sim
