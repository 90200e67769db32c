// tessera simulate: runs a named experiment on the scheduler core and prints a comparison
// table (or one JSON object with --json). Experiments live in src/sim/.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/policy_flags.h"
#include "policy/registry.h"
#include "report/disaggregation_report.h"
#include "report/knots_report.h"
#include "report/online_offline_report.h"
#include "report/openb_report.h"
#include "report/overprovision_report.h"
#include "report/thesis_report.h"
#include "sim/apps.h"
#include "sim/calibrate.h"
#include "sim/disaggregation.h"
#include "sim/embedded_apps.h"
#include "sim/knots.h"
#include "sim/online_offline.h"
#include "sim/openb.h"
#include "sim/overprovision.h"
#include "sim/packing.h"
#include "sim/replay.h"
#include "sim/thesis.h"

namespace tessera::cli {
namespace {

struct SimulateFlags {
  std::string experiment = "thesis";
  std::vector<std::string> policy_args;  // each --policy as given (comma-separated policies)
  std::vector<std::string> policies;     // split from policy_args; empty: the experiment's set
  std::optional<uint64_t> seed;
  std::string seeds;       // "N" = seeds 1..N, or "A-B"; empty: the experiment's default
  int cluster_nodes = 64;  // packing, thesis-scale
  int workloads = 5000;    // thesis-scale: Poisson arrivals per hour, and how many
  std::string apps;        // thesis: application catalogue; empty: the built-in data/apps.yaml
  std::string data;        // calibrate: the MIGProfiler directory
  std::string trace;       // openb-alloc: the pod list CSV
  std::string nodes_path;  // openb-alloc: the node list CSV (default: beside the trace)
  double inflation = 1.3;  // openb-alloc
  std::string out;         // thesis, openb-alloc: report directory; calibrate: catalogue file
  bool json = false;
  bool list_policies = false;
  std::vector<std::string> given;  // the flags on the command line, without their dashes
};

// "10" -> 1..10; "42-51" -> 42..51.
Expected<std::vector<uint64_t>> ParseSeeds(const SimulateFlags& f) {
  if (f.seed) return std::vector<uint64_t>{*f.seed};
  const std::string text = !f.seeds.empty()                  ? f.seeds
                           : f.experiment == "thesis"        ? "10"
                           : f.experiment == "thesis-scale"  ? "1"
                           : f.experiment == "openb-alloc"   ? "42-42"
                           : f.experiment == "overprovision" ? "10"
                           : f.experiment == "knots"         ? "10"
                                                             : "3";
  return ParseSeedRange(text);
}

// Progress on stderr, only when a person is watching.
void Progress(const std::string& line, bool done) {
  if (!isatty(2)) return;
  std::fprintf(stderr, "\r%-78s%s", line.c_str(), done ? "\n" : "");
  std::fflush(stderr);
}

std::vector<std::string> RegisteredOf(const std::vector<std::string>& wanted) {
  std::vector<std::string> out, missing;
  for (const std::string& name : wanted) {
    bool known = false;
    for (const policy::PolicyInfo& p : policy::Policies()) known |= p.name == name;
    (known ? out : missing).push_back(name);
  }
  for (const std::string& m : missing) {
    std::fprintf(stderr, "tessera simulate: policy %s is not in this build; skipped\n", m.c_str());
  }
  return out;
}

// The packing experiments' default set: every registered policy that needs no predictor
// (their pods name no application, so there is nothing to predict from) and allocates GPU
// compute (what they measure; the memory-sharing policies reserve none).
std::vector<std::string> PackingPolicies() {
  std::vector<std::string> out;
  for (const policy::PolicyInfo& p : policy::Policies()) {
    if (!p.needs_predictor && p.allocates_compute) out.push_back(p.name);
  }
  return out;
}

Expected<sim::AppCatalog> CatalogOf(const SimulateFlags& f) {
  return f.apps.empty()
             ? sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml")
             : sim::LoadAppCatalog(f.apps);
}

// Fits the MIGProfiler applications, reports how well a roofline alone matches them, and
// writes the catalogue (the current one with those applications replaced or added) to --out.
Status RunCalibration(const SimulateFlags& f) {
  Expected<sim::AppCatalog> catalog = CatalogOf(f);
  if (!catalog) return Failed(catalog.error());
  if (f.data.empty()) {
    return Usage("--experiment calibrate needs --data DIR");
  }
  auto report = sim::CalibrateMigProfiler(f.data, catalog->reference_gpu);
  if (!report) return Failed(report.error());
  std::vector<double> errors;
  for (const auto& [app, e] : report->roofline_error) errors.push_back(e);
  std::sort(errors.begin(), errors.end());
  const auto over = std::count_if(errors.begin(), errors.end(), [](double e) { return e > 0.05; });
  std::printf("calibrated %zu applications from %d measurements (%s)\n", errors.size(),
              report->measurements, f.data.c_str());
  std::printf(
      "roofline alone, max relative error per application: median %.1f%%, worst %.1f%%, "
      "%ld of %zu above 5%% (the measured points themselves override it)\n",
      100 * errors[errors.size() / 2], 100 * errors.back(), static_cast<long>(over), errors.size());
  for (sim::AppSpec& app : report->catalog.apps) {
    auto it = std::find_if(catalog->apps.begin(), catalog->apps.end(),
                           [&](const sim::AppSpec& a) { return a.key == app.key; });
    if (it != catalog->apps.end()) {
      *it = std::move(app);
    } else {
      catalog->apps.push_back(std::move(app));
    }
  }
  if (!f.out.empty()) {
    if (auto ok = sim::SaveAppCatalog(*catalog, f.out); !ok) return Failed(ok.error());
    std::printf("wrote %zu applications to %s\n", catalog->apps.size(), f.out.c_str());
  }
  return {};
}

Status RunThesisExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  Expected<sim::AppCatalog> catalog = CatalogOf(f);
  if (!catalog) return Failed(catalog.error());
  const std::vector<std::string> policies =
      f.policies.empty()
          ? RegisteredOf({"slo-aware", "predictive", "min", "max", "round-robin", "whole-gpu"})
          : f.policies;
  // The thesis's four, then two where 3 of the 6 engines were never profiled (issue #14).
  std::vector<sim::ThesisScenario> scenarios = {{20, false}, {20, true},        {40, false},
                                                {40, true},  {20, false, 0, 3}, {20, true, 0, 3}};
  if (f.experiment == "thesis-scale") {
    scenarios = {{f.workloads, false, f.cluster_nodes}, {f.workloads, true, f.cluster_nodes}};
  }
  std::vector<sim::ThesisRun> runs;
  const size_t total = policies.size() * scenarios.size() * seeds.size();
  for (const sim::ThesisScenario& sc : scenarios) {
    for (const std::string& name : policies) {
      for (uint64_t seed : seeds) {
        auto run = sim::RunThesis(name, sc, seed, *catalog);
        if (!run) {
          Progress("", true);
          return Failed(run.error());
        }
        if (run->pods > 0 && run->never_placed == run->pods) {
          Progress("", true);
          std::fprintf(
              stderr,
              "tessera simulate: warning: %s placed none of the %d pods of %s (seed %llu); "
              "its time and energy figures describe an idle cluster\n",
              name.c_str(), run->pods, sc.name().c_str(), static_cast<unsigned long long>(seed));
        }
        runs.push_back(std::move(*run));
        Progress(fmt::format("{}: {}/{} runs ({} {})", f.experiment, runs.size(), total, name,
                             sc.name()),
                 false);
      }
    }
  }
  Progress("", true);
  if (!f.out.empty()) {
    auto written = report::WriteThesisReport(f.out, f.experiment, seeds.size(), runs);
    if (!written) return Failed(written.error());
    for (const std::string& path : *written) std::fprintf(stderr, "wrote %s\n", path.c_str());
  }
  if (f.json) {
    std::printf("%s\n", report::ThesisJson(f.experiment, seeds.size(), runs).dump(2).c_str());
    return {};
  }
  const std::vector<sim::ThesisRun> means = report::ThesisMeans(runs);
  if (f.experiment == "thesis-scale") {
    std::printf(
        "experiment thesis-scale: %d nodes x 8 GPUs (A30, A100, H100, V100), %d workloads "
        "arriving Poisson at %d/hour; means over %zu seeds\n\n",
        f.cluster_nodes, f.workloads, f.workloads, seeds.size());
  } else {
    std::printf(
        "experiment thesis (seed 000, Ch. 9): V100 node + A30 node + CPU node, pods in "
        "batches of 8 over ~15 min; means over %zu seeds\n\n",
        seeds.size());
  }
  // feasible: pods per run whose SLO some configuration meets (alone, noise aside); attain%f:
  // attainment over those.
  // The policy column as wide as the longest name with its options (12 at the least).
  size_t width = 12;
  for (const sim::ThesisRun& m : means) width = std::max(width, m.policy.size());
  std::printf("%s\n", fmt::format("{:<{}} {:<30} {:>7} {:>8} {:>8} {:>5} {:>5} {:>11} {:>9} "
                                  "{:>9} {:>6} {:>7} {:>9}",
                                  "policy", width, "scenario", "attain%", "feasible", "attain%f",
                                  "viol", "fail", "|q-slo|/slo", "makespan", "pending", "util%",
                                  "power W", "energy kJ")
                          .c_str());
  for (const sim::ThesisRun& m : means) {
    std::printf("%s\n",
                fmt::format("{:<{}} {:<30} {:>7.1f} {:>8.1f} {:>8.1f} {:>5.1f} {:>5.1f} {:>11.3f} "
                            "{:>8.0f}s {:>8.1f}s {:>6.1f} {:>7.1f} {:>9.1f}",
                            m.policy, width, m.scenario.name(), 100 * m.slo_attainment,
                            m.slo_feasible, 100 * m.slo_attainment_feasible(), m.slo_violations,
                            m.failures, m.qps_slo_abs_diff_mean, m.makespan_s, m.pending_s_mean,
                            100 * m.gpu_util_mean, m.power_w_mean, m.energy_j / 1000)
                    .c_str());
  }
  std::printf("\nall runs pooled (Ch. 9.3):\n%s\n",
              fmt::format("{:<{}} {:>5} {:>11} {:>10} {:>8}", "policy", width, "runs",
                          "|q-slo|/slo", "energy MJ", "attain%f")
                  .c_str());
  for (const report::ThesisAggregate& a : report::AggregateByPolicy(runs)) {
    std::printf("%s\n", fmt::format("{:<{}} {:>5} {:>11.3f} {:>10.2f} {:>8.1f}", a.policy, width,
                                    a.runs, a.qps_slo_abs_diff_mean, a.energy_j / 1e6,
                                    100 * a.slo_attainment_feasible())
                            .c_str());
  }
  return {};
}

Status RunPackingExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  const std::vector<std::string> policies = f.policies.empty() ? PackingPolicies() : f.policies;
  std::vector<sim::PackingRow> all;
  for (size_t i = 0; i < policies.size(); ++i) {
    Progress(fmt::format("packing: policy {}/{} ({})", i + 1, policies.size(), policies[i]), false);
    auto part = sim::RunPacking({policies[i]}, seeds, f.cluster_nodes);
    if (!part) {
      Progress("", true);
      return Failed(part.error());
    }
    all.insert(all.end(), part->begin(), part->end());
  }
  Progress("", true);
  const std::vector<sim::PackingRow>* rows = &all;
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
    return {};
  }
  std::printf(
      "experiment packing: %d nodes, workloads asking for 130%% of GPU capacity, "
      "arrive-only\n\n",
      f.cluster_nodes);
  size_t width = 14;  // as wide as the longest policy with its options
  for (const sim::PackingRow& r : *rows) width = std::max(width, r.policy.size());
  std::printf("%s\n",
              fmt::format("{:<{}} {:>6} {:>9} {:>7} {:>18} {:>12} {:>8}", "policy", width, "seed",
                          "workloads", "failed", "alloc@1st-fail %", "alloc end %", "wall s")
                  .c_str());
  for (const sim::PackingRow& r : *rows) {
    std::printf("%s\n", fmt::format("{:<{}} {:>6} {:>9} {:>7} {:>18.2f} {:>12.2f} {:>8.3f}",
                                    r.policy, width, r.seed, r.workloads, r.failed,
                                    r.alloc_at_first_failure_pct, r.alloc_final_pct, r.wall_s)
                            .c_str());
  }
  return {};
}

nlohmann::json AtBuckets(const std::array<double, sim::kOpenbMaxPct + 1>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (int b : {80, 90, 100, 110, 120, 130}) {
    j[std::to_string(b)] = std::isnan(v[b]) ? nlohmann::json(nullptr) : nlohmann::json(v[b]);
  }
  return j;
}

Status RunOpenbExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  if (f.trace.empty()) {
    return Usage("--experiment openb-alloc needs --trace POD_CSV");
  }
  const std::string nodes =
      !f.nodes_path.empty()
          ? f.nodes_path
          : (std::filesystem::path(f.trace).parent_path() / "openb_node_list_gpu_node.csv")
                .string();
  // A path that is not a readable file is named with its flag (a node list read from beside
  // the trace is named as such).
  for (const auto& [flag, path] :
       {std::pair<std::string, std::string>{"--trace", f.trace},
        {f.nodes_path.empty() ? "the node list beside --trace" : "--nodes", nodes}}) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Failed("{} {}: {}", flag, path,
                    std::filesystem::exists(path, ec) ? "is not a file" : "does not exist");
    }
  }
  auto input = sim::LoadOpenb(f.trace, nodes);
  if (!input) return Failed(input.error());
  const std::vector<std::string> policies = f.policies.empty() ? PackingPolicies() : f.policies;
  std::vector<sim::OpenbRun> runs;
  const size_t total = policies.size() * seeds.size();
  for (const std::string& name : policies) {
    for (uint64_t seed : seeds) {
      Progress(
          fmt::format("openb-alloc: {}/{} replays ({} seed {})", runs.size(), total, name, seed),
          false);
      auto run = sim::RunOpenb(*input, name, seed, f.inflation);
      if (!run) {
        Progress("", true);
        return Failed(run.error());
      }
      runs.push_back(std::move(*run));
    }
  }
  Progress("", true);
  const std::vector<sim::OpenbSummary> summaries = sim::SummarizeOpenb(runs);
  if (!f.out.empty()) {
    auto written = report::WriteOpenbReport(f.out, input->trace_stem, runs);
    if (!written) return Failed(written.error());
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
    return {};
  }
  std::printf(
      "experiment openb-alloc: %s, %d GPUs, inflated to %.0f%% of GPU capacity, %zu seed(s)\n\n",
      input->trace_stem.c_str(), input->total_gpus, 100 * f.inflation, seeds.size());
  // A name column as wide as the longest policy (with its options); a bucket that no arrival
  // reached (a cluster so small that one pod moves the arrived load past it) prints "-".
  size_t width = 16;
  for (const sim::OpenbSummary& s : summaries) width = std::max(width, s.policy.size());
  std::printf("%s\n", fmt::format("{:<{}} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}",
                                  "policy", width, "a@80", "a@90", "a@100", "a@110", "a@120",
                                  "a@130", "frag@130", "failed", "wall s")
                          .c_str());
  auto cell = [](double v, int w) {
    return std::isnan(v) ? fmt::format("{:>{}}", "-", w) : fmt::format("{:>{}.2f}", v, w);
  };
  bool gaps = false;
  for (const sim::OpenbSummary& s : summaries) {
    for (int b : {80, 90, 100, 110, 120, 130}) gaps |= std::isnan(s.alloc_pct[b]);
    std::printf("%s\n", fmt::format("{:<{}} {} {} {} {} {} {} {} {:>9.1f} {:>8.3f}", s.policy,
                                    width, cell(s.alloc_pct[80], 8), cell(s.alloc_pct[90], 8),
                                    cell(s.alloc_pct[100], 8), cell(s.alloc_pct[110], 8),
                                    cell(s.alloc_pct[120], 8), cell(s.alloc_pct[130], 8),
                                    cell(s.frag_pct[130], 9), s.failed_pods, s.wall_s)
                            .c_str());
  }
  if (gaps) {
    std::vector<double> asked;  // GPU milli each pod of the trace asks for
    for (const model::Workload& w : input->pods) asked.push_back(sim::RequestedGpuMilli(w));
    std::nth_element(asked.begin(), asked.begin() + asked.size() / 2, asked.end());
    const double median = asked.empty() ? 0 : asked[asked.size() / 2];
    std::printf(
        "\n-: no arrival brought the arrived load to that level (or within 1%% of it): with %d "
        "GPU(s) a median pod moves it by %.0f%%; use a larger node list for the curve\n",
        input->total_gpus, median / (10.0 * input->total_gpus));
  }
  return {};
}

// Every --policy names a registered policy with options it accepts (checked up front), once,
// and one the experiment can run.
Status CheckPolicies(const SimulateFlags& f) {
  // Only the thesis experiments profile a cluster for a predictor; the packing ones' pods name
  // no application, and the seed systems' experiments run their own policies' inputs.
  const bool predicts = f.experiment == "thesis" || f.experiment == "thesis-scale";
  for (size_t i = 0; i < f.policies.size(); ++i) {
    const std::string& text = f.policies[i];
    auto spec = ParseRegisteredPolicy(text);
    if (!spec) return Usage(spec.error());
    for (size_t j = 0; j < i; ++j) {
      if (f.policies[j] == text) return Usage("--policy {} is given twice", text);
    }
    if (!predicts && policy::FindPolicy(spec->name)->needs_predictor) {
      return Usage(
          "--policy {}: needs a predictor, and --experiment {} builds none (only thesis and "
          "thesis-scale profile their cluster for one)",
          spec->name, f.experiment);
    }
  }
  return {};
}

// The memory a packing or thesis-scale run will need, from its size flags, against the
// machine's: a run that cannot fit is refused before it allocates (it would grow for minutes
// with no output, then be killed). Costs measured on Release builds (docs/benchmarks.md,
// "Sizes"): about 23 KB per node of 8 GPUs with its workloads (packing 500 → 2,000 nodes: 22 →
// 56 MB) and 3.1 KB per thesis-scale workload (5,000 → 20,000: 26 → 71 MB), doubled for margin.
Status CheckRunFits(const SimulateFlags& f) {
  if (f.experiment != "packing" && f.experiment != "thesis-scale") return {};
  constexpr double kBase = 32e6, kPerNode = 2 * 23e3, kPerWorkload = 2 * 3.1e3;
  const double need = kBase + kPerNode * f.cluster_nodes +
                      (f.experiment == "thesis-scale" ? kPerWorkload * f.workloads : 0);
  const double have =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (have > 0 && need > 0.8 * have) {
    return Usage(
        "--cluster-nodes {} {}: the run would need about {:.1f} GB of memory, more than 80% of "
        "this machine's {:.1f} GB; ask for fewer",
        f.cluster_nodes,
        f.experiment == "thesis-scale" ? fmt::format("--workloads {}", f.workloads) : "",
        need / 1e9, have / 1e9);
  }
  return {};
}

// The flags each experiment reads beyond --experiment, --policy, --seed(s) and --json; any
// other flag given is a usage error rather than silently ignored.
Status CheckFlagsApply(const SimulateFlags& f) {
  struct Reads {
    std::set<std::string> own;  // named in the error
    bool runs_policies = true;  // --policy, --seed(s), --json too (calibrate runs none)
  };
  static const std::map<std::string, Reads> kReads = {
      {"thesis", {{"apps", "out"}}},
      {"thesis-scale", {{"apps", "out", "workloads", "cluster-nodes"}}},
      {"packing", {{"cluster-nodes"}}},
      {"openb-alloc", {{"trace", "nodes", "inflation", "out"}}},
      {"online-offline", {{"apps", "out"}}},
      {"overprovision", {{"apps", "out"}}},
      {"knots", {{"apps", "out"}}},
      {"disaggregation", {{"apps", "out"}}},
      {"calibrate", {{"apps", "data", "out"}, false}},
  };
  static const std::set<std::string> kRunFlags = {"policy", "seed", "seeds", "json"};
  auto reads = kReads.find(f.experiment);
  if (reads == kReads.end()) return {};
  for (const std::string& flag : f.given) {
    if (flag == "experiment" || flag == "list-policies" || reads->second.own.contains(flag) ||
        (reads->second.runs_policies && kRunFlags.contains(flag))) {
      continue;
    }
    return Usage("--{} does not apply to --experiment {} (it reads: --{})", flag, f.experiment,
                 fmt::join(reads->second.own, ", --"));
  }
  return {};
}

// The mean (sim::MeanOf) of `run_one(seed)` over every seed, or the first error; progress on
// stderr as "<label> seed N". Shared by the experiments that average runs per configuration.
template <typename Run, typename RunOne>
Expected<Run> MeanOverSeeds(const std::string& label, const std::vector<uint64_t>& seeds,
                            const RunOne& run_one) {
  std::vector<Run> runs;
  for (uint64_t seed : seeds) {
    Progress(fmt::format("{} seed {}", label, seed), false);
    Expected<Run> run = run_one(seed);
    if (!run) {
      Progress("", true);
      return std::unexpected(run.error());
    }
    runs.push_back(std::move(*run));
  }
  return sim::MeanOf(runs);
}

// online-offline (issue #17): its policies are the experiment's variants (online-only, ts,
// pb-ts, muxflow and its ablations), not registry names.
Status RunOnlineOfflineExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  Expected<sim::AppCatalog> catalog = CatalogOf(f);
  if (!catalog) return Failed(catalog.error());
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    for (std::string_view p : sim::OnlineOfflinePolicies()) policies.emplace_back(p);
  }
  const sim::OnlineOfflineScenario scenario;
  std::vector<sim::OnlineOfflineRun> means;
  for (const std::string& policy : policies) {
    Expected<sim::OnlineOfflineRun> mean = MeanOverSeeds<sim::OnlineOfflineRun>(
        "online-offline: " + policy, seeds,
        [&](uint64_t seed) { return sim::RunOnlineOffline(policy, scenario, seed, *catalog); });
    if (!mean) {
      return mean.error().message.starts_with("experiment online-offline: unknown policy")
                 ? Usage(mean.error())
                 : Failed(mean.error());
    }
    means.push_back(std::move(*mean));
  }
  Progress("", true);
  if (!f.out.empty()) {
    auto written = report::WriteOnlineOfflineReport(f.out, seeds.size(), means);
    if (!written) return Failed(written.error());
  }
  if (f.json) {
    std::printf("%s\n", report::OnlineOfflineJson(seeds.size(), means).dump(2).c_str());
    return {};
  }
  std::printf(
      "experiment online-offline: %d x %d %s, 24 h, 3 online services on every GPU, %d offline "
      "training jobs (Philly-like), %zu seed(s)\n\n",
      scenario.nodes, scenario.gpus_per_node, scenario.gpu.c_str(), scenario.offline_jobs,
      seeds.size());
  std::printf("%-12s %10s %9s %8s %8s %10s %9s %9s %10s\n", "policy", "lat mean", "lat p99",
              "GPU %", "SM %", "JCT s", "jobs", "evicted", "executions");
  for (const sim::OnlineOfflineRun& m : means) {
    std::printf("%-12s %8.2fms %7.2fms %8.1f %8.1f %10.0f %9.1f %9.1f %10.1f\n", m.policy.c_str(),
                m.online_latency_mean_ms, m.online_latency_p99_ms, 100 * m.gpu_util_mean,
                100 * m.sm_activity_mean, m.offline_jct_mean_s, m.offline_jobs_done, m.evictions,
                m.executions);
  }
  return {};
}

// overprovision (issue #16; seed 003 §6): both mixes at every over-provisioning percentage.
Status RunOverprovisionExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  Expected<sim::AppCatalog> catalog = CatalogOf(f);
  if (!catalog) return Failed(catalog.error());
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    for (std::string_view p : sim::OverprovisionPolicies()) policies.emplace_back(p);
  }
  const sim::OverprovisionScenario scenario;
  std::vector<sim::OverprovisionRun> means;
  for (std::string_view mix : sim::OverprovisionMixes()) {
    for (const std::string& policy : policies) {
      for (int pct : scenario.overprovision_pct) {
        Expected<sim::OverprovisionRun> mean = MeanOverSeeds<sim::OverprovisionRun>(
            fmt::format("overprovision: {} {} {}%", mix, policy, pct), seeds, [&](uint64_t seed) {
              return sim::RunOverprovision(policy, mix, pct, scenario, seed, *catalog);
            });
        if (!mean) return Failed(mean.error());
        means.push_back(std::move(*mean));
      }
    }
  }
  Progress("", true);
  if (!f.out.empty()) {
    auto written = report::WriteOverprovisionReport(f.out, seeds.size(), means);
    if (!written) return Failed(written.error());
  }
  if (f.json) {
    std::printf("%s\n", report::OverprovisionJson(seeds.size(), means).dump(2).c_str());
    return {};
  }
  std::printf(
      "experiment overprovision: one %s, MLPerf SingleStream engines arriving every %.0f-%.0f s, "
      "%zu seed(s)\n\n",
      scenario.gpu.c_str(), scenario.arrival_min_s, scenario.arrival_max_s, seeds.size());
  std::printf("%-14s %-16s %5s %10s %10s %10s %7s %8s %10s %6s\n", "mix", "policy", "over%",
              "pending s", "e2e p99 s", "mem MiB", "util %", "power W", "energy kJ", "OOM");
  for (const sim::OverprovisionRun& m : means) {
    std::printf("%-14s %-16s %5d %10.1f %10.1f %10.0f %7.1f %8.1f %10.1f %6.1f\n", m.mix.c_str(),
                m.policy.c_str(), m.overprovision_pct, m.pending_s_mean, m.e2e_p99_s,
                m.gpu_mem_used_mean, 100 * m.gpu_util_mean, m.power_w_mean, m.energy_j / 1000,
                m.oom_kills);
  }
  return {};
}

// knots (issue #16; seed 004): batch jobs and inference pods on 10 GPU nodes.
Status RunKnotsExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  Expected<sim::AppCatalog> catalog = CatalogOf(f);
  if (!catalog) return Failed(catalog.error());
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    for (std::string_view p : sim::KnotsPolicies()) policies.emplace_back(p);
  }
  const sim::KnotsScenario scenario;
  std::vector<sim::KnotsRun> means;
  for (const std::string& policy : policies) {
    Expected<sim::KnotsRun> mean = MeanOverSeeds<sim::KnotsRun>(
        "knots: " + policy, seeds,
        [&](uint64_t seed) { return sim::RunKnots(policy, scenario, seed, *catalog); });
    if (!mean) return Failed(mean.error());
    means.push_back(std::move(*mean));
  }
  Progress("", true);
  if (!f.out.empty()) {
    auto written = report::WriteKnotsReport(f.out, seeds.size(), means);
    if (!written) return Failed(written.error());
  }
  if (f.json) {
    std::printf("%s\n", report::KnotsJson(seeds.size(), means).dump(2).c_str());
    return {};
  }
  std::printf(
      "experiment knots: %d x %s, %d batch jobs and %d inference pods over %.0f s, %zu seed(s)\n\n",
      scenario.nodes, scenario.gpu.c_str(), scenario.batch_jobs, scenario.inference_pods,
      scenario.submit_window_s, seeds.size());
  std::printf("%-14s %8s %10s %10s %8s %8s %10s\n", "policy", "SM %", "batch JCT", "energy kJ",
              "QoS viol", "OOM", "makespan");
  for (const sim::KnotsRun& m : means) {
    std::printf("%-14s %8.1f %9.0fs %10.1f %8.1f %8.1f %9.0fs\n", m.policy.c_str(),
                100 * m.gpu_util_mean, m.jct_s_mean, m.energy_j / 1000, m.qos_violations,
                m.oom_kills, m.makespan_s);
  }
  return {};
}

// disaggregation (issue #18; seed 002): Rodinia-like jobs on K80 nodes, GPUs local or remote.
Status RunDisaggregationExperiment(const SimulateFlags& f, const std::vector<uint64_t>& seeds) {
  Expected<sim::AppCatalog> catalog = CatalogOf(f);
  if (!catalog) return Failed(catalog.error());
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    for (std::string_view p : sim::DisaggregationPolicies()) policies.emplace_back(p);
  }
  std::vector<sim::DisaggregationRun> means;
  for (const sim::DisaggregationScenario& scenario : sim::DisaggregationScenarios()) {
    for (const std::string& policy : policies) {
      Expected<sim::DisaggregationRun> mean = MeanOverSeeds<sim::DisaggregationRun>(
          "disaggregation " + scenario.Label() + ": " + policy, seeds,
          [&](uint64_t seed) { return sim::RunDisaggregation(policy, scenario, seed, *catalog); });
      if (!mean) return Failed(mean.error());
      means.push_back(std::move(*mean));
    }
  }
  Progress("", true);
  if (!f.out.empty()) {
    auto written = report::WriteDisaggregationReport(f.out, seeds.size(), means);
    if (!written) return Failed(written.error());
  }
  if (f.json) {
    std::printf("%s\n", report::DisaggregationJson(seeds.size(), means).dump(2).c_str());
    return {};
  }
  std::printf(
      "experiment disaggregation: K80 nodes, half their CPUs held by a warm-up, Rodinia-like "
      "jobs at 16/s, %zu seed(s)\n\n",
      seeds.size());
  std::printf("%-18s %-34s %10s %8s %8s %10s %8s\n", "scenario", "policy", "makespan", "QoS viol",
              "done", "pending s", "remote");
  for (const sim::DisaggregationRun& m : means) {
    std::printf("%-18s %-34s %9.0fs %8.1f %8.0f %10.1f %8.1f\n", m.scenario.c_str(),
                m.policy.c_str(), m.makespan_s, m.qos_violations, m.jobs_done, m.pending_s_mean,
                m.remote_jobs);
  }
  return {};
}

Status RunSimulate(SimulateFlags f) {
  for (const std::string& arg : f.policy_args) {
    Expected<std::vector<std::string>> list = SplitPolicyList(arg);
    if (!list) return Usage(list.error());
    f.policies.insert(f.policies.end(), list->begin(), list->end());
  }
  if (f.list_policies) {
    std::fputs(PolicyList(policy::Policies()).c_str(), stdout);
    return {};
  }
  if (Status ok = CheckFlagsApply(f); !ok) return ok;
  if (Status ok = CheckRunFits(f); !ok) return ok;
  auto seeds = ParseSeeds(f);
  if (!seeds) return Usage(seeds.error());
  if (f.experiment == "online-offline") return RunOnlineOfflineExperiment(f, *seeds);
  if (Status ok = CheckPolicies(f); !ok) return ok;
  if (f.experiment == "calibrate") return RunCalibration(f);
  if (f.experiment == "thesis" || f.experiment == "thesis-scale") {
    return RunThesisExperiment(f, *seeds);
  }
  if (f.experiment == "openb-alloc") return RunOpenbExperiment(f, *seeds);
  if (f.experiment == "overprovision") return RunOverprovisionExperiment(f, *seeds);
  if (f.experiment == "knots") return RunKnotsExperiment(f, *seeds);
  if (f.experiment == "disaggregation") return RunDisaggregationExperiment(f, *seeds);
  return RunPackingExperiment(f, *seeds);
}

}  // namespace

void AddSimulate(CLI::App& app, Status* status) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Run a simulated experiment on the scheduler core and compare policies");
  sub->add_option("--experiment", flags->experiment, "Experiment preset")
      ->check(CLI::IsMember({"thesis", "thesis-scale", "packing", "openb-alloc", "online-offline",
                             "overprovision", "knots", "disaggregation", "calibrate"}))
      ->capture_default_str();
  sub->add_option("--policy", flags->policy_args,
                  "Policies to compare, comma-separated or repeated; NAME{json} gives options, "
                  "whose commas do not split (default: the experiment's set; see "
                  "--list-policies; online-offline takes online-only, ts, pb-ts, muxflow, "
                  "muxflow-S, muxflow-M, muxflow-S-M, each with muxflow options)");
  CLI::Option* seed =
      sub->add_option("--seed", flags->seed, "One seed, 0..2^64-1")->check(SeedCheck());
  sub->add_option("--seeds", flags->seeds,
                  "Seeds: N (1..N) or A-B, at most 10,000 (default: thesis 10, packing 3, "
                  "openb-alloc seed 42 only, online-offline 3, overprovision and knots 10, "
                  "disaggregation 3)")
      ->check(SeedsCheck())
      ->excludes(seed);
  sub->add_option(
      "--apps", flags->apps,
      "Application catalogue (default: built-in data/apps.yaml; overprovision, knots and "
      "disaggregation read its `sharing` list, online-offline its `training` list)");
  sub->add_option("--workloads", flags->workloads,
                  "Workloads, arriving Poisson at this many per hour (thesis-scale), at most "
                  "1,000,000 and what this machine's memory holds")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--cluster-nodes", flags->cluster_nodes,
                  "Cluster size in nodes of 8 GPUs (packing, thesis-scale), at most 10,000 (80,000 "
                  "GPUs) and what this machine's memory holds")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  sub->add_option("--data", flags->data, "MIGProfiler directory (calibrate)");
  sub->add_option("--trace", flags->trace, "Pod list CSV (openb-alloc)");
  sub->add_option("--nodes", flags->nodes_path,
                  "Node list CSV (openb-alloc; default: openb_node_list_gpu_node.csv beside "
                  "the trace; at most 10,000 nodes, 50,000 GPUs, 64 on one node)");
  sub->add_option("--inflation", flags->inflation,
                  "Arrived GPU load to inflate the pods to, x capacity (openb-alloc)")
      ->check(FiniteRange(0.01, 10.0))
      ->capture_default_str();
  sub->add_option("--out", flags->out,
                  "thesis, thesis-scale: directory for report.json, workloads.csv and "
                  "report.html; openb-alloc: directory for curves (CSV) and the plot (HTML/SVG); "
                  "online-offline, overprovision, knots, disaggregation: directory for report.json "
                  "and report.html; "
                  "calibrate: the catalogue file to write");
  sub->add_flag("--json", flags->json, "Print one JSON object instead of a table");
  sub->add_flag("--list-policies", flags->list_policies,
                "List the registered policies with their options and defaults, and exit");
  sub->callback([flags, status, sub] {
    for (const CLI::Option* o : sub->get_options()) {
      if (o->count() > 0 && !o->get_lnames().empty()) flags->given.push_back(o->get_lnames()[0]);
    }
    *status = RunSimulate(*flags);
  });
}

}  // namespace tessera::cli
