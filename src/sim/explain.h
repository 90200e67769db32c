#pragma once
// `tessera explain` scenes: one scheduling decision in a small world built like an experiment's,
// with the policy's breakdown (DESIGN §3). Each scene lives beside its experiment (thesis.cc,
// online_offline.cc, overprovision.cc, disaggregation.cc) and is registered on that experiment's
// line (Experiment::explain); a policy is explained in the world its PolicyInfo::world names.

#include <cstdint>
#include <string>

#include "base/error.h"
#include "policy/registry.h"
#include "sim/apps.h"

namespace tessera::sim {

struct ExplainArgs {
  std::string policy;  // NAME or NAME{json}, as given (World::Build parses it)
  policy::PolicySpec spec;
  std::string app;       // the arriving workload's application
  bool app_set = false;  // --app given (else the scene's own default)
  double slo = 0;        // its SLO in QPS; 0: the scene's default
  uint64_t seed = 1;     // the physics' and the profiling's
  const AppCatalog* catalog = nullptr;
};

// What a scene prints, or a usage error in the arguments (an --app the scene cannot explain).
struct Explanation {
  std::string text;
  std::string usage_error;
};

}  // namespace tessera::sim
