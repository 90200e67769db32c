#pragma once
// JobProfile: what offline profiling says about a batch application (seed 002's "inference
// engine": average run times from past runs, and the network sensitivity measured by running it
// on a remote GPU with and without a network-intensive neighbour, 002 Experiment 1). Drivers fill
// it where they know it (the simulator profiles its physics; a cluster would from past runs); a
// policy treats an application missing here as unknown.

#include <map>
#include <string>
#include <unordered_map>

#include "model/gpu_model.h"

namespace tessera::policy {

struct JobProfile {
  // Seconds per query alone on a whole local GPU, by GPU model; a model missing: unknown there.
  std::map<model::GpuModelId, double> seconds_per_query;
  double remote_slowdown = 1;      // run time on a remote GPU / on a local one, network idle
  double network_sensitivity = 0;  // the remote run time grows × (1 + this × network load)
  double network_share = 0;        // the share of a link one of its remote streams keeps busy
};

using JobProfiles = std::unordered_map<std::string, JobProfile>;  // by application key

}  // namespace tessera::policy
