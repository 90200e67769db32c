#include "policy/job_profile.h"

#include <cmath>
#include <optional>

#include "predict/config_key.h"
#include "predict/predictor.h"

namespace tessera::policy {

JobProfiles JobProfilesFromPredictor(const predict::Predictor& predictor) {
  JobProfiles profiles;
  for (const std::string& app : predictor.profile().row_keys()) {
    JobProfile profile;
    for (const model::GpuModel& gpu : model::AllGpuModels()) {
      const std::optional<double> qps =
          predictor.Isolated(app, predict::ConfigKey(gpu.name, predict::kWholeGpu, 100));
      if (!qps || !std::isfinite(*qps) || *qps <= 0) continue;
      profile.seconds_per_query[gpu.id] = 1 / *qps;
    }
    if (!profile.seconds_per_query.empty()) profiles[app] = std::move(profile);
  }
  return profiles;
}

}  // namespace tessera::policy
