#include "sim/world.h"

namespace tessera::sim {

World::World(const AppCatalog& catalog, model::ClusterState c, const WorldOptions& options)
    : physics(catalog, options.seed, options.physics),
      cluster(std::move(c)),
      rng(options.seed),
      clock(options.start_s) {}

Expected<std::unique_ptr<World>> World::Build(const AppCatalog& catalog,
                                              model::ClusterState cluster,
                                              const WorldOptions& options) {
  Expected<policy::PolicySpec> spec = policy::ParsePolicySpec(options.policy);
  if (!spec) return std::unexpected(spec.error());
  std::unique_ptr<World> w(new World(catalog, std::move(cluster), options));
  const std::optional<policy::PolicyInfo> info = policy::FindPolicy(spec->name);
  if (options.predictor && (options.always_predict || (info && info->needs_predictor))) {
    Expected<predict::Predictor> p = options.predictor(w->physics, w->cluster);
    if (!p) return std::unexpected(p.error());
    w->predictor.emplace(std::move(*p));
  }
  predict::Predictor* predictor = w->predictor ? &*w->predictor : nullptr;
  telemetry::StaticTelemetry* telemetry = options.publish_telemetry ? &w->telemetry : nullptr;
  auto policy = policy::MakePolicy(spec->name,
                                   {.rng = &w->rng,
                                    .clock = &w->clock,
                                    .predictor = predictor,
                                    .telemetry = telemetry,
                                    .typical_pods = options.typical_pods,
                                    .learner = options.learn ? predictor : nullptr,
                                    .job_profiles = options.job_profiles,
                                    .can_move = options.can_move},
                                   spec->options);
  if (!policy) return std::unexpected(policy.error());
  w->policy = std::move(*policy);
  if (options.set_up_for_policy) {
    for (model::GpuIndex g = 0; g < w->cluster.gpu_count(); ++g) {
      const model::Gpu& gpu = w->cluster.gpu(g);
      if (!model::GetGpuModel(gpu.model).mig_capable() || !gpu.idle()) continue;
      const std::optional<std::optional<model::MigLayout>> to = w->policy->Reshape(g, w->cluster);
      if (!to || *to == gpu.mig) continue;
      if (auto ok = w->cluster.Reshape(g, *to); !ok) return std::unexpected(ok.error());
    }
  }
  if (options.mig_mode_fixed) w->cluster.set_mig_mode_fixed(true);
  EngineOptions engine = options.engine;
  engine.telemetry = telemetry;
  engine.clock = &w->clock;
  w->engine = std::make_unique<Engine>(w->cluster, *w->policy, w->physics, w->rng, engine);
  return w;
}

}  // namespace tessera::sim
