// ClusterState throughput on a 1,000-node x 8-GPU cluster (issue: foundation).
//  - BM_PlaceRemove: one Place + one Remove of a GPU-sharing workload per iteration, on a
//    cluster kept about half full, so indices, client lists and the placement map all work.
//  - BM_FilterScoreAllNodes: first-fit Filter + Score of one workload against every node, the
//    inner loop of a scheduling cycle (8,000 GPUs).
#include <benchmark/benchmark.h>

#include "base/rng.h"
#include "model/cluster.h"
#include "policy/first_fit.h"

namespace tessera {
namespace {

model::ClusterState BigCluster() {
  const char* models[] = {"A100-80GB", "H100-80GB", "A30-24GB", "V100-32GB"};
  model::ClusterState c;
  for (int n = 0; n < 1000; ++n) {
    auto ok = c.AddNode(model::UniformNode(
        "node-" + std::to_string(n), *model::FindGpuModel(models[n % 4]), 8, 128000, 1 << 20));
    if (!ok) std::abort();
  }
  return c;
}

model::Workload Share(model::WorkloadId id, int milli) {
  model::Workload w;
  w.id = id;
  w.cpu_milli = 100;
  w.memory_mib = 256;
  w.gpu.count = 1;
  w.gpu.milli = milli;
  w.gpu.memory_mib = 1024;
  return w;
}

void BM_PlaceRemove(benchmark::State& state) {
  model::ClusterState c = BigCluster();
  Rng rng(1);
  // Fill every GPU to 500 milli with 250-milli workloads (16,000 placed).
  model::WorkloadId id = 1;
  for (model::GpuIndex g = 0; g < c.gpu_count(); ++g) {
    for (int k = 0; k < 2; ++k, ++id) {
      const model::Workload w = Share(id, 250);
      if (!c.Place(w, {id, c.gpu(g).node, {{model::ClusterState::PartitionOf(g, 0), 250, 1024}}})) {
        std::abort();
      }
    }
  }
  for (auto _ : state) {
    const model::GpuIndex g = static_cast<model::GpuIndex>(rng.Below(c.gpu_count()));
    const model::Workload w = Share(id, 100);
    auto placed =
        c.Place(w, {id, c.gpu(g).node, {{model::ClusterState::PartitionOf(g, 0), 100, 1024}}});
    auto removed = c.Remove(id);
    benchmark::DoNotOptimize(placed);
    benchmark::DoNotOptimize(removed);
    ++id;
  }
  state.SetItemsProcessed(2 * state.iterations());  // operations: a place and a remove
  state.counters["placed"] = static_cast<double>(c.placed_count());
}
BENCHMARK(BM_PlaceRemove);

void BM_FilterScoreAllNodes(benchmark::State& state) {
  model::ClusterState c = BigCluster();
  policy::FirstFit ff;
  // A request only the last node can take: every node is filtered and scored.
  model::Workload w = Share(1, 100);
  w.gpu.models = {c.gpu(c.gpu_count() - 1).model};
  for (auto _ : state) {
    int feasible = 0;
    for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
      if (!ff.Filter(w, n, c).ok()) continue;
      feasible += ff.Score(w, n, c).has_value();
    }
    benchmark::DoNotOptimize(feasible);
  }
  state.SetItemsProcessed(state.iterations() * c.gpu_count());  // GPUs considered
}
BENCHMARK(BM_FilterScoreAllNodes)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
