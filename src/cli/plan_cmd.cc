// `tessera plan`: which GPUs, and how many, for these services and their SLOs (plan/planner.h,
// docs/planning.md). Input: a services file or a built-in example; output: the table, --json,
// and with --out the HTML page; --explain SERVICE says why it got its slices.
#include <fmt/core.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/seed_flags.h"
#include "plan/planner.h"
#include "report/html.h"
#include "sim/embedded_apps.h"

namespace tessera::cli {
namespace {

struct PlanFlags {
  std::string services;  // file
  std::string example;
  std::string gpus;    // menu override
  std::string prices;  // file
  std::string solver = "auto";
  std::string out;
  std::string explain;
  double confidence = 0.9;
  uint64_t seed = 1;
  bool json = false;
};

Expected<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail("{}: cannot open it", path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Expected<plan::Example> Input(const PlanFlags& f, const sim::AppCatalog& catalog) {
  if (!f.example.empty()) return plan::BuiltInExample(f.example, catalog);
  auto text = ReadText(f.services);
  if (!text) return std::unexpected(text.error());
  auto input = plan::ParsePlanInput(*text, f.services, f.gpus);
  if (!input) return std::unexpected(input.error());
  return plan::Example{std::move(*input), catalog};
}

Status RunPlan(const PlanFlags& f) {
  if (f.services.empty() == f.example.empty()) {
    return Usage("give a services file or --example ({}), not both", plan::ExampleNames());
  }
  // A GPU model --gpus names that does not exist is a usage error, before any file is read.
  if (!f.gpus.empty()) {
    if (auto menu = plan::ParseMenuFlag(f.gpus); !menu) return Usage(menu.error());
  }
  auto catalog = sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  if (!catalog) return Failed(catalog.error());
  auto example = Input(f, *catalog);
  if (!example) {
    return f.example.empty() ? Failed(example.error()) : Usage(example.error());
  }
  if (!f.gpus.empty() && !f.example.empty()) {
    return Usage("--gpus goes with a services file; an example has its own menu");
  }
  if (!f.prices.empty()) {
    auto text = ReadText(f.prices);
    if (!text) return Failed(text.error());
    if (auto ok = plan::ApplyPrices(example->input, *text, f.prices); !ok) {
      return Failed(ok.error());
    }
  }
  plan::PlannerOptions options;
  options.plan.confidence = f.confidence;
  options.solver = f.solver;
  options.twin.seed = f.seed;
  options.profile_seed = f.seed;
  auto run = plan::RunPlanner(std::move(example->input), example->catalog, options);
  if (!run) return Failed(run.error());
  if (!f.explain.empty()) {
    auto text = plan::ExplainService(*run, f.explain);
    if (!text) return Usage(text.error());
    std::fputs(text->c_str(), stdout);
    return {};
  }
  if (!f.out.empty()) {
    auto written = report::WriteFiles(
        f.out, {{"plan.html", plan::PlanHtml(*run)}, {"plan.json", plan::PlanJson(*run).dump(2)}});
    if (!written) return Failed(written.error());
  }
  const std::string text = f.json ? plan::PlanJson(*run).dump(2) + "\n" : plan::PlanTable(*run);
  std::fputs(text.c_str(), stdout);
  return {};
}

}  // namespace

void AddPlan(CLI::App& app, Status* status) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Plan the cheapest GPUs (MIG layouts, MPS shares, replicas) that meet every "
      "service's SLO, beside whole GPUs per replica, checked on the simulator");
  sub->add_option("services", f->services, "Services file (YAML, docs/planning.md)");
  sub->add_option("--example", f->example, "A built-in input: " + plan::ExampleNames());
  sub->add_option("--gpus", f->gpus,
                  "GPU models to choose from, comma-separated (default: the "
                  "file's gpus:, else every catalogue model)");
  sub->add_option("--prices", f->prices,
                  "Prices per GPU-hour (YAML, e.g. data/plan/prices.yaml; default: count GPUs)");
  sub->add_option("--confidence", f->confidence,
                  "Chance each replica's counted rate is reached, 0.5..0.999 (default 0.9)")
      ->check(FiniteRange(0.5, 0.999));
  sub->add_option("--solver", f->solver, "auto (exact up to 200 services), exact or heuristic")
      ->check(CLI::IsMember({"auto", "exact", "heuristic"}));
  sub->add_option("--seed", f->seed, "Seed of the profiling and the twin's noise (default 1)")
      ->check(SeedCheck());
  sub->add_option("--explain", f->explain,
                  "Why SERVICE got its slices, and the SLO risk of each cheaper choice");
  sub->add_option("--out", f->out, "Write plan.html and plan.json to this folder");
  sub->add_flag("--json", f->json, "Print the plan as JSON");
  sub->callback([f, status] { *status = RunPlan(*f); });
}

}  // namespace tessera::cli
