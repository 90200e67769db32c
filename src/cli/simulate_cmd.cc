// tessera simulate: runs a named experiment on the scheduler core and prints a comparison
// table (or one JSON object with --json). Experiments live in src/sim/.
#include <fmt/core.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "policy/registry.h"
#include "sim/packing.h"

namespace tessera::cli {
namespace {

struct SimulateFlags {
  std::string experiment = "packing";
  std::vector<std::string> policies;  // empty: every registered policy
  std::optional<uint64_t> seed;
  std::string seeds = "3";  // "N" = seeds 1..N, or "A-B"
  int nodes = 64;
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
  auto rows = sim::RunPacking(policies, seeds, f.nodes);
  if (!rows) {
    std::fprintf(stderr, "tessera simulate: %s\n", rows.error().message.c_str());
    return 1;
  }
  if (f.json) {
    nlohmann::json j = {
        {"experiment", "packing"}, {"nodes", f.nodes}, {"results", nlohmann::json::array()}};
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
      f.nodes);
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

}  // namespace

void AddSimulate(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Run a simulated experiment on the scheduler core and compare policies");
  sub->add_option("--experiment", flags->experiment, "Experiment preset")
      ->check(CLI::IsMember({"packing"}))
      ->capture_default_str();
  sub->add_option("--policy", flags->policies, "Policies to compare (default: all registered)")
      ->delimiter(',');
  sub->add_option("--seed", flags->seed, "One seed");
  sub->add_option("--seeds", flags->seeds, "Seeds: N (1..N) or A-B")->capture_default_str();
  sub->add_option("--nodes", flags->nodes, "Cluster size in nodes (packing)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_flag("--json", flags->json, "Print one JSON object instead of a table");
  sub->callback([flags, exit_code] {
    auto seeds = ParseSeeds(*flags);
    if (!seeds) {
      std::fprintf(stderr, "tessera simulate: %s\n", seeds.error().message.c_str());
      *exit_code = 2;
      return;
    }
    *exit_code = RunPackingExperiment(*flags, *seeds);
  });
}

}  // namespace tessera::cli
