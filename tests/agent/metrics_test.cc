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

// The usage series: SM and DRAM activity per partition with the partition's labels, the
// SM clock per GPU with the power's, and no series for what is unknown.
TEST(MetricsTest, SmAndDramActivityPerPartitionAndSmClockPerGpu) {
  std::vector<GpuSample> s(2);
  s[0] = {.sm_clock_mhz = 1440, .partitions = {{0.65, 8192, 16384, 0.5, 0.25}}};
  s[1] = {.partitions = {{0.42, 6144, 14336, std::nullopt, 0.125}}};
  const std::string text = RenderDcgmMetrics("node-1", Gpus(), s, {});
  const std::string w = R"(gpu="0",UUID="GPU-w",modelName="NVIDIA A30",Hostname="node-1")";
  const std::string m =
      R"(gpu="1",UUID="GPU-m",modelName="NVIDIA A100-SXM4-40GB",Hostname="node-1")";
  for (const std::string& line : {
           "DCGM_FI_PROF_SM_ACTIVE{" + w + R"(,partition_uuid="GPU-w"} 0.5)",
           "DCGM_FI_PROF_DRAM_ACTIVE{" + w + R"(,partition_uuid="GPU-w"} 0.25)",
           "DCGM_FI_DEV_SM_CLOCK{" + w + R"(,partition_uuid="GPU-w"} 1440)",
           "DCGM_FI_PROF_DRAM_ACTIVE{" + m +
               R"(,GPU_I_PROFILE="3g.20gb",GPU_I_ID="2",partition_uuid="MIG-1"} 0.125)",
           std::string("# TYPE DCGM_FI_PROF_SM_ACTIVE gauge"),
           std::string("# TYPE DCGM_FI_DEV_SM_CLOCK gauge"),
       }) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\nin:\n" << text;
  }
  EXPECT_EQ(text.find("DCGM_FI_PROF_SM_ACTIVE{" + m), std::string::npos) << text;
  EXPECT_EQ(text.find("DCGM_FI_DEV_SM_CLOCK{" + m), std::string::npos) << text;
  // Nothing known anywhere: not even the HELP lines.
  std::vector<GpuSample> none(2);
  none[0].partitions.resize(1);
  none[1].partitions.resize(1);
  const std::string empty = RenderDcgmMetrics("node-1", Gpus(), none, {});
  EXPECT_EQ(empty.find("SM_ACTIVE"), std::string::npos) << empty;
  EXPECT_EQ(empty.find("DRAM_ACTIVE"), std::string::npos) << empty;
  EXPECT_EQ(empty.find("SM_CLOCK"), std::string::npos) << empty;
}

// A pod's processes on one partition are summed: 2048 + 1024 MiB = 3072 MiB, SM 0.25 + 0.125 =
// 0.375; a process of no known pod is left out and counted, as is one whose pod uid names no
// placement on the node.
TEST(MetricsTest, PodSeriesSumThePodsProcessesPerPartition) {
  std::vector<GpuSample> s(2);
  s[0].partitions.resize(1);
  s[0].processes = {
      {.pid = 1, .partition_uuid = "GPU-w", .fb_used_mib = 2048, .sm = 0.25, .pod_uid = "u-a"},
      {.pid = 2, .partition_uuid = "GPU-w", .fb_used_mib = 1024, .sm = 0.125, .pod_uid = "u-a"},
      {.pid = 3, .partition_uuid = "GPU-w", .fb_used_mib = 512, .dram = 0.5, .pod_uid = "u-b"},
      {.pid = 4, .partition_uuid = "GPU-w", .fb_used_mib = 100},                    // no pod
      {.pid = 5, .partition_uuid = "GPU-w", .fb_used_mib = 100, .pod_uid = "u-x"},  // no placement
  };
  s[1].partitions.resize(1);
  s[1].processes = {
      {.pid = 6, .partition_uuid = "MIG-1", .fb_used_mib = 4096, .dram = 0.75, .pod_uid = "u-a"}};
  const PodsByUid pods = {{"u-a", {"train-0", "ml"}}, {"u-b", {"infer-0", "web"}}};
  const PodUsageMetrics got = RenderPodMetrics("node-1", Gpus(), s, pods);
  const std::string& text = got.text;
  const std::string w =
      R"(gpu="0",UUID="GPU-w",modelName="NVIDIA A30",Hostname="node-1",partition_uuid="GPU-w")";
  const std::string m =
      R"(gpu="1",UUID="GPU-m",modelName="NVIDIA A100-SXM4-40GB",Hostname="node-1",)"
      R"(GPU_I_PROFILE="3g.20gb",GPU_I_ID="2",partition_uuid="MIG-1")";
  for (const std::string& line : {
           "tessera_pod_fb_used_mib{" + w + R"(,pod="train-0",namespace="ml"} 3072)",
           "tessera_pod_sm_active{" + w + R"(,pod="train-0",namespace="ml"} 0.375)",
           "tessera_pod_fb_used_mib{" + w + R"(,pod="infer-0",namespace="web"} 512)",
           "tessera_pod_dram_active{" + w + R"(,pod="infer-0",namespace="web"} 0.5)",
           "tessera_pod_fb_used_mib{" + m + R"(,pod="train-0",namespace="ml"} 4096)",
           "tessera_pod_dram_active{" + m + R"(,pod="train-0",namespace="ml"} 0.75)",
           std::string("# TYPE tessera_pod_fb_used_mib gauge"),
           std::string("# HELP tessera_pod_sm_active "),
           std::string(R"(tessera_agent_unattributed_processes{Hostname="node-1"} 2)"),
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
  EXPECT_EQ(got.unattributed, 2);
  // What none of a pod's processes reports has no series: no DRAM for train-0 on GPU-w, no SM
  // for infer-0, no SM anywhere on the MIG instance.
  EXPECT_EQ(text.find("tessera_pod_dram_active{" + w + R"(,pod="train-0")"), std::string::npos);
  EXPECT_EQ(text.find("tessera_pod_sm_active{" + w + R"(,pod="infer-0")"), std::string::npos);
  EXPECT_EQ(text.find("tessera_pod_sm_active{" + m), std::string::npos) << text;
  EXPECT_EQ(text.find("u-x"), std::string::npos);
}

// A pod placed on a partition with no process of its own there runs nothing now (starting, or
// restarting after a crash): where the backend listed every process, it gets 0 for each series,
// so the usage-aware policies see it hold nothing (policy/usage_view.h: HoldsNothingNow); where
// the backend could not list them, nothing is said.
TEST(MetricsTest, APlacedPodWithNoProcessReadsZeroWhereProcessesWereListed) {
  std::vector<GpuSample> s(2);
  s[0].partitions.resize(1);
  s[0].processes = {{.pid = 1, .partition_uuid = "GPU-w", .fb_used_mib = 2048, .pod_uid = "u-a"}};
  s[0].processes_listed = true;
  s[1].partitions.resize(1);
  const PodsByUid pods = {{"u-a", {"train-0", "ml"}}, {"u-b", {"infer-0", "web"}}};
  const Attribution placed = {{"GPU-w", {{"train-0", "ml"}, {"infer-0", "web"}}},
                              {"MIG-1", {{"infer-0", "web"}}}};
  const std::string text = RenderPodMetrics("node-1", Gpus(), s, pods, placed).text;
  const std::string w =
      R"(gpu="0",UUID="GPU-w",modelName="NVIDIA A30",Hostname="node-1",partition_uuid="GPU-w")";
  for (const std::string& line : {
           "tessera_pod_fb_used_mib{" + w + R"(,pod="train-0",namespace="ml"} 2048)",
           "tessera_pod_fb_used_mib{" + w + R"(,pod="infer-0",namespace="web"} 0)",
           "tessera_pod_sm_active{" + w + R"(,pod="infer-0",namespace="web"} 0)",
           "tessera_pod_dram_active{" + w + R"(,pod="infer-0",namespace="web"} 0)",
       }) {
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\nin:\n" << text;
  }
  // GPU 1 did not list its processes: infer-0 there has no series.
  EXPECT_EQ(text.find("MIG-1"), std::string::npos) << text;
}

// Shares of one partition summed over a pod's processes stay within it (samples taken at
// slightly different instants can add past 1); a lost GPU's processes are not read.
TEST(MetricsTest, PodSharesAreCappedAtTheWholePartitionAndLostGpusAreNotRead) {
  std::vector<store::GpuInventory> gpus = Gpus();
  std::vector<GpuSample> s(2);
  s[0].partitions.resize(1);
  s[0].processes = {{.pid = 1, .partition_uuid = "GPU-w", .sm = 0.75, .pod_uid = "u-a"},
                    {.pid = 2, .partition_uuid = "GPU-w", .sm = 0.5, .pod_uid = "u-a"}};
  s[1].partitions.resize(1);
  s[1].processes = {{.pid = 3, .partition_uuid = "MIG-1", .fb_used_mib = 1, .pod_uid = "u-a"}};
  gpus[1].lost = true;
  const PodUsageMetrics got = RenderPodMetrics("n", gpus, s, {{"u-a", {"p", "ns"}}});
  EXPECT_NE(got.text.find(R"(partition_uuid="GPU-w",pod="p",namespace="ns"} 1)"
                          "\n"),
            std::string::npos)
      << got.text;
  EXPECT_EQ(got.text.find("MIG-1"), std::string::npos) << got.text;
  EXPECT_EQ(got.unattributed, 0);
}

TEST(MetricsTest, EscapesLabelValues) { EXPECT_EQ(EscapeLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

}  // namespace
}  // namespace tessera::agent
