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

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGTERM, KillTheBox);
  std::signal(SIGINT, KillTheBox);
  CLI::App app{"Run the thesis scenario on an emulated cluster and on the simulator, and compare"};
  std::string policies = "max,min,predictive,slo-aware", seeds = "1-3", faults, out = "box-out";
  std::string tessera = TESSERA_BIN, exporter = EXPORTER_BIN, slo = "low";
  int pods = 20;
  double time_scale = 10, timeout_s = 900;
  app.add_option("--policy", policies, "Policies, comma-separated");
  app.add_option("--seeds", seeds, "Seeds: N (1..N) or A-B");
  app.add_option("--pods", pods, "Pods of the scenario (20 or 40)")->check(CLI::IsMember({20, 40}));
  app.add_option("--slo", slo, "SLO level")->check(CLI::IsMember({"low", "high"}));
  app.add_option("--time-scale", time_scale, "Arrivals and pod lengths divided by this")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_option("--faults", faults,
                 "Faults during the arrivals, comma-separated: kill-leader, restart-redis, "
                 "cut-watches, delay-api");
  app.add_option("--timeout", timeout_s, "Seconds a run may take")->check(CLI::PositiveNumber);
  app.add_option("--out", out,
                 "Directory for comparison.json, comparison.html and each run's logs");
  app.add_option("--tessera", tessera, "The tessera binary");
  app.add_option("--exporter", exporter, "The metrics_file_exporter binary");
  CLI11_PARSE(app, argc, argv);

  const std::optional<std::vector<uint64_t>> seed_list = ParseSeeds(seeds);
  if (!seed_list) {
    std::cerr << "cluster_box: --seeds " << seeds << ": N or A-B expected\n";
    return 2;
  }
  const std::vector<std::string> fault_list = Split(faults);
  for (const std::string& f : fault_list) {
    if (f != "kill-leader" && f != "restart-redis" && f != "cut-watches" && f != "delay-api") {
      std::cerr << "cluster_box: --faults: unknown fault " << f << "\n";
      return 2;
    }
  }
  std::filesystem::create_directories(out);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  nlohmann::json report = {{"date", date}, {"runs", nlohmann::json::array()}};
  bool ok = true;
  std::cout << fmt::format(
      "{:<12} {:>4}  {:>9} {:>9}  {:>8} {:>8}  {:>8} {:>8}  {:>4} {:>4} {:>4} {:>5} {:>5}  {}\n",
      "policy", "seed", "att sim", "att box", "diff sim", "diff box", "mksp sim", "mksp box",
      "same", "diff", "ties", "after", "moves", "checks");
  for (const std::string& policy : Split(policies)) {
    for (uint64_t seed : *seed_list) {
      tessera::e2e::RunSpec spec{.policy = policy,
                                 .seed = seed,
                                 .pods = pods,
                                 .high_slo = slo == "high",
                                 .time_scale = time_scale,
                                 .tessera = tessera,
                                 .exporter = exporter,
                                 .dir = fmt::format("{}/{}-{}", out, policy, seed),
                                 .faults = fault_list,
                                 .timeout_s = timeout_s};
      nlohmann::json r;
      try {
        std::filesystem::remove_all(spec.dir);
        // The simulator first: the pods it never starts, the box need not wait for.
        const auto sim = tessera::e2e::RunSimulator(spec);
        for (const tessera::e2e::SimPod& p : sim) {
          if (!p.start_s) spec.never_started.insert(p.id);
        }
        const auto box = tessera::e2e::RunOnBox(spec);
        r = tessera::e2e::Compare(spec, box, sim);
      } catch (const std::exception& e) {
        std::cerr << "cluster_box: " << policy << " seed " << seed << ": " << e.what() << "\n";
        return 1;
      }
      report["reading"] = r["reading"];
      PrintRow(r);
      ok = ok && r["ok"].get<bool>();
      report["runs"].push_back(std::move(r));
      std::ofstream(out + "/comparison.json") << report.dump(2) << "\n";
      std::ofstream(out + "/comparison.html") << tessera::e2e::ComparisonPage(report);
    }
  }
  std::cout << "wrote " << out << "/comparison.json and " << out << "/comparison.html\n";
  return ok ? 0 : 1;
}
