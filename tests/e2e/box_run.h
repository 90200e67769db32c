#pragma once
// One run of the emulated cluster (docs/cluster-box.md): the thesis scenario of one policy and
// seed, on the production daemons — two `tessera schedule` replicas (one leads by Lease), one
// `tessera agent --fake` per GPU node, a real redis-server and prometheus, the fake API server
// served from this process and the emulated kubelet — with faults injected during the run if
// asked. The world (cluster, MIG layouts set up for the policy, physics, pods, the profile a
// predicting policy is given) is the simulator's own (sim::BuildThesisWorld), with the same
// time scale.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "e2e/box_kubelet.h"
#include "sim/online_offline.h"
#include "sim/thesis.h"

namespace tessera::e2e {

struct RunSpec {
  std::string policy = "max";
  uint64_t seed = 1;
  // The thesis's (pods 20 or 40, low or high SLO; unprofiled 3: three engines never profiled,
  // 20 pods only, as the simulator runs it) or, with nodes > 0, thesis-scale's: that many nodes
  // of 8 GPUs and `pods` Poisson arrivals in the (scaled) hour.
  sim::ThesisScenario scenario;
  // Set: this online-offline scenario instead (seed 001: services with a daily load and a
  // memory burst, offline jobs; sim::ShortBurstScenario), `policy` a muxflow variant
  // (sim/online_offline.h), read by both sides as it is; time_scale does not apply.
  std::optional<sim::OnlineOfflineScenario> online_offline;
  double time_scale = 10;  // sim::ThesisReading::time_scale, read by both sides
  std::string tessera;     // the tessera binary
  std::string exporter;    // tests/tools/metrics_file_exporter
  std::string dir;         // this run's directory: logs, node files, kubeconfig
  // Faults injected during the arrivals: kill-leader, restart-redis, cut-watches, delay-api.
  std::vector<std::string> faults;
  double timeout_s = 900;  // give up (pods left unfinished are reported)
  // Pods the simulator never started: the run ends without them once every other pod ended.
  std::set<int64_t> never_started;
};

struct RunResult {
  std::vector<BoxPod> pods;
  std::map<std::string, int> bindings;  // successful bindings per pod (1 each, or a defect)
  std::vector<std::string> evictions;   // pods evicted through the Eviction API, "ns/name
  int bind_attempts = 0;
  bool timed_out = false;
  std::vector<std::string> log;  // what the box did and saw, with times (faults, leaders)
  std::string reading;           // sim::ThesisReading::name() both sides ran
  // The leader's own counters at the end (its /metrics): what it observed, bound and evicted.
  std::vector<std::string> counters;
};

// Throws std::runtime_error when the cluster cannot be brought up (a missing binary, a daemon
// that never gets ready), naming what and its log.
RunResult RunOnBox(const RunSpec& spec);

}  // namespace tessera::e2e
