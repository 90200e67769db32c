#pragma once
// Shared by the tests of the policies that share GPUs by memory (gpushare, resource-aware,
// knots-*): pods that ask for GPU memory, V100-32GB nodes (32,768 MiB per GPU, seed 003's card)
// and series fed into a StaticTelemetry at 1 Hz, as DCGM samples them in 003 and 004.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "model/cluster.h"
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

}  // namespace tessera::policy::testing
