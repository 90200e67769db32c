#pragma once
// The `packing` experiment: a built-in mixed cluster (V100, T4, A30, A100, H100 nodes; MIG off)
// receives a seeded stream of inference workloads — GPU shares, whole GPUs and multi-GPU jobs
// in the proportions of Alibaba's openb trace (about 2/3 of GPU pods share a GPU) — until
// 130% of its GPU capacity has been asked for. Workloads never finish (arrive-only replay), so
// the experiment measures how well a policy packs: GPU allocation when the first workload fails
// and at the end, and how many fail. It is quick (well under a second per policy and seed).

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/cluster.h"
#include "sim/experiment.h"

namespace tessera::sim {

struct PackingRow {
  std::string policy;
  uint64_t seed;
  size_t workloads;
  size_t failed;
  // GPU milli requested by placed workloads / capacity, when the first workload failed.
  double alloc_at_first_failure_pct;
  double alloc_final_pct;
  double wall_s;
};

// The built-in cluster: `nodes` nodes of 8 GPUs (1 in 5 of 4 GPUs), models in turn.
model::ClusterState PackingCluster(int nodes);
// Workloads asking for `inflation` × the cluster's GPU capacity, seeded.
std::vector<model::Workload> PackingWorkloads(const model::ClusterState& cluster, uint64_t seed,
                                              double inflation);

[[nodiscard]] Expected<std::vector<PackingRow>> RunPacking(const std::vector<std::string>& policies,
                                                           const std::vector<uint64_t>& seeds,
                                                           int nodes);

// `tessera simulate --experiment packing` (registered in experiments.cc): every policy over
// the seeds, a row per policy and seed.
[[nodiscard]] Expected<ExperimentOutput> RunPackingExperiment(const ExperimentArgs& args,
                                                              const Experiment& experiment);

}  // namespace tessera::sim
