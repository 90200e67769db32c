#pragma once
// The application catalogue the simulator's physics runs on (data/apps.yaml, docs/simulator.md).
//
// Each application is described by a roofline-style cost of one query on a share of a GPU:
//   t(query) = compute_s / (compute share × relative compute)
//            + memory_s  / (bandwidth share × relative bandwidth)
//            + fixed_s + host_s
// with shares and relative speeds measured against the catalogue's reference GPU (A100-40GB).
// fixed_s is the part no GPU share speeds up (host work, launches, I/O): an application whose
// fixed_s dominates loses almost nothing on a small slice (thesis Ch. 6.2). host_s (optional, 0
// by default) is time on the host with no kernel of its own on the GPU — a training job's input
// pipeline: it neither counts as engine activity nor waits on co-runners, so it sets how much of
// the GPU the workload leaves to others while it runs (seed 001's trainers). `measured` holds
// real throughputs (samples/s) by configuration key `<GPU>/<profile|whole>/<MPS %>`; where one
// exists it is the truth and the roofline only fills the rest. `features` is what the application
// declares about itself (predict/features.h): the predictor may read it, Physics never does.
// `usage` is how its memory, SM and bandwidth use move while it runs (sim/usage.h; seeds 003 and
// 004); nothing bounds its memory here: a GPU it outgrows is the engine's OOM.
//
// Loading is all or nothing: a malformed file is one Error naming file and line.

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/config_key.h"
#include "predict/features.h"
#include "sim/usage.h"

namespace tessera::sim {

// `remote:` what running on a GPU in another node costs (seed 002's disaggregated GPUs, Fig. 3):
// the share of the run spent moving data to and from the GPU over the network, with the network
// otherwise idle and under a saturating load (002 measured NW at 17 % and 49 %, HotSpot at 0.2 %
// and 1 %). The rest of the run is unchanged, so the run on a remote GPU takes 1 / (1 − a) of
// its local time with the network idle and 1 / (1 − b) under full load; in between, linearly in
// the load l: 1 / (1 − a) × (1 + sensitivity × l), sensitivity = (1 − a) / (1 − b) − 1. While it
// runs, each remote stream keeps its links busy a share a of the time (its network load on the
// two nodes). All zero: it was never profiled remotely and a remote GPU costs it nothing.
struct RemoteProfile {
  double network_share = 0;         // a, 0 ≤ a < 1
  double network_share_loaded = 0;  // b, a ≤ b < 1
  double sensitivity() const {
    return network_share_loaded > 0 ? (1 - network_share) / (1 - network_share_loaded) - 1 : 0;
  }
  // Run time on a remote GPU over run time on a local one, at network load `load` (0..1).
  double Slowdown(double load) const { return (1 + sensitivity() * load) / (1 - network_share); }
  bool empty() const { return network_share == 0 && network_share_loaded == 0; }
};

// `link:` what a running instance does to its own node's network link besides remote-GPU
// traffic (seed 002's co-location, the disaggregation experiment's default world): disk_share,
// the share of its run alone spent on storage I/O, which on 002's testbed crosses the node's
// InfiniBand link (its GPFS storage, ≈319–321) and so stretches as the link's other users load
// it; load, the share of the link it keeps busy regardless (a network-intensive job, 002's Iperf
// of Experiment 1: 1). Its disk I/O also loads the link, by disk_share. All zero: none.
struct LinkUse {
  double disk_share = 0;  // 0 ≤ d < 1
  double load = 0;        // 0 ≤ load ≤ 1
  bool empty() const { return disk_share == 0 && load == 0; }
};

struct AppSpec {
  std::string key;  // application key, e.g. "onnx/resnet50/ss"
  std::string description;
  double compute_s = 0;       // seconds per query, compute-bound part, whole reference GPU
  double memory_s = 0;        // seconds per query, bandwidth-bound part, full bandwidth
  double fixed_s = 0;         // seconds per query no GPU share speeds up
  double host_s = 0;          // seconds per query on the host, the GPU idle for it
  int64_t footprint_mib = 0;  // GPU memory it needs; less than that and it fails
  double sensitivity = 1;     // scales how much co-runners' bandwidth demand slows it (0..2)
  int64_t queries_min = 0;    // work per job for experiment generators
  int64_t queries_max = 0;
  std::map<std::string, double> measured;  // config key -> samples/s
  predict::AppFeatures features;           // `features:`, e.g. {model: resnet50, batch: 8}
  // `usage:` what a running instance holds and does over time (sim/usage.h); empty: it holds
  // footprint_mib from start to end and publishes no usage series.
  UsageTrajectory usage;
  RemoteProfile remote;  // `remote:` {network_share, network_share_loaded}
  LinkUse link;          // `link:` {disk_share, load}

  // Fraction of a query's GPU time spent on memory traffic, on the reference GPU.
  double memory_fraction() const {
    const double gpu = compute_s + memory_s;
    return gpu > 0 ? memory_s / gpu : 0;
  }
};

struct AppCatalog {
  std::string reference_gpu = "A100-40GB";
  std::vector<AppSpec> apps;
  // `training:` offline training jobs (seed 001's offline work), kept apart so that the inference
  // experiments, their profiling campaign and the predictor see only `apps`; an experiment
  // that runs training moves the ones it needs into `apps` of its own copy. Keys are unique
  // across both lists.
  std::vector<AppSpec> training;
  // `sharing:` inference engines whose memory, SM and bandwidth use move while they run (`usage`),
  // for the experiments of the policies that share GPUs by memory (seeds 003 and 004), and the
  // Rodinia-like batch jobs of the disaggregation experiment (seed 002), kept apart for the same
  // reason as `training`.
  std::vector<AppSpec> sharing;
  // Searches `apps` only: an experiment moves what it runs there.
  const AppSpec* Find(const std::string& key) const;
};

// The catalogue the memory-sharing experiments' physics runs on: `sharing` as its `apps`.
AppCatalog SharingCatalog(const AppCatalog& catalog);

[[nodiscard]] Expected<AppCatalog> LoadAppCatalog(const std::string& path);
[[nodiscard]] Expected<AppCatalog> ParseAppCatalog(const std::string& yaml_text,
                                                   const std::string& name_for_errors);
[[nodiscard]] Expected<void> SaveAppCatalog(const AppCatalog& catalog, const std::string& path);

// The features the catalogue's applications declare, one entry per application that states
// any. A parsed catalogue always yields one (the parser refuses a feature numeric in one app
// and categorical in another); a hand-built catalogue that mixes kinds is a bug and aborts.
predict::FeatureTable CatalogFeatures(const AppCatalog& catalog);

// Measured points are keyed like the profile matrix's columns (predict/config_key.h).
using predict::ConfigKey;

}  // namespace tessera::sim
