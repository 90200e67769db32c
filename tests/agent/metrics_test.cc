#include "agent/metrics.h"

#include <gtest/gtest.h>

namespace tessera::agent {
namespace {

std::vector<store::GpuInventory> Gpus() {
  store::GpuInventory whole{.index = 0,
                            .uuid = "GPU-w",
                            .product_name = "NVIDIA A30",
                            .model = "A30-24GB",
                            .memory_mib = 24576};
  whole.partitions = {{"GPU-w", "", -1, 0, 24576}};
  store::GpuInventory mig{.index = 1,
                          .uuid = "GPU-m",
                          .product_name = "NVIDIA A100-SXM4-40GB",
                          .model = "A100-40GB",
                          .memory_mib = 40960,
                          .mig_enabled = true};
  mig.partitions = {{"MIG-1", "3g.20gb", 2, 0, 20480}};
  return {whole, mig};
}

TEST(MetricsTest, DcgmNamesAndLabelsForWholeGpusAndMigInstances) {
  std::vector<GpuSample> s(2);
  s[0] = {
      .gpu_util_pct = 65, .power_w = 120, .energy_mj = 5000, .partitions = {{0.65, 8192, 16384}}};
  s[1] = {.power_w = 180, .partitions = {{0.42, 6144, 14336}}};
  const std::string text = RenderDcgmMetrics("node-1", Gpus(), s, {});
  const std::string w = R"(gpu="0",UUID="GPU-w",modelName="NVIDIA A30",Hostname="node-1")";
  const std::string m =
      R"(gpu="1",UUID="GPU-m",modelName="NVIDIA A100-SXM4-40GB",Hostname="node-1")";
  for (const std::string& line : {
           "DCGM_FI_DEV_FB_USED{" + w + R"(,partition_uuid="GPU-w"} 8192)",
           "DCGM_FI_DEV_FB_FREE{" + w + R"(,partition_uuid="GPU-w"} 16384)",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + w + R"(,partition_uuid="GPU-w"} 0.65)",
           "DCGM_FI_DEV_GPU_UTIL{" + w + R"(,partition_uuid="GPU-w"} 65)",
           "DCGM_FI_DEV_POWER_USAGE{" + w + R"(,partition_uuid="GPU-w"} 120)",
           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + w + R"(,partition_uuid="GPU-w"} 5000)",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" + m +
               R"(,GPU_I_PROFILE="3g.20gb",GPU_I_ID="2",partition_uuid="MIG-1"} 0.42)",
           "DCGM_FI_DEV_FB_USED{" + m +
               R"(,GPU_I_PROFILE="3g.20gb",GPU_I_ID="2",partition_uuid="MIG-1"} 6144)",
           "DCGM_FI_DEV_POWER_USAGE{" + m + "} 180",
           std::string("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"),
       }) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\nin:\n" << text;
  }
  // Unknown readings have no series at all: no GPU_UTIL for the MIG GPU, no energy for it.
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL{" + m), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" + m), std::string::npos);
}

TEST(MetricsTest, OneSeriesPerPodSharingAPartition) {
  std::vector<GpuSample> s(2);
  s[0].partitions.resize(1);
  s[1].partitions = {{0.5, std::nullopt, std::nullopt}};
  const Attribution pods = {{"MIG-1", {{"a", "ml"}, {"b", "ml"}}}};
  const std::string text = RenderDcgmMetrics("n", Gpus(), s, pods);
  EXPECT_NE(text.find(R"(partition_uuid="MIG-1",pod="a",namespace="ml"} 0.5)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(partition_uuid="MIG-1",pod="b",namespace="ml"} 0.5)"), std::string::npos);
}

// NVML's MPS reading knows the clients, not always the server: no tessera_mps_server_up then,
// never a 0 that would read as "no server". A lost GPU has no MPS series.
TEST(MetricsTest, MpsSeriesOnlyForWhatIsKnown) {
  std::vector<store::GpuInventory> gpus = Gpus();
  std::map<std::string, MpsStuckDetector> d;
  d.try_emplace("GPU-w").first->second.Observe(0, MpsSample{.clients = 0}, 0.0);
  d.try_emplace("GPU-m").first->second.Observe(0, MpsSample{.server = true, .clients = 1}, 0.0);
  gpus[1].lost = true;
  const std::string text = RenderMpsMetrics("n", gpus, d);
  const std::string w = R"({gpu="0",UUID="GPU-w",modelName="NVIDIA A30",Hostname="n"})";
  EXPECT_NE(text.find("tessera_mps_clients" + w + " 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tessera_mps_server_stuck" + w + " 0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("tessera_mps_server_up"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU-m"), std::string::npos) << text;
}

TEST(MetricsTest, EscapesLabelValues) { EXPECT_EQ(EscapeLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

}  // namespace
}  // namespace tessera::agent
