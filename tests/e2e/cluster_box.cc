// cluster_box: a cluster in a box (docs/cluster-box.md). Runs the thesis scenario on the
// production daemons against an emulated cluster and on the simulator, for each policy and seed,
// and writes the comparison as JSON and as an HTML page.
//
//   build/tests/cluster_box --policy max,min,predictive,slo-aware --seeds 1-3 --out /tmp/box
//
// Exit: 0 every run holds its parity checks, 1 one does not (or the cluster could not be
// brought up), 2 usage.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "e2e/box_burst.h"
#include "e2e/box_compare.h"
#include "e2e/box_process.h"

namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size() && !s.empty()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    if (end > at) out.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// "N" (1..N) or "A-B"; nullopt when it is neither.
std::optional<std::vector<uint64_t>> ParseSeeds(const std::string& seeds) {
  std::vector<uint64_t> out;
  try {
    const size_t dash = seeds.find('-');
    const uint64_t a = dash == std::string::npos ? 1 : std::stoull(seeds.substr(0, dash));
    const uint64_t b = std::stoull(dash == std::string::npos ? seeds : seeds.substr(dash + 1));
    if (b < a || b - a > 1000) return std::nullopt;
    for (uint64_t s = a; s <= b; ++s) out.push_back(s);
  } catch (...) {
    return std::nullopt;
  }
  return out;
}

// One line of the table: both sides' figures, the placements and the checks that failed.
void PrintRow(const nlohmann::json& r) {
  const tessera::e2e::RunRow row = tessera::e2e::RowOf(r);
  std::cout << fmt::format(
      "{:<12} {:>4}  {:>8.0f}% {:>8.0f}%  {:>8.3f} {:>8.3f}  {:>8.1f} {:>8.1f}  {:>4} {:>4} "
      "{:>4} {:>5} {:>5}  {}\n",
      row.policy, row.seed, row.attainment_sim, row.attainment_box, row.diff_sim, row.diff_box,
      row.makespan_sim, row.makespan_box, row.same, row.different, row.ties, row.after_tie,
      fmt::format("{}/{}", row.moves_sim, row.moves_box),
      row.failed.empty() ? "ok" : "FAILED " + row.failed);
  std::cout.flush();
}

// SIGTERM or SIGINT (a CTest timeout, Ctrl-C): every daemon the box started goes with it.
void KillTheBox(int sig) {
  tessera::e2e::KillAllChildren();
  _exit(128 + sig);
}

// The command line: what to run (policies, seeds, scenario) and where.
struct Flags {
  std::string policies = "max,min,predictive,slo-aware", seeds = "1-3", faults, out = "box-out";
  std::string tessera = TESSERA_BIN, exporter = EXPORTER_BIN, slo = "low", scenario = "thesis";
  int pods = 20, nodes = 0, unprofiled = 0;
  double time_scale = 10, timeout_s = 900;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--scenario", f.scenario,
                 "thesis: the thesis's (or thesis-scale's) pods for --policy; burst: seed 001's "
                 "short scenario for muxflow, a memory burst SysMonitor must evict for "
                 "(sim::ShortBurstScenario; --policy, --pods, --nodes and --time-scale do not "
                 "apply)")
      ->check(CLI::IsMember({"thesis", "burst"}));
  app.add_option("--policy", f.policies, "Policies, comma-separated");
  app.add_option("--seeds", f.seeds, "Seeds: N (1..N) or A-B");
  app.add_option("--pods", f.pods,
                 "Pods of the scenario: 20 or 40 on the thesis's cluster, 1..2000 with --nodes")
      ->check(CLI::Range(1, 2000));
  app.add_option("--nodes", f.nodes,
                 "0: the thesis's cluster (V100 node, A30 node); N: thesis-scale's, N nodes of 8 "
                 "GPUs and --pods Poisson arrivals in the hour (scaled by --time-scale)")
      ->check(CLI::Range(0, 8));
  app.add_option("--unprofiled", f.unprofiled,
                 "Engines never profiled: on the thesis's cluster 0 or 3 (3 with 20 pods only, as "
                 "the simulator runs it); with --nodes 0..6")
      ->check(CLI::Range(0, 6));
  app.add_option("--slo", f.slo, "SLO level")->check(CLI::IsMember({"low", "high"}));
  app.add_option("--time-scale", f.time_scale, "Arrivals and pod lengths divided by this")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_option("--faults", f.faults,
                 "Faults during the arrivals, comma-separated: kill-leader, restart-redis, "
                 "cut-watches, delay-api");
  app.add_option("--timeout", f.timeout_s, "Seconds a run may take")->check(CLI::PositiveNumber);
  app.add_option("--out", f.out,
                 "Directory for comparison.json, comparison.html and each run's logs");
  app.add_option("--tessera", f.tessera, "The tessera binary");
  app.add_option("--exporter", f.exporter, "The metrics_file_exporter binary");
}

// What the flags cannot mean together; empty when they can.
std::string UsageError(const Flags& f) {
  if (!ParseSeeds(f.seeds)) return "--seeds " + f.seeds + ": N or A-B expected";
  if (f.nodes == 0 && f.pods != 20 && f.pods != 40) {
    return fmt::format("--pods {}: the thesis's cluster runs 20 or 40", f.pods);
  }
  if (f.nodes == 0 && f.unprofiled != 0 && (f.unprofiled != 3 || f.pods != 20)) {
    return "on the thesis's cluster --unprofiled 3 goes with 20 pods only";
  }
  for (const std::string& fault : Split(f.faults)) {
    if (fault != "kill-leader" && fault != "restart-redis" && fault != "cut-watches" &&
        fault != "delay-api") {
      return "--faults: unknown fault " + fault;
    }
  }
  return "";
}

// One run on both sides, compared; throws what kept the box from running.
nlohmann::json RunOne(const Flags& f, const std::string& policy, uint64_t seed) {
  tessera::e2e::RunSpec spec{.policy = policy,
                             .seed = seed,
                             .scenario = {.pods = f.pods,
                                          .high_slo = f.slo == "high",
                                          .nodes = f.nodes,
                                          .unprofiled = f.unprofiled},
                             .time_scale = f.time_scale,
                             .tessera = f.tessera,
                             .exporter = f.exporter,
                             .dir = fmt::format("{}/{}-{}", f.out, policy, seed),
                             .faults = Split(f.faults),
                             .timeout_s = f.timeout_s};
  std::filesystem::remove_all(spec.dir);
  // The simulator first: the pods it never starts, the box need not wait for.
  const auto sim = tessera::e2e::RunSimulator(spec);
  for (const tessera::e2e::SimPod& p : sim) {
    if (!p.start_s) spec.never_started.insert(p.id);
  }
  const auto box = tessera::e2e::RunOnBox(spec);
  return tessera::e2e::Compare(spec, box, sim);
}

// The burst scenario for each seed on both sides; its own report (burst.json, burst.html).
int RunBurst(const Flags& f, const std::string& date) {
  nlohmann::json report = {{"date", date}, {"runs", nlohmann::json::array()}};
  bool ok = true;
  std::cout << fmt::format("{:<6} {:>10} {:>10} {:>9} {:>9} {:>8} {:>8}  {}\n", "seed", "evict sim",
                           "evict box", "done sim", "done box", "OOM sim", "OOM box", "checks");
  const std::vector<uint64_t> seeds = *ParseSeeds(f.seeds);
  for (uint64_t seed : seeds) {
    tessera::e2e::RunSpec spec = tessera::e2e::BurstSpec(seed, f.out, f.tessera, f.exporter);
    spec.faults = Split(f.faults);
    spec.timeout_s = f.timeout_s;
    std::filesystem::remove_all(spec.dir);
    nlohmann::json r;
    try {
      r = tessera::e2e::CompareBurst(spec, tessera::e2e::RunOnBox(spec));
    } catch (const std::exception& e) {
      std::cerr << "cluster_box: burst seed " << seed << ": " << e.what() << "\n";
      return 1;
    }
    std::string failed;
    for (const auto& [k, v] : r["checks"].items()) {
      if (!v.get<bool>()) failed += (failed.empty() ? "" : ",") + k;
    }
    std::cout << fmt::format("{:<6} {:>10} {:>10} {:>9} {:>9} {:>8} {:>8}  {}\n", seed,
                             r["sim"]["evictions"].get<int>(), r["box"]["evictions"].get<int>(),
                             r["sim"]["jobs_done"].get<int>(), r["box"]["jobs_done"].get<int>(),
                             r["sim"]["service_oom"].get<int>(), r["box"]["service_oom"].get<int>(),
                             failed.empty() ? "ok" : "FAILED " + failed);
    ok = ok && r["ok"].get<bool>();
    report["runs"].push_back(std::move(r));
    std::ofstream(f.out + "/burst.json") << report.dump(2) << "\n";
    std::ofstream(f.out + "/burst.html") << tessera::e2e::BurstPage(report);
  }
  std::cout << "wrote " << f.out << "/burst.json and " << f.out << "/burst.html\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGTERM, KillTheBox);
  std::signal(SIGINT, KillTheBox);
  CLI::App app{"Run the thesis scenario on an emulated cluster and on the simulator, and compare"};
  Flags f;
  AddFlags(app, f);
  CLI11_PARSE(app, argc, argv);
  if (const std::string e = UsageError(f); !e.empty()) {
    std::cerr << "cluster_box: " << e << "\n";
    return 2;
  }
  std::filesystem::create_directories(f.out);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  if (f.scenario == "burst") return RunBurst(f, date);
  nlohmann::json report = {{"date", date}, {"runs", nlohmann::json::array()}};
  bool ok = true;
  std::cout << fmt::format(
      "{:<12} {:>4}  {:>9} {:>9}  {:>8} {:>8}  {:>8} {:>8}  {:>4} {:>4} {:>4} {:>5} {:>5}  {}\n",
      "policy", "seed", "att sim", "att box", "diff sim", "diff box", "mksp sim", "mksp box",
      "same", "diff", "ties", "after", "moves", "checks");
  const std::vector<uint64_t> seeds = *ParseSeeds(f.seeds);
  for (const std::string& policy : Split(f.policies)) {
    for (uint64_t seed : seeds) {
      nlohmann::json r;
      try {
        r = RunOne(f, policy, seed);
      } catch (const std::exception& e) {
        std::cerr << "cluster_box: " << policy << " seed " << seed << ": " << e.what() << "\n";
        return 1;
      }
      report["reading"] = r["reading"];
      PrintRow(r);
      ok = ok && r["ok"].get<bool>();
      report["runs"].push_back(std::move(r));
      std::ofstream(f.out + "/comparison.json") << report.dump(2) << "\n";
      std::ofstream(f.out + "/comparison.html") << tessera::e2e::ComparisonPage(report);
    }
  }
  std::cout << "wrote " << f.out << "/comparison.json and " << f.out << "/comparison.html\n";
  return ok ? 0 : 1;
}
