// The LEMON solvers (src/policy/flow) at the sizes of the policies that will use them: MuxFlow's
// matching of offline jobs to online GPUs, and one DRMaestro scheduling cycle as a min-cost flow.
// Instances come from a seeded mt19937_64, built outside the timed loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "policy/flow/flow.h"

namespace tessera::flow {
namespace {

// The documented sizes (docs/benchmarks.md); sanitizer builds only smoke-run the code
// (scripts/test.sh), on instances a tenth the size so that they finish in well under a second.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 10;
#else
constexpr int kScale = 1;
#endif

// n offline jobs × n online GPUs, every pair an edge of weight uniform in [1, 10^6].
void BM_MatchJobsToGpus(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::mt19937_64 rng(42);
  std::vector<Edge> edges;
  edges.reserve(static_cast<size_t>(n) * n);
  for (int job = 0; job < n; ++job) {
    for (int gpu = 0; gpu < n; ++gpu) {
      edges.push_back({job, gpu, 1 + static_cast<int64_t>(rng() % 1'000'000)});
    }
  }
  int64_t matched = 0;
  for (auto _ : state) {
    MatchingResult m = MaxWeightBipartiteMatching(n, n, edges);
    if (m.status != Status::kOptimal) state.SkipWithError(m.error.c_str());
    matched = 0;
    for (const int gpu : m.match) matched += gpu >= 0;
    benchmark::DoNotOptimize(m);
  }
  state.counters["matched"] = static_cast<double>(matched);
}
BENCHMARK(BM_MatchJobsToGpus)->Arg(1000 / kScale)->Unit(benchmark::kMillisecond);

// One DRMaestro cycle: `jobs` jobs (one unit each) → 10-20 random candidate nodes each (cost
// uniform in [0, 1000)) → jobs / 10 nodes of 8 slots → sink, and per job an "unscheduled" arc
// straight to the sink at cost 10^5. There are 8,000 slots for 10,000 jobs, so a fifth wait.
void BM_SchedulingCycle(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  const int nodes = jobs / 10;
  const int sink = jobs + nodes;
  std::mt19937_64 rng(7);
  std::vector<Arc> arcs;
  for (int job = 0; job < jobs; ++job) {
    const int candidates = 10 + static_cast<int>(rng() % 11);
    for (int k = 0; k < candidates; ++k) {
      const int node = jobs + static_cast<int>(rng() % nodes);
      arcs.push_back({job, node, 1, static_cast<int64_t>(rng() % 1000)});
    }
  }
  const size_t first_unscheduled = arcs.size();
  for (int job = 0; job < jobs; ++job) arcs.push_back({job, sink, 1, 100'000});
  for (int node = 0; node < nodes; ++node) arcs.push_back({jobs + node, sink, 8, 0});
  std::vector<int64_t> supply(sink + 1, 0);
  for (int job = 0; job < jobs; ++job) supply[job] = 1;
  supply[sink] = -jobs;

  int64_t unscheduled = 0;
  for (auto _ : state) {
    FlowResult r = MinCostFlow(sink + 1, arcs, supply);
    if (r.status != Status::kOptimal) state.SkipWithError(r.error.c_str());
    unscheduled = 0;
    for (int job = 0; job < jobs && !r.flow.empty(); ++job) {
      unscheduled += r.flow[first_unscheduled + job];
    }
    benchmark::DoNotOptimize(r);
  }
  state.counters["arcs"] = static_cast<double>(arcs.size());
  state.counters["unscheduled"] = static_cast<double>(unscheduled);
}
BENCHMARK(BM_SchedulingCycle)->Arg(10000 / kScale)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::flow

BENCHMARK_MAIN();
