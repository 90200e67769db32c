// Memory of the scheduling core (issue #19 "Memory"): 100,000 placed workloads on 1,000 nodes
// × 8 GPUs (A100-80GB, MIG off), each a 1/13 share of a GPU with realistic names.
//  - BM_ClusterBytesPerPlacedWorkload: heap bytes ClusterState holds per placed workload
//    (glibc's mallinfo2 in-use bytes after placing, minus before, over the count). Target
//    ≤ 512 B.
//  - BM_SchedulerCoreRss: the process's resident set after the scheduler core (sched::Scheduler
//    with its queue and indices, the ClusterState and a policy) has bound all 100,000 submitted
//    workloads, as `tessera schedule` holds them. Target ≤ 300 MB. The policy places by
//    PlaceBatch, round-robin over the GPUs, so the figure is the core's state, not a scan.
// Counters are reported per run (iterations = 1); under the sanitizers (the test suite's smoke
// run) the figures mean nothing, only that it runs.
#include <benchmark/benchmark.h>
#include <fmt/core.h>
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/rng.h"
#include "model/cluster.h"
#include "policy/policy.h"
#include "sched/scheduler.h"

namespace tessera {
namespace {

constexpr int kNodes = 1000, kGpus = 8, kWorkloads = 100000;
constexpr int kMilli = 76;  // 13 per GPU: 8,000 GPUs × 13 = 104,000 ≥ 100,000

model::ClusterState BigCluster() {
  model::ClusterState c;
  for (int n = 0; n < kNodes; ++n) {
    auto ok = c.AddNode(model::UniformNode(
        fmt::format("node-{:04d}", n), *model::FindGpuModel("A100-80GB"), kGpus, 256000, 1 << 21));
    if (!ok) std::abort();
  }
  return c;
}

model::Workload Pod(model::WorkloadId id) {
  model::Workload w;
  w.id = id;
  w.name = fmt::format("inference/resnet50-{:06d}", id);  // "<namespace>/<pod>", as in k8s
  w.app = "onnx/resnet50/bs1";
  w.slo_qps = 100;
  w.cpu_milli = 500;
  w.memory_mib = 1024;
  w.gpu.count = 1;
  w.gpu.milli = kMilli;
  w.gpu.memory_mib = 2048;
  return w;
}

size_t HeapInUse() { return mallinfo2().uordblks; }

double RssMib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

void BM_ClusterBytesPerPlacedWorkload(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    auto c = std::make_unique<model::ClusterState>(BigCluster());
    const size_t before = HeapInUse();
    state.ResumeTiming();
    for (model::WorkloadId id = 0; id < kWorkloads; ++id) {
      const model::GpuIndex g = static_cast<model::GpuIndex>(id % c->gpu_count());
      const model::Workload w = Pod(id);
      if (!c->Place(
              w, {id, c->gpu(g).node, {{model::ClusterState::PartitionOf(g, 0), kMilli, 2048}}})) {
        std::abort();
      }
    }
    state.PauseTiming();
    state.counters["bytes_per_workload"] =
        static_cast<double>(HeapInUse() - before) / static_cast<double>(kWorkloads);
    state.counters["placed"] = static_cast<double>(c->placed_count());
    c.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ClusterBytesPerPlacedWorkload)->Iterations(1)->Unit(benchmark::kMillisecond);

// Places every pending workload on the next GPU in turn, in one batch.
class RoundRobinBatch final : public policy::Policy {
 public:
  std::string_view name() const override { return "round-robin-batch"; }
  std::optional<policy::Candidate> Score(const model::Workload&, model::NodeIndex,
                                         const model::ClusterState&) override {
    return std::nullopt;
  }
  bool Batches() const override { return true; }
  std::optional<std::vector<policy::Candidate>> PlaceBatch(
      std::span<const model::Workload* const> pending, const model::ClusterState& c) override {
    std::vector<policy::Candidate> out;
    out.reserve(pending.size());
    for (const model::Workload* w : pending) {
      const model::GpuIndex g = next_++ % c.gpu_count();
      out.push_back({100,
                     {w->id,
                      c.gpu(g).node,
                      {{model::ClusterState::PartitionOf(g, 0), w->gpu.milli, w->gpu.memory_mib}}},
                     {},
                     {}});
    }
    return out;
  }

 private:
  model::GpuIndex next_ = 0;
};

void BM_SchedulerCoreRss(benchmark::State& state) {
  for (auto _ : state) {
    const double rss_before = RssMib();
    auto c = std::make_unique<model::ClusterState>(BigCluster());
    RoundRobinBatch policy;
    ManualClock clock;
    Rng rng(1);
    sched::Hooks hooks;
    hooks.bind = [](const model::Workload&, const model::Placement&,
                    const model::Environment&) -> Expected<void> { return {}; };
    auto core = std::make_unique<sched::Scheduler>(*c, policy, clock, rng, hooks);
    for (model::WorkloadId id = 0; id < kWorkloads; ++id) {
      if (!core->Submit(Pod(id))) std::abort();
    }
    const sched::CycleStats st = core->RunCycle();
    if (st.bound != kWorkloads) std::abort();
    state.counters["rss_mib"] = RssMib();
    state.counters["rss_mib_added"] = RssMib() - rss_before;
    state.counters["bound"] = st.bound;
  }
}
BENCHMARK(BM_SchedulerCoreRss)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
