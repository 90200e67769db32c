#pragma once
// Shared by the tests of the policies that share GPUs by memory (gpushare, resource-aware,
// knots-*): pods that ask for GPU memory, V100-32GB nodes (32,768 MiB per GPU, seed 003's card)
// and series fed into a StaticTelemetry at 1 Hz, as DCGM samples them in 003 and 004.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "model/cluster.h"
#include "policy/usage_view.h"
#include "telemetry/telemetry.h"

namespace tessera::policy::testing {

inline constexpr int64_t kV100Mib = 32768;

// One GPU, `mib` of GPU memory asked for, the whole GPU's compute as a cap.
inline model::Workload MemoryPod(model::WorkloadId id, int64_t mib, std::string app = "",
                                 double arrival_s = 0) {
  model::Workload w;
  w.id = id;
  w.name = fmt::format("pod{}", id);
  w.app = std::move(app);
  w.cpu_milli = 1000;
  w.memory_mib = 1024;
  w.gpu.count = 1;
  w.gpu.milli = 1000;
  w.gpu.memory_mib = mib;
  w.arrival_s = arrival_s;
  return w;
}

// `nodes` nodes "v<n>" of `gpus` V100-32GB GPUs each.
inline void AddV100Nodes(model::ClusterState& c, int nodes, int gpus) {
  for (int n = 0; n < nodes; ++n) {
    ASSERT_TRUE(c.AddNode(model::UniformNode(
        fmt::format("v{}", n), *model::FindGpuModel("V100-32GB"), gpus, 64000, 1 << 20)));
  }
}

// Samples values[i] at t0 + i seconds into `key`'s memory series.
inline void FeedMemory(telemetry::StaticTelemetry& t, std::string_view key, double t0,
                       std::span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i) t.AddMemorySample(key, t0 + double(i), values[i]);
}
inline void FeedSm(telemetry::StaticTelemetry& t, std::string_view key, double t0,
                   std::span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i) t.AddSmActivitySample(key, t0 + double(i), values[i]);
}
inline void FeedBandwidth(telemetry::StaticTelemetry& t, std::string_view key, double t0,
                          std::span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i) t.AddBandwidthSample(key, t0 + double(i), values[i]);
}

// Series the Kube-Knots and resource-aware tests feed over t = 4..9 (MiB used, SM activity).
inline constexpr double kRising[] = {21000, 22000, 23000, 24000, 25000, 26000};
inline constexpr double kInPhase[] = {0.1, 0.3, 0.1, 0.3, 0.1, 0.3};
// Used memory approaching a V100's 32,768 MiB, five samples.
inline constexpr double kApproach[] = {12000, 16000, 18000, 19000, 19500};

// A Kube-Knots scene on node v0: GPU 0 holds pod 100 of application "a"; GPU 1 holds pod 101
// of application "b", whose own series (by its name, t = 0..9) are b's history, and GPU 1 is
// steady at 30,000 MiB used (2,768 free: too little for a b pod). Memory history of b:
// 4000, 4100, …, 4800, 9000 MiB → p90 at rank 0.9·9 = 8.1: 4800 + 0.1·4200 = 5,220 MiB. Its
// last 5 s (t = 4..9): memory 4400, 4500, 4600, 4700, 4800, 9000; SM 0.1, 0.2 alternating;
// bandwidth 0.1, 0.3 alternating. Pods reserve no memory, as knots-cbp places them.
struct KnotsScene {
  model::ClusterState c;
  telemetry::StaticTelemetry t;

  void Build() {
    AddV100Nodes(c, 1, 2);
    Hold(0, MemoryPod(100, 8192, "a"));
    Hold(1, MemoryPod(101, 8192, "b"));
    for (int i = 0; i < 10; ++i) {
      t.AddMemorySample("pod101", i, i < 9 ? 4000 + 100 * i : 9000);
      t.AddSmActivitySample("pod101", i, i % 2 == 0 ? 0.1 : 0.2);
      t.AddBandwidthSample("pod101", i, i % 2 == 0 ? 0.1 : 0.3);
      if (i >= 4) t.AddMemorySample(c.gpu(1).uuid, i, 30000);
    }
  }
  void Hold(GpuIndex g, const model::Workload& w) {
    ASSERT_TRUE(c.Place(w, MemorySharePlacement(w, g, 0, c)));
  }
  // GPU 0's series over t = 4..9 (each may be empty).
  void FeedGpu0(std::span<const double> memory, std::span<const double> sm,
                std::span<const double> bandwidth) {
    FeedMemory(t, c.gpu(0).uuid, 4, memory);
    FeedSm(t, c.gpu(0).uuid, 4, sm);
    FeedBandwidth(t, c.gpu(0).uuid, 4, bandwidth);
  }
};

}  // namespace tessera::policy::testing
