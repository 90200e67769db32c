#pragma once
// One simulated world, built the same way for every experiment and for `tessera explain`: a
// policy spec → its physics (the ground truth) → the cluster → a virtual clock → the telemetry
// a DCGM exporter would publish → the policy → the engine that drives them. Built in one place
// so that experiments cannot drift in how they hand a policy its clock, predictor or telemetry.
//
//   auto world = World::Build(catalog, std::move(cluster), {.policy = "fgd", .seed = 7});
//   (*world)->engine->Add(workload);  ...  EngineResult r = (*world)->engine->Run();
//
// A World owns everything its engine refers to and never moves (it lives behind a
// unique_ptr). Not thread-safe.

#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "base/clock.h"
#include "base/error.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "policy/registry.h"
#include "predict/predictor.h"
#include "sim/apps.h"
#include "sim/engine.h"
#include "sim/physics.h"
#include "telemetry/telemetry.h"

namespace tessera::sim {

struct WorldOptions {
  std::string_view policy;  // NAME or NAME{json}
  uint64_t seed = 0;        // the physics' and the engine's
  PhysicsOptions physics;
  // The profiled predictor, from the world's physics and cluster: built when the policy needs
  // one (PolicyInfo::needs_predictor), or always with `always_predict`. Null: none.
  std::function<Expected<predict::Predictor>(const Physics&, const model::ClusterState&)> predictor;
  bool always_predict = false;
  bool learn = false;     // the policy may fold observations into it (PolicyContext::learner)
  bool can_move = false;  // PolicyContext::can_move
  bool publish_telemetry = true;  // the engine publishes util(p) samples
  // Before the clock starts, every idle MIG-capable GPU takes the layout the policy's Reshape
  // asks for, at once: the cluster set up for the policy as its operator would, the way the
  // thesis partitioned its GPUs before running a baseline (Ch. 9.2). False: the policy reshapes
  // during the run, each reshape taking EngineOptions::reshape_s.
  bool set_up_for_policy = false;
  // After that set-up, no GPU's MIG mode may change during the run (ClusterState::
  // set_mig_mode_fixed): a policy may still reshape a GPU whose MIG is on, as the agents do, but
  // not turn MIG on or off — which a real GPU needs reset for, and the agents refuse.
  bool mig_mode_fixed = false;
  const policy::JobProfiles* job_profiles = nullptr;
  const policy::ShapeDistribution* typical_pods = nullptr;
  EngineOptions engine;  // its clock and telemetry are the world's
  double start_s = 0;    // the clock's time when the policy is made (explain's scenes)
};

class World {
 public:
  [[nodiscard]] static Expected<std::unique_ptr<World>> Build(const AppCatalog& catalog,
                                                              model::ClusterState cluster,
                                                              const WorldOptions& options);
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  Physics physics;
  model::ClusterState cluster;
  Rng rng;
  ManualClock clock;
  telemetry::StaticTelemetry telemetry;
  std::optional<predict::Predictor> predictor;
  std::unique_ptr<policy::Policy> policy;
  std::unique_ptr<Engine> engine;

 private:
  World(const AppCatalog& catalog, model::ClusterState cluster, const WorldOptions& options);
};

}  // namespace tessera::sim
