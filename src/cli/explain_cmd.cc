// `tessera explain`: one scheduling decision, with the policy's breakdown (DESIGN §3), in a
// small world like that of the experiment its PolicyInfo::world names (the scenes are
// registered beside their experiments: sim/explain.h). This file knows no policy by name.
#include <fmt/core.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "cli/policy_flags.h"
#include "cli/seed_flags.h"
#include "policy/registry.h"
#include "sim/embedded_apps.h"
#include "sim/experiment.h"

namespace tessera::cli {
namespace {

Status RunExplain(const sim::ExplainArgs& flags, const std::string& policy) {
  Expected<sim::AppCatalog> catalog =
      sim::ParseAppCatalog(std::string(sim::EmbeddedAppsYaml()), "data/apps.yaml");
  if (!catalog) return Failed(catalog.error());
  Expected<policy::PolicySpec> spec = ParseRegisteredPolicy(policy);
  if (!spec) return Usage(spec.error());
  const std::string world = policy::FindPolicy(spec->name)->world;
  const sim::Experiment* e = sim::FindExperiment(world);
  if (e == nullptr || !e->explain) {
    return Failed("--policy {}: its world, {}, has no explain scene", spec->name, world);
  }
  sim::ExplainArgs args = flags;
  args.policy = policy;
  args.spec = std::move(*spec);
  args.catalog = &*catalog;
  Expected<sim::Explanation> out = e->explain(args);
  if (!out) return Failed(out.error());
  if (!out->usage_error.empty()) return Usage("{}", out->usage_error);
  std::fputs(out->text.c_str(), stdout);
  return {};
}

}  // namespace

void AddExplain(CLI::App& app, Status* status) {
  auto flags = std::make_shared<sim::ExplainArgs>();
  auto policy = std::make_shared<std::string>("predictive");
  flags->app = "onnx/resnet50";
  CLI::App* sub = app.add_subcommand(
      "explain", "Print the score breakdown of one scheduling decision on a built-in scenario");
  sub->add_option("--policy", *policy,
                  "Policy, optionally with options: name or name{json} (default predictive)");
  sub->add_option("--app", flags->app,
                  "Application of the arriving pod (default onnx/resnet50; where the world runs "
                  "offline training, a training job, default train/resnet50)")
      ->each([flags](const std::string&) { flags->app_set = true; });
  sub->add_option("--slo", flags->slo, "Its SLO in QPS (default: SLO_4, the thesis's low SLO)")
      ->check(FiniteRange(0.0, 1e9));
  sub->add_option("--seed", flags->seed,
                  "Seed of the physics and the profiling, 0..2^64-1 (default 1)")
      ->check(SeedCheck());
  sub->callback([flags, policy, status] { *status = RunExplain(*flags, *policy); });
}

}  // namespace tessera::cli
