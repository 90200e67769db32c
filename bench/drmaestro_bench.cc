// One drmaestro scheduling cycle (issue #18's target: 10,000 pending jobs × 1,000 nodes ≤ 1 s):
// Drmaestro::PlaceBatch end to end — batch selection, both flow networks built and solved
// (LEMON's network simplex), placements checked and returned.
//
// The cluster: 1,000 nodes of 4 K80s, 160 threads, 512 GiB. The even nodes' CPUs are held (002's
// warm-up), and 1,000 jobs already run with their CPU on an odd node and their GPU on an even
// one (remote), loading the network of both unevenly. 10,000 one-GPU jobs of eight profiled apps
// are pending; 3,000 GPUs are idle, so the batch takes 6,000 of them (twice the idle GPUs).
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <random>
#include <string>
#include <vector>

#include "model/cluster.h"
#include "policy/drmaestro.h"

namespace tessera::policy {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 10;  // sanitizer builds only smoke-run it
#else
constexpr int kScale = 1;
#endif

struct World {
  model::ClusterState cluster;
  JobProfiles profiles;
  std::vector<Workload> pending;
};

World Build(int nodes, int jobs) {
  World w;
  const model::GpuModelId k80 = *model::FindGpuModel("K80");
  std::mt19937_64 rng(18);
  const char* apps[] = {"btree",  "backprop", "gaussian",   "hotspot",
                        "lavamd", "nw",       "pathfinder", "srad"};
  for (int i = 0; i < 8; ++i) {
    const double share = 0.02 * (i + 1);
    w.profiles[apps[i]] = {.seconds_per_query = {{k80, 0.05 + 0.01 * i}},
                           .remote_slowdown = 1 / (1 - share),
                           .network_sensitivity = 0.3 + 0.05 * i,
                           .network_share = share};
  }
  for (int n = 0; n < nodes; ++n) {
    (void)w.cluster.AddNode(
        model::UniformNode(fmt::format("k80-{}", n), k80, 4, 160'000, 512 << 10));
  }
  WorkloadId id = 0;
  for (int n = 0; n < nodes; n += 2) {
    Workload warm;
    warm.id = ++id;
    warm.cpu_milli = 160'000;
    (void)w.cluster.Place(warm, {.workload = warm.id, .node = n});
  }
  const auto job = [&](int i) {
    Workload j;
    j.id = ++id;
    j.app = apps[i % 8];
    j.klass = model::WorkloadClass::kOffline;
    j.queries = 1000 + static_cast<int64_t>(rng() % 3000);
    j.cpu_milli = 8000;
    j.memory_mib = 32 << 10;
    j.gpu = {.count = 1, .milli = 1000, .models = {k80}};
    j.goal_s = 0.06 * static_cast<double>(j.queries) * (1.1 + 0.5 * (rng() % 100) / 100.0);
    j.goal_z = 1 + static_cast<int>(rng() % 10);
    j.arrival_s = i;
    return j;
  };
  // Running remote jobs: CPU on an odd node, GPU i of an even node, 1 per GPU on a quarter.
  for (int r = 0; r < nodes; ++r) {
    const Workload j = job(r);
    const NodeIndex gpu_node = 2 * (r / 2 % (nodes / 2));
    const model::GpuIndex g = w.cluster.node(gpu_node).first_gpu + r % 2;
    const NodeIndex cpu_node = 1 + 2 * static_cast<int>(rng() % (nodes / 2));
    (void)w.cluster.Place(
        j, {.workload = j.id,
            .node = cpu_node,
            .slices = {{model::ClusterState::PartitionOf(g, 0), 1000, 0, false, true}}});
  }
  for (int i = 0; i < jobs; ++i) w.pending.push_back(job(i));
  return w;
}

void BM_DrmaestroCycle(benchmark::State& state) {
  const World w = Build(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<const Workload*> pending;
  for (const Workload& j : w.pending) pending.push_back(&j);
  DrmaestroOptions options;
  options.network_aware = state.range(2) != 0;
  size_t placed = 0;
  for (auto _ : state) {
    Drmaestro p(options, &w.profiles);  // a fresh waiting counter: every cycle the same
    std::optional<std::vector<Candidate>> out = p.PlaceBatch(pending, w.cluster);
    placed = out ? out->size() : 0;
    benchmark::DoNotOptimize(out);
  }
  state.counters["placed"] = static_cast<double>(placed);
  int idle = 0;
  for (model::GpuIndex g = 0; g < w.cluster.gpu_count(); ++g) idle += w.cluster.gpu(g).idle();
  state.counters["idle_gpus"] = idle;
}
BENCHMARK(BM_DrmaestroCycle)
    ->Args({1000 / kScale, 10000 / kScale, 0})
    ->Args({1000 / kScale, 10000 / kScale, 1})
    ->ArgNames({"nodes", "jobs", "network_aware"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::policy

BENCHMARK_MAIN();
