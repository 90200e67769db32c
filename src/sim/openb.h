#pragma once
// The `openb-alloc` experiment: Alibaba's openb GPU-sharing trace (shared/data/openb) replayed
// the way the FGD paper evaluates schedulers (Weng et al., USENIX ATC'23, §6.1; reference
// simulator hkust-adsl/kubernetes-scheduler-simulator, core.go TunePodsByNodeTotalResource and
// experiments/analysis): see docs/results.md for every detail and where it comes from.
//
//  - Cluster: the node list (1,213 GPU nodes, 6,212 GPUs); CPU and memory count.
//  - Pods: gpu_milli above 1000 capped; timestamps, qos and phase ignored; a seeded shuffle fixes
//    the arrival order; inflation appends pods drawn uniformly with replacement from the
//    originals until the requested GPU (num_gpu × gpu_milli) would pass `inflation` × capacity
//    (a list above it is thinned at random instead).
//  - Arrive-only replay through the scheduler core with drop_unschedulable; the cluster's nodes
//    are added in a seeded random order and ties go to the first node in that order (the
//    reference simulator renames nodes with a random permutation prefix and its kube-scheduler
//    then keeps the first of equal scores); the typical pods (95% of the original list) reach
//    every policy as PolicyContext::typical_pods (the fragmentation policies use them).
//  - Metrics per event: allocated GPU milli and the paper's fragmentation against the typical
//    pods, recorded against the arrived GPU milli in whole percent 0..130 (rounded half to even,
//    as the reference analysis; an empty bucket takes the events of its neighbours ±1).
// Loading is strict: a malformed line is an Error "file:line: why" and nothing runs.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "sim/experiment.h"

namespace tessera::sim {

// What the simulator replays in reasonable time (an openb-alloc run scores every node for every
// arriving pod, and the pods grow with the GPUs: 8x the openb cluster already takes half a
// minute a run). The openb cluster: 1,213 nodes, 6,212 GPUs, at most 8 on a node.
inline constexpr int kOpenbMaxGpusPerNode = 64;
inline constexpr int kOpenbMaxNodes = 10000;
inline constexpr int kOpenbMaxGpus = 50000;

// The node list; every node is checked by adding it to a ClusterState. More than the limits
// above is an Error naming the line that passes them.
[[nodiscard]] Expected<std::vector<model::NodeSpec>> LoadOpenbNodes(const std::string& path);
// Workload ids are the 1-based line order of the file.
[[nodiscard]] Expected<std::vector<model::Workload>> LoadOpenbPods(const std::string& path);

// The arrival order for one seed: shuffled originals, then the inflation draws (new ids).
std::vector<model::Workload> OpenbArrivals(std::span<const model::Workload> pods,
                                           double capacity_gpu_milli, double inflation, Rng& rng);

inline constexpr int kOpenbMaxPct = 130;

struct OpenbRun {
  std::string policy;
  uint64_t seed = 0;
  int total_gpus = 0;
  size_t pods = 0;  // arrivals, inflation included
  size_t failed_pods = 0;
  double moves_per_100 = 0;  // the move budget (sim/moves.h); 0: arrive-only
  size_t moves = 0, rescued = 0;
  double moved_gpu_milli = 0;
  double wall_s = 0;  // the replay alone (policy construction and arrivals excluded)
  double cpu_s = 0;   // CPU time of the same (on a shared machine wall time is not all ours)
  // Per arrived percent 0..130: mean allocation and fragmentation (% of capacity) and
  // fragmentation as % of idle GPU milli; NaN where no event falls near.
  std::array<double, kOpenbMaxPct + 1> alloc_pct{};
  std::array<double, kOpenbMaxPct + 1> frag_pct{};
  std::array<double, kOpenbMaxPct + 1> frag_idle_pct{};
};

struct OpenbInput {
  std::vector<model::NodeSpec> nodes;  // in file order
  int total_gpus = 0;
  std::vector<model::Workload> pods;  // the original pod list
  std::string trace_stem;
};

[[nodiscard]] Expected<OpenbInput> LoadOpenb(const std::string& pods_path,
                                             const std::string& nodes_path);
// The same from --trace and --nodes (or the node list beside the trace), each checked to be a
// readable file first.
[[nodiscard]] Expected<OpenbInput> LoadOpenbArgs(const ExperimentArgs& args);

// One replay. `inflation` is the target arrived load (1.3 = 130% of GPU capacity);
// `moves_per_100` > 0 lets failed arrivals move running pods (sim/moves.h).
[[nodiscard]] Expected<OpenbRun> RunOpenb(const OpenbInput& input, const std::string& policy,
                                          uint64_t seed, double inflation = 1.3,
                                          double moves_per_100 = 0);

// Mean (and sample standard deviation) over the seeds of each policy, policies in the order they
// first appear in `runs`. NaN buckets are skipped.
struct OpenbSummary {
  std::string policy;
  std::vector<uint64_t> seeds;
  int total_gpus = 0;
  double failed_pods = 0;
  double wall_s = 0;
  double cpu_s = 0;
  std::array<double, kOpenbMaxPct + 1> alloc_pct{}, alloc_std{};
  std::array<double, kOpenbMaxPct + 1> frag_pct{}, frag_std{};
  std::array<double, kOpenbMaxPct + 1> frag_idle_pct{};
};
std::vector<OpenbSummary> SummarizeOpenb(std::span<const OpenbRun> runs);

// `tessera simulate --experiment openb-alloc` (registered in experiments.cc): every policy
// replays the trace (--trace, --nodes) over the seeds; one JSON object per policy, a row each,
// and with --out the curves and the plot (sim/openb_report.h). CheckOpenbArgs: the usage
// error for a missing --trace.
[[nodiscard]] Expected<void> CheckOpenbArgs(const ExperimentArgs& args);
[[nodiscard]] Expected<ExperimentOutput> RunOpenbExperiment(const ExperimentArgs& args,
                                                            const Experiment& experiment);

}  // namespace tessera::sim
