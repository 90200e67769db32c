#pragma once
// JobProfile: what offline profiling says about a batch application (seed 002's "inference
// engine": average run times from past runs, and the network sensitivity measured by running it
// on a remote GPU with and without a network-intensive neighbour, 002 Experiment 1). Drivers fill
// it where they know it (the simulator profiles its physics; a cluster would from past runs); a
// policy treats an application missing here as unknown.
//
// JobProfilesFromPredictor is a cluster driver's source (tessera schedule): the predictor's
// profile matrix gives each application's isolated QPS on a whole GPU of each model, so seconds
// per query = 1 / QPS. A profile matrix says nothing about remote GPUs or the network, so
// remote_slowdown, network_sensitivity and network_share keep their defaults (1, 0, 0).

#include <map>
#include <string>
#include <unordered_map>

#include "model/gpu_model.h"

namespace tessera::predict {
class Predictor;
}  // namespace tessera::predict

namespace tessera::policy {

struct JobProfile {
  // Seconds per query alone on a whole local GPU, by GPU model; a model missing: unknown there.
  std::map<model::GpuModelId, double> seconds_per_query;
  double remote_slowdown = 1;      // run time on a remote GPU / on a local one, network idle
  double network_sensitivity = 0;  // the remote run time grows × (1 + this × network load)
  double network_share = 0;        // the share of a link one of its remote streams keeps busy
  // Where co-location reaches the node's link (seed 002's simulator, ≈430): the share of its
  // node's link a running instance keeps busy (storage I/O, or an Iperf-like job's traffic), and
  // how its run time, local or remote, grows with that link's load: × (1 + this × load) on top.
  double link_load = 0;
  double local_sensitivity = 0;
};

using JobProfiles = std::unordered_map<std::string, JobProfile>;  // by application key

// One profile per application row of `predictor`'s profile matrix: seconds_per_query[m] =
// 1 / Isolated(app, "<m's name>/whole/100") for every known GPU model m the predictor answers
// with a positive, finite QPS (measured or completed). An application with no such cell is left
// out (unknown to the policy). The remote and network fields keep their defaults (see above).
JobProfiles JobProfilesFromPredictor(const predict::Predictor& predictor);

}  // namespace tessera::policy
