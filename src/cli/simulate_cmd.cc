// tessera simulate: runs a named experiment on the scheduler core and prints a comparison
// table (or one JSON object with --json). Experiments live in src/sim/.
#include <fmt/core.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "policy/registry.h"
#include "report/openb_report.h"
#include "sim/openb.h"
#include "sim/packing.h"

namespace tessera::cli {
namespace {

struct SimulateFlags {
  std::string experiment = "packing";
  std::vector<std::string> policies;  // empty: every registered policy
  std::optional<uint64_t> seed;
  std::string seeds = "3";  // "N" = seeds 1..N, or "A-B"
  int cluster_nodes = 64;   // packing
  std::string trace;        // openb-alloc: the pod list CSV
  std::string nodes_path;   // openb-alloc: the node list CSV (default: beside the trace)
  double inflation = 1.3;   // openb-alloc
  std::string out;          // openb-alloc: directory for curves and the plot
  bool json = false;
};

// "10" -> 1..10; "42-51" -> 42..51.
Expected<std::vector<uint64_t>> ParseSeeds(const SimulateFlags& f) {
  if (f.seed) return std::vector<uint64_t>{*f.seed};
  std::vector<uint64_t> out;
  try {
    const size_t dash = f.seeds.find('-');
    uint64_t lo = 1, hi = 0;
    if (dash == std::string::npos) {
      hi = std::stoull(f.seeds);
    } else {
      lo = std::stoull(f.seeds.substr(0, dash));
      hi = std::stoull(f.seeds.substr(dash + 1));
    }
    if (hi < lo || hi - lo >= 10000) return Fail("--seeds {}: empty or too large a range", f.seeds);
    for (uint64_t s = lo; s <= hi; ++s) out.push_back(s);
  } catch (const std::exception&) {
    return Fail("--seeds {}: expected N or A-B", f.seeds);
  }
  return out;
}

int RunPackingExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    for (const policy::PolicyInfo& p : policy::Policies()) policies.push_back(p.name);
  }
  auto rows = sim::RunPacking(policies, seeds, f.cluster_nodes);
  if (!rows) {
    std::fprintf(stderr, "tessera simulate: %s\n", rows.error().message.c_str());
    return 1;
  }
  if (f.json) {
    nlohmann::json j = {{"experiment", "packing"},
                        {"nodes", f.cluster_nodes},
                        {"results", nlohmann::json::array()}};
    for (const sim::PackingRow& r : *rows) {
      j["results"].push_back({{"policy", r.policy},
                              {"seed", r.seed},
                              {"workloads", r.workloads},
                              {"failed", r.failed},
                              {"alloc_at_first_failure_pct", r.alloc_at_first_failure_pct},
                              {"alloc_final_pct", r.alloc_final_pct},
                              {"wall_s", r.wall_s}});
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "experiment packing: %d nodes, workloads asking for 130%% of GPU capacity, "
      "arrive-only\n\n",
      f.cluster_nodes);
  std::printf("%s\n",
              fmt::format("{:<14} {:>6} {:>9} {:>7} {:>18} {:>12} {:>8}", "policy", "seed",
                          "workloads", "failed", "alloc@1st-fail %", "alloc end %", "wall s")
                  .c_str());
  for (const sim::PackingRow& r : *rows) {
    std::printf("%s\n", fmt::format("{:<14} {:>6} {:>9} {:>7} {:>18.2f} {:>12.2f} {:>8.3f}",
                                    r.policy, r.seed, r.workloads, r.failed,
                                    r.alloc_at_first_failure_pct, r.alloc_final_pct, r.wall_s)
                            .c_str());
  }
  return 0;
}

nlohmann::json AtBuckets(const std::array<double, sim::kOpenbMaxPct + 1>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (int b : {80, 90, 100, 110, 120, 130}) {
    j[std::to_string(b)] = std::isnan(v[b]) ? nlohmann::json(nullptr) : nlohmann::json(v[b]);
  }
  return j;
}

int RunOpenbExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  if (f.trace.empty()) {
    std::fprintf(stderr, "tessera simulate: --experiment openb-alloc needs --trace POD_CSV\n");
    return 2;
  }
  const std::string nodes =
      !f.nodes_path.empty()
          ? f.nodes_path
          : (std::filesystem::path(f.trace).parent_path() / "openb_node_list_gpu_node.csv")
                .string();
  auto input = sim::LoadOpenb(f.trace, nodes);
  if (!input) {
    std::fprintf(stderr, "tessera simulate: %s\n", input.error().message.c_str());
    return 1;
  }
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    for (const policy::PolicyInfo& p : policy::Policies()) policies.push_back(p.name);
  }
  std::vector<sim::OpenbRun> runs;
  for (const std::string& name : policies) {
    for (uint64_t seed : seeds) {
      auto run = sim::RunOpenb(*input, name, seed, f.inflation);
      if (!run) {
        std::fprintf(stderr, "tessera simulate: %s\n", run.error().message.c_str());
        return 1;
      }
      runs.push_back(std::move(*run));
    }
  }
  const std::vector<sim::OpenbSummary> summaries = sim::SummarizeOpenb(runs);
  if (!f.out.empty()) {
    auto written = report::WriteOpenbReport(f.out, input->trace_stem, runs);
    if (!written) {
      std::fprintf(stderr, "tessera simulate: %s\n", written.error().message.c_str());
      return 1;
    }
    for (const std::string& path : *written) std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  if (f.json) {
    nlohmann::json results = nlohmann::json::array();
    for (const sim::OpenbSummary& s : summaries) {
      nlohmann::json j = {{"experiment", "openb-alloc"},
                          {"trace", input->trace_stem},
                          {"policy", s.policy},
                          {"total_gpus", s.total_gpus},
                          {"alloc_at", AtBuckets(s.alloc_pct)},
                          {"frag_at", AtBuckets(s.frag_pct)},
                          {"failed_pods", s.failed_pods},
                          {"wall_s", s.wall_s},
                          {"cpu_s", s.cpu_s}};
      if (s.seeds.size() == 1) {
        j["seed"] = s.seeds[0];
        j["failed_pods"] = static_cast<int64_t>(std::llround(s.failed_pods));
      } else {
        j["seeds"] = s.seeds;
        j["alloc_std_at"] = AtBuckets(s.alloc_std);
        j["frag_std_at"] = AtBuckets(s.frag_std);
      }
      results.push_back(std::move(j));
    }
    std::printf("%s\n", (results.size() == 1 ? results[0] : results).dump(2).c_str());
    return 0;
  }
  std::printf(
      "experiment openb-alloc: %s, %d GPUs, inflated to %.0f%% of GPU capacity, %zu seed(s)\n\n",
      input->trace_stem.c_str(), input->total_gpus, 100 * f.inflation, seeds.size());
  std::printf("%s\n", fmt::format("{:<16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}",
                                  "policy", "a@80", "a@90", "a@100", "a@110", "a@120", "a@130",
                                  "frag@130", "failed", "wall s")
                          .c_str());
  for (const sim::OpenbSummary& s : summaries) {
    std::printf(
        "%s\n",
        fmt::format("{:<16} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.2f} {:>8.2f} {:>9.2f} "
                    "{:>9.1f} {:>8.3f}",
                    s.policy, s.alloc_pct[80], s.alloc_pct[90], s.alloc_pct[100], s.alloc_pct[110],
                    s.alloc_pct[120], s.alloc_pct[130], s.frag_pct[130], s.failed_pods, s.wall_s)
            .c_str());
  }
  return 0;
}

}  // namespace

void AddSimulate(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Run a simulated experiment on the scheduler core and compare policies");
  sub->add_option("--experiment", flags->experiment, "Experiment preset")
      ->check(CLI::IsMember({"packing", "openb-alloc"}))
      ->capture_default_str();
  sub->add_option("--policy", flags->policies, "Policies to compare (default: all registered)")
      ->delimiter(',');
  sub->add_option("--seed", flags->seed, "One seed");
  sub->add_option("--seeds", flags->seeds, "Seeds: N (1..N) or A-B")->capture_default_str();
  sub->add_option("--cluster-nodes", flags->cluster_nodes, "Cluster size in nodes (packing)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--trace", flags->trace, "Pod list CSV (openb-alloc)");
  sub->add_option("--nodes", flags->nodes_path,
                  "Node list CSV (openb-alloc; default: openb_node_list_gpu_node.csv beside "
                  "the trace)");
  sub->add_option("--inflation", flags->inflation,
                  "Arrived GPU load to inflate the pods to, x capacity (openb-alloc)")
      ->check(CLI::Range(0.01, 10.0))
      ->capture_default_str();
  sub->add_option("--out", flags->out, "Directory for curves (CSV) and the plot (HTML/SVG)");
  sub->add_flag("--json", flags->json, "Print one JSON object instead of a table");
  sub->callback([flags, exit_code] {
    auto seeds = ParseSeeds(*flags);
    if (!seeds) {
      std::fprintf(stderr, "tessera simulate: %s\n", seeds.error().message.c_str());
      *exit_code = 2;
      return;
    }
    *exit_code = flags->experiment == "openb-alloc" ? RunOpenbExperiment(*flags, *seeds)
                                                    : RunPackingExperiment(*flags, *seeds);
  });
}

}  // namespace tessera::cli
