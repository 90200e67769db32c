// tessera simulate: runs a named experiment on the scheduler core and prints a comparison
// table (or one JSON object with --json). Experiments are registered in sim/experiments.cc;
// this file knows none of them by name.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/policy_flags.h"
#include "cli/seed_flags.h"
#include "policy/registry.h"
#include "sim/experiment.h"

namespace tessera::cli {
namespace {

struct SimulateFlags {
  std::string experiment = std::string(sim::Experiments().front().name);
  std::vector<std::string> policy_args;  // each --policy as given (comma-separated policies)
  std::optional<uint64_t> seed;
  std::string seeds;  // "N" = seeds 1..N, or "A-B"; empty: the experiment's default
  sim::ExperimentArgs args;
  bool json = false;
  bool list_policies = false;
  bool list_experiments = false;
  std::vector<std::string> given;  // the flags on the command line, without their dashes
};

// Progress on stderr, only when a person is watching; "" ends the line.
void Progress(const std::string& line) {
  if (!isatty(2)) return;
  std::fprintf(stderr, "\r%-78s%s", line.c_str(), line.empty() ? "\n" : "");
  std::fflush(stderr);
}

// Any flag given that the experiment does not read is a usage error, not silently ignored.
Status CheckFlagsApply(const SimulateFlags& f, const sim::Experiment& e) {
  static const std::set<std::string> kRunFlags = {"policy", "seed", "seeds", "json"};
  for (const std::string& flag : f.given) {
    const bool read = std::find(e.reads.begin(), e.reads.end(), flag) != e.reads.end();
    if (flag == "experiment" || flag == "list-policies" || flag == "list-experiments" || read ||
        (e.runs_policies && kRunFlags.contains(flag))) {
      continue;
    }
    return Usage("--{} does not apply to --experiment {} (it reads: --{})", flag, e.name,
                 fmt::join(e.reads, ", --"));
  }
  return {};
}

// Every --policy once; each a registered policy with options it accepts (checked up front)
// that the experiment can run, unless the experiment names its own arms.
Status CheckPolicies(const std::vector<std::string>& policies, const sim::Experiment& e) {
  std::vector<std::string_view> predicting;
  for (const sim::Experiment& x : sim::Experiments()) {
    if (x.builds_predictor) predicting.push_back(x.name);
  }
  for (size_t i = 0; i < policies.size(); ++i) {
    const std::string& text = policies[i];
    for (size_t j = 0; j < i; ++j) {
      if (policies[j] == text) return Usage("--policy {} is given twice", text);
    }
    if (e.policies_are_arms) continue;
    auto spec = ParseRegisteredPolicy(text);
    if (!spec) return Usage(spec.error());
    if (!e.builds_predictor && policy::FindPolicy(spec->name)->needs_predictor) {
      return Usage(
          "--policy {}: needs a predictor, and --experiment {} builds none (only {} profile "
          "their cluster for one)",
          spec->name, e.name, fmt::join(predicting, " and "));
    }
  }
  return {};
}

std::string ExperimentList() {
  std::string out;
  for (const sim::Experiment& e : sim::Experiments()) {
    out += fmt::format("{:<16} {} (default seeds {}{}{})\n", e.name, e.summary, e.default_seeds,
                       e.reads.empty() ? "" : "; reads --", fmt::join(e.reads, ", --"));
  }
  return out;
}

Status RunSimulate(SimulateFlags f) {
  if (f.list_policies) {
    std::fputs(PolicyList(policy::Policies()).c_str(), stdout);
    return {};
  }
  if (f.list_experiments) {
    std::fputs(ExperimentList().c_str(), stdout);
    return {};
  }
  const sim::Experiment* e = sim::FindExperiment(f.experiment);
  if (e == nullptr) return Usage("--experiment {}: no such experiment", f.experiment);
  for (const std::string& arg : f.policy_args) {
    Expected<std::vector<std::string>> list = SplitPolicyList(arg);
    if (!list) return Usage(list.error());
    f.args.policies.insert(f.args.policies.end(), list->begin(), list->end());
  }
  if (Status ok = CheckFlagsApply(f, *e); !ok) return ok;
  auto seeds = f.seed ? Expected<std::vector<uint64_t>>(std::vector<uint64_t>{*f.seed})
                      : ParseSeedRange(f.seeds.empty() ? e->default_seeds : f.seeds);
  if (!seeds) return Usage(seeds.error());
  f.args.seeds = std::move(*seeds);
  if (Status ok = CheckPolicies(f.args.policies, *e); !ok) return ok;
  if (e->check) {
    if (auto ok = e->check(f.args); !ok) return Usage(ok.error());
  }
  f.args.progress = Progress;
  f.args.warn = [](const std::string& line) {
    Progress("");
    std::fprintf(stderr, "tessera simulate: warning: %s\n", line.c_str());
  };
  auto out = e->run(f.args, *e);
  Progress("");
  if (!out) return Failed(out.error());
  for (const std::string& path : out->written) std::fprintf(stderr, "wrote %s\n", path.c_str());
  if (f.json && !out->json.is_null()) {
    std::printf("%s\n", out->json.dump(2).c_str());
  } else {
    std::fputs(out->table.c_str(), stdout);
  }
  return {};
}

}  // namespace

// The experiments that read `flag`, for its help line.
std::string ReadBy(std::string_view flag) {
  std::vector<std::string_view> names;
  for (const sim::Experiment& e : sim::Experiments()) {
    if (std::find(e.reads.begin(), e.reads.end(), flag) != e.reads.end()) names.push_back(e.name);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string DefaultSeeds() {
  std::vector<std::string> parts;
  for (const sim::Experiment& e : sim::Experiments()) {
    if (e.runs_policies) parts.push_back(fmt::format("{} {}", e.name, e.default_seeds));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The flags that shape an experiment's world: its catalogue, load, cluster, data and reading.
void AddWorldOptions(CLI::App& sub_app, sim::ExperimentArgs& args) {
  CLI::App* sub = &sub_app;
  sub->add_option(
      "--apps", args.apps,
      "Application catalogue (default: built-in data/apps.yaml; " + ReadBy("apps") + ")");
  sub->add_option("--workloads", args.workloads,
                  "Workloads, arriving Poisson at this many per hour (" + ReadBy("workloads") +
                      "), at most 1,000,000 and what this machine's memory holds")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  sub->add_option("--cluster-nodes", args.cluster_nodes,
                  "Cluster size in nodes (" + ReadBy("cluster-nodes") +
                      "; packing and thesis-scale: of 8 GPUs; disaggregation: of 4 K80s with 32 "
                      "jobs a node, one scenario instead of 002's two), at most 10,000 (80,000 "
                      "GPUs) and what this machine's memory holds")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  sub->add_option("--unprofiled", args.unprofiled,
                  "Of the six engines, how many nobody profiled: measured on 1-2 configurations, "
                  "the collaborative filter completing the rest (" +
                      ReadBy("unprofiled") + ")")
      ->check(CLI::Range(0, 6))
      ->capture_default_str();
  sub->add_option("--data", args.data, "Data directory (" + ReadBy("data") + ")");
  sub->add_option("--trace", args.trace, "Pod list CSV (" + ReadBy("trace") + ")");
  sub->add_option("--nodes", args.nodes,
                  "Node list CSV (" + ReadBy("nodes") +
                      "; default: openb_node_list_gpu_node.csv beside the trace; at most 10,000 "
                      "nodes, 50,000 GPUs, 64 on one node)");
  sub->add_option(
         "--inflation", args.inflation,
         "Arrived GPU load to inflate the pods to, x capacity (" + ReadBy("inflation") + ")")
      ->check(FiniteRange(0.01, 10.0))
      ->capture_default_str();
  sub->add_option(
      "--reading", args.reading,
      "KEY=VALUE,...: the reading of its seed the world takes where the seed reads "
      "two ways (" +
          ReadBy("reading") +
          "; thesis: slo=capped|literal, base=lower|mean, interference=X|offline, "
          "quarters=ch6|roofline, queries=Q, time=K, mig=free|fixed, "
          "subquarter=fail|floor|linear, resnet_quarter=R, docs/simulator.md; "
          "overprovision: power=seed003|thesis, oom=fit|one; "
          "knots: load=heavy|even, priority=none|inference, batch=host|gpu; "
          "online-offline: cluster=t4|t4-a10, "
          "memory=resident|footprint, trainer_duty=D; "
          "disaggregation: scenario=simulation|prototype, world=colocation|network-only, "
          "goal=class|job, work=X, docs/results.md)");
}

void AddSimulate(CLI::App& app, Status* status) {
  auto flags = std::make_shared<SimulateFlags>();
  sim::ExperimentArgs& args = flags->args;
  CLI::App* sub = app.add_subcommand(
      "simulate", "Run a simulated experiment on the scheduler core and compare policies");
  std::vector<std::string> names;
  for (const sim::Experiment& e : sim::Experiments()) names.emplace_back(e.name);
  sub->add_option(
         "--experiment", flags->experiment,
         "Experiment (see --list-experiments): " + fmt::format("{}", fmt::join(names, ", ")))
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  sub->add_option("--policy", flags->policy_args,
                  "Policies to compare, comma-separated or repeated; NAME{json} gives options, "
                  "whose commas do not split (default: the experiment's set; see "
                  "--list-policies; an experiment with its own arms lists them in its errors)");
  CLI::Option* seed =
      sub->add_option("--seed", flags->seed, "One seed, 0..2^64-1")->check(SeedCheck());
  sub->add_option("--seeds", flags->seeds,
                  "Seeds: N (1..N) or A-B, at most 10,000 (default: " + DefaultSeeds() + ")")
      ->check(SeedsCheck())
      ->excludes(seed);
  AddWorldOptions(*sub, args);
  sub->add_option("--out", args.out,
                  "Where the experiment writes its report: a directory (report.json, "
                  "report.html and the like), or the one file an experiment writes (" +
                      ReadBy("out") + ")");
  sub->add_flag("--json", flags->json, "Print one JSON object instead of a table");
  sub->add_flag("--list-policies", flags->list_policies,
                "List the registered policies with their options and defaults, and exit");
  sub->add_flag("--list-experiments", flags->list_experiments,
                "List the experiments with their default seeds and the flags they read, and exit");
  sub->callback([flags, status, sub] {
    for (const CLI::Option* o : sub->get_options()) {
      if (o->count() > 0 && !o->get_lnames().empty()) flags->given.push_back(o->get_lnames()[0]);
    }
    flags->args.cluster_nodes_given = sub->get_option("--cluster-nodes")->count() > 0;
    *status = RunSimulate(*flags);
  });
}

}  // namespace tessera::cli
