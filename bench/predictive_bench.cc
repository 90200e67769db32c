// The predicting policies' cost (predictive, issue: thesis scheduler; slo-aware, issue #14, with
// its 5 % MPS steps interpolated between the profiled shares): Filter + Score of one workload
// against every node of a 1,000-node × 8-GPU cluster (A100-80GB, H100-80GB, A30, V100 in turn,
// MIG off) holding 20,000 placed workloads — 2 or 3 MPS clients on every GPU, 25% each — with
// a predictor over 6 applications × every (model, profile, MPS %) configuration and a
// telemetry snapshot holding every partition's utilisation.
//  - BM_PredictiveScoreAllNodes: the steady state of a scheduling cycle: nodes whose state did
//    not change since the last decision reuse their cached neighbour terms.
//  - BM_PredictiveScoreAllNodesCold: every node changed since (the cache is invalidated by
//    touching every node before each iteration, outside the timing).
//  - BM_SloAwareScoreAllNodes / …Cold: the same for slo-aware (default options), for an SLO no
//    node can admit (25 QPS: the pod waits) and one every node can (8 QPS).
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <cmath>

#include "base/rng.h"
#include "model/cluster.h"
#include "policy/predictive.h"
#include "policy/slo_aware.h"
#include "predict/config_key.h"

namespace tessera {
namespace {

constexpr const char* kModels[] = {"A100-80GB", "H100-80GB", "A30-24GB", "V100-32GB"};
constexpr int kApps = 6;

predict::Predictor MakePredictor() {
  predict::ProfileMatrix m;
  predict::InterferenceMatrices im;
  for (int i = 0; i < kApps; ++i) {
    const std::string app = fmt::format("app{}", i);
    for (const char* name : kModels) {
      const model::GpuModel& g = model::GetGpuModel(*model::FindGpuModel(name));
      std::vector<std::pair<std::string, double>> parts = {{"whole", 1.0}};
      for (const model::MigProfile& p : g.mig_profiles) {
        parts.emplace_back(p.name, static_cast<double>(p.compute_slices) / g.mig_compute_slices);
      }
      for (const auto& [profile, share] : parts) {
        for (int pct : {100, 50, 25}) {
          m.Observe(m.AddRow(app), m.AddCol(predict::ConfigKey(name, profile, pct)),
                    (20.0 + 10 * i) * std::pow(share * pct / 100.0, 0.3));
        }
      }
    }
    for (int j = 0; j < kApps; ++j) {
      if (!im.Observe("mps", app, fmt::format("app{}", j), 0.02 * (1 + (i * j) % 5))) std::abort();
    }
  }
  auto p = predict::Predictor::Create(std::move(m), std::move(im));
  if (!p) std::abort();
  return std::move(*p);
}

struct Setup {
  model::ClusterState cluster;
  telemetry::StaticTelemetry telemetry;
};

std::unique_ptr<Setup> Build() {
  auto s = std::make_unique<Setup>();
  model::ClusterState& c = s->cluster;
  for (int n = 0; n < 1000; ++n) {
    auto ok = c.AddNode(model::UniformNode(
        fmt::format("node-{}", n), *model::FindGpuModel(kModels[n % 4]), 8, 256000, 1 << 21));
    if (!ok) std::abort();
  }
  // 20,000 workloads: 2 on every GPU, a third on every other GPU.
  model::WorkloadId id = 1;
  for (int round = 0; round < 3; ++round) {
    for (model::GpuIndex g = 0; g < c.gpu_count() && id <= 20000; ++g) {
      if (round == 2 && g % 2 == 1) continue;
      model::Workload w;
      w.id = id;
      w.app = fmt::format("app{}", id % kApps);
      w.slo_qps = 15 + static_cast<double>(id % 20);
      w.cpu_milli = 100;
      w.memory_mib = 256;
      w.gpu.count = 1;
      const model::PartitionIndex p = model::ClusterState::PartitionOf(g, 0);
      if (!c.Place(w, {id, c.gpu(g).node, {{p, 250, c.partition(p).memory_mib / 4}}})) std::abort();
      ++id;
    }
  }
  Rng rng(3);
  for (model::GpuIndex g = 0; g < c.gpu_count(); ++g) {
    s->telemetry.SetUtilization(c.partition(model::ClusterState::PartitionOf(g, 0)).uuid,
                                rng.Uniform(0.2, 0.9));
  }
  return s;
}

model::Workload Incoming(double slo = 25) {
  model::Workload w;
  w.id = 1'000'000;
  w.app = "app2";
  w.slo_qps = slo;
  w.cpu_milli = 100;
  w.memory_mib = 256;
  w.gpu.count = 1;
  return w;
}

int ScoreAll(policy::Policy& p, const model::Workload& w, const model::ClusterState& c) {
  int feasible = 0;
  double best = -1;
  for (model::NodeIndex n = 0; n < c.node_count(); ++n) {
    if (!p.Filter(w, n, c).ok()) continue;
    if (auto cand = p.Score(w, n, c)) {
      ++feasible;
      best = std::max(best, cand->score);
    }
  }
  benchmark::DoNotOptimize(best);
  return feasible;
}

template <typename P>
void ScoreAllNodes(benchmark::State& state, double slo = 25) {
  const predict::Predictor predictor = MakePredictor();
  std::unique_ptr<Setup> s = Build();
  P p(predictor, &s->telemetry);
  const model::Workload w = Incoming(slo);
  ScoreAll(p, w, s->cluster);  // warm the per-partition caches
  int feasible = 0;
  for (auto _ : state) feasible = ScoreAll(p, w, s->cluster);
  state.counters["feasible_nodes"] = feasible;
  state.counters["placed"] = static_cast<double>(s->cluster.placed_count());
}

template <typename P>
void ScoreAllNodesCold(benchmark::State& state, double slo = 25) {
  const predict::Predictor predictor = MakePredictor();
  std::unique_ptr<Setup> s = Build();
  P p(predictor, &s->telemetry);
  const model::Workload w = Incoming(slo);
  model::Workload probe = Incoming();
  probe.id = 2'000'000;
  probe.gpu.memory_mib = 0;
  int feasible = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // A placement and removal on every node moves its version: every cache entry is stale.
    for (model::NodeIndex n = 0; n < s->cluster.node_count(); ++n) {
      const model::PartitionIndex part =
          model::ClusterState::PartitionOf(s->cluster.node(n).first_gpu, 0);
      if (!s->cluster.Place(probe, {probe.id, n, {{part, 10, 0}}}) ||
          !s->cluster.Remove(probe.id)) {
        std::abort();
      }
    }
    state.ResumeTiming();
    feasible = ScoreAll(p, w, s->cluster);
  }
  state.counters["feasible_nodes"] = feasible;
}

void BM_PredictiveScoreAllNodes(benchmark::State& state) {
  ScoreAllNodes<policy::Predictive>(state);
}
BENCHMARK(BM_PredictiveScoreAllNodes)->Unit(benchmark::kMicrosecond);
void BM_PredictiveScoreAllNodesCold(benchmark::State& state) {
  ScoreAllNodesCold<policy::Predictive>(state);
}
BENCHMARK(BM_PredictiveScoreAllNodesCold)->Unit(benchmark::kMicrosecond);
// Arg: the SLO. At 25 QPS no node is admissible for slo-aware (the pod would wait); at 8 every
// node is.
void BM_SloAwareScoreAllNodes(benchmark::State& state) {
  ScoreAllNodes<policy::SloAware>(state, static_cast<double>(state.range(0)));
}
BENCHMARK(BM_SloAwareScoreAllNodes)->Arg(25)->Arg(8)->Unit(benchmark::kMicrosecond);
void BM_SloAwareScoreAllNodesCold(benchmark::State& state) {
  ScoreAllNodesCold<policy::SloAware>(state, static_cast<double>(state.range(0)));
}
BENCHMARK(BM_SloAwareScoreAllNodesCold)->Arg(25)->Arg(8)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
