#include "agent/nvml_backend.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_nvml/fake_nvml_fixture.h"

namespace tessera::agent {
namespace {

// Without the driver's library (this machine, CI) opening NVML is a clear Error, not a crash.
TEST(NvmlBackendTest, MissingLibraryIsAnErrorNamingIt) {
  auto b = NvmlBackend::Open("libnvidia-ml-not-here.so.1");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("libnvidia-ml-not-here.so.1"), std::string::npos)
      << b.error().message;
}

// A library that is not NVML at all lacks its symbols.
TEST(NvmlBackendTest, LibraryWithoutNvmlSymbolsIsRefused) {
  auto b = NvmlBackend::Open("libm.so.6");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("lacks nvmlInit_v2"), std::string::npos) << b.error().message;
}

}  // namespace
}  // namespace tessera::agent

namespace tessera::agent {
namespace {

// The stand-in library (tests/agent/fake_nvml/fake_nvml.cc) describes the expected node.
class FakeNvmlTest : public FakeNvmlFixture {
 protected:
  void SetUp() override {
    FakeNvmlFixture::SetUp();
    if (HasFatalFailure()) return;
    fail_ = Control<void (*)(int)>("fake_nvml_fail_count");
    ASSERT_NE(fail_, nullptr);
  }
  void (*fail_)(int) = nullptr;
};

TEST_F(FakeNvmlTest, DiscoversModelsMigInstancesAndLostGpus) {
  auto gpus = backend_->Discover();
  ASSERT_TRUE(gpus) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 3u);
  const store::GpuInventory& a100 = (*gpus)[0];
  EXPECT_EQ(a100.uuid, "GPU-f0");
  EXPECT_EQ(a100.model, "A100-40GB");  // from the NVML product name
  EXPECT_TRUE(a100.mig_enabled);
  ASSERT_EQ(a100.partitions.size(), 2u);  // slot 1 is empty
  // Profile 9 = 3g.20gb at slice 4, GI 1; profile 19 = 1g.5gb at slice 0, GI 5 (the catalog's
  // gi_profile_id); memory is the profile's nominal size, not NVML's usable 19968 MiB.
  EXPECT_EQ(a100.partitions[0], (store::PartitionInventory{"MIG-f0a", "3g.20gb", 1, 4, 20480}));
  EXPECT_EQ(a100.partitions[1], (store::PartitionInventory{"MIG-f0b", "1g.5gb", 5, 0, 5120}));
  const store::GpuInventory& h100 = (*gpus)[1];
  EXPECT_EQ(h100.model, "H100-80GB");
  EXPECT_FALSE(h100.mig_enabled);
  EXPECT_EQ(h100.memory_mib, 81559);
  ASSERT_EQ(h100.partitions.size(), 1u);
  EXPECT_EQ(h100.partitions[0].uuid, "GPU-f1");
  EXPECT_TRUE((*gpus)[2].lost);
  // What the agent publishes becomes a node the cluster model accepts.
  store::NodeInventory inv{.node = "gpu-node", .gpus = *gpus};
  auto spec = store::ToNodeSpec(inv);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->gpus.size(), 2u);  // the lost GPU is left out
}

TEST_F(FakeNvmlTest, ReadsUtilisationMemoryPowerAndEnergy) {
  auto gpus = backend_->Discover();
  ASSERT_TRUE(gpus);
  auto s = backend_->Sample(*gpus);
  ASSERT_TRUE(s) << s.error().message;
  const GpuSample& h100 = (*s)[1];
  EXPECT_EQ(h100.gpu_util_pct, 37);
  EXPECT_EQ(h100.partitions[0].activity, 0.37);
  EXPECT_EQ(h100.power_w, 250);
  EXPECT_EQ(h100.energy_mj, 123456789);
  EXPECT_EQ(h100.partitions[0].fb_used_mib, 2048);
  EXPECT_EQ(h100.partitions[0].fb_free_mib, 81559 - 2048);
  const GpuSample& a100 = (*s)[0];
  EXPECT_EQ(a100.power_w, 180);
  EXPECT_EQ(a100.gpu_util_pct, std::nullopt);  // not reported for a MIG GPU
  EXPECT_EQ(a100.partitions[0].fb_used_mib, 1024);
  EXPECT_EQ(a100.partitions[1].fb_used_mib, 512);
  EXPECT_EQ(a100.partitions[0].activity, std::nullopt);  // needs DCGM profiling: unknown
  EXPECT_EQ((*s)[2].power_w, std::nullopt);              // lost
  // MPS: the H100's 2 clients imply a server, whose answers NVML cannot tell; MIG GPUs and lost
  // ones have no MPS reading.
  EXPECT_EQ(h100.mps, (MpsSample{.server = true, .clients = 2}));
  EXPECT_EQ(a100.mps, std::nullopt);
  EXPECT_EQ((*s)[2].mps, std::nullopt);
}

// The usage series through NVML: the SM clock, a whole GPU's DRAM activity (utilization.memory
// 12 %), and each compute process with its memory (unknown: no value) and newest utilisation sample
// (40 % SM, 10 % memory, not the older 90 %); a MIG process lands on its instance by GI id, one of
// an instance the inventory lacks is left out.
TEST_F(FakeNvmlTest, ReadsSmClockAndComputeProcesses) {
  auto gpus = backend_->Discover();
  ASSERT_TRUE(gpus);
  auto s = backend_->Sample(*gpus);
  ASSERT_TRUE(s) << s.error().message;
  const GpuSample& h100 = (*s)[1];
  EXPECT_EQ(h100.sm_clock_mhz, 1755);
  EXPECT_EQ(h100.partitions[0].dram_active, 0.12);
  EXPECT_EQ(h100.partitions[0].sm_active, std::nullopt);  // needs DCGM profiling
  ASSERT_EQ(h100.processes.size(), 2u);
  EXPECT_EQ(
      h100.processes[0],
      (ProcessSample{
          .pid = 100, .partition_uuid = "GPU-f1", .fb_used_mib = 3072, .sm = 0.4, .dram = 0.1}));
  EXPECT_EQ(h100.processes[1], (ProcessSample{.pid = 101, .partition_uuid = "GPU-f1"}));
  const GpuSample& a100 = (*s)[0];
  EXPECT_EQ(a100.sm_clock_mhz, 1410);
  EXPECT_EQ(a100.partitions[1].dram_active, std::nullopt);
  ASSERT_EQ(a100.processes.size(), 1u);
  EXPECT_EQ(a100.processes[0],
            (ProcessSample{.pid = 200, .partition_uuid = "MIG-f0b", .fb_used_mib = 256}));
  EXPECT_EQ((*s)[2].sm_clock_mhz, std::nullopt);  // lost
  EXPECT_TRUE((*s)[2].processes.empty());
  // Listed: the lists are whole (a pod placed there with none runs nothing); the lost GPU's
  // could not be read.
  EXPECT_TRUE(h100.processes_listed);
  EXPECT_TRUE(a100.processes_listed);
  EXPECT_FALSE((*s)[2].processes_listed);
}

TEST_F(FakeNvmlTest, DriverErrorIsAnErrorWithNvmlsText) {
  fail_(1);
  auto gpus = backend_->Discover();
  ASSERT_FALSE(gpus);
  EXPECT_NE(gpus.error().message.find("Unknown Error"), std::string::npos) << gpus.error().message;
}

}  // namespace
}  // namespace tessera::agent

namespace tessera::agent {
namespace {

// The agent's NVML path fed what NVML answered on a real H200 (driver 580.159.04;
// tests/agent/fixtures/h200/README.md, docs/runtime.md "On a real GPU"), held against what
// nvidia-smi -q printed at the same moment (its XML, read into nvidia-smi-*.json by
// tools/characterise/compare_agent.py). Two reads a second apart: memory in use within 16 MiB,
// power within 3 % + 2 W, clocks 30 MHz.
class RealH200Test : public FakeNvmlFixture {
 protected:
  // Loads state `name` (idle, busy: one CUDA process; mps: one MPS client and its server).
  void Load(const std::string& name) {
    const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fixtures/h200/";
    std::ifstream in(dir + "nvidia-smi-" + name + ".json");
    smi_ = nlohmann::json::parse(in);
    auto load = Control<int (*)(const char*, unsigned long long)>("fake_nvml_load");
    ASSERT_NE(load, nullptr);
    ASSERT_EQ(load((dir + "nvml-" + name + ".json").c_str(),
                   smi_["memory_reserved_mib"].get<unsigned long long>()),
              0);
    auto gpus = backend_->Discover();
    ASSERT_TRUE(gpus) << gpus.error().message;
    ASSERT_EQ(gpus->size(), 1u);
    gpu_ = (*gpus)[0];
    auto s = backend_->Sample(*gpus);
    ASSERT_TRUE(s) << s.error().message;
    sample_ = (*s)[0];
  }
  double Smi(const char* field) const { return smi_[field].get<double>(); }
  nlohmann::json smi_;
  store::GpuInventory gpu_;
  GpuSample sample_;
};

TEST_F(RealH200Test, InventoryIsWhatNvidiaSmiNames) {
  Load("idle");
  EXPECT_EQ(gpu_.product_name, smi_["product_name"]);
  EXPECT_EQ(gpu_.uuid, smi_["uuid"]);
  EXPECT_EQ(gpu_.model, "H200-141GB");  // "NVIDIA H200" in the catalog
  EXPECT_EQ(gpu_.memory_mib, Smi("memory_total_mib"));
  EXPECT_EQ(gpu_.mig_enabled, smi_["mig_enabled"].get<bool>());
  ASSERT_EQ(gpu_.partitions.size(), 1u);
  EXPECT_EQ(gpu_.partitions[0].uuid, gpu_.uuid);
}

// Memory in use is nvidia-smi's "Used", without the 616 MiB the driver reserves: NVML's v1
// answer counts them (6105 MiB busy where nvidia-smi printed 5491), so the agent asks v2.
TEST_F(RealH200Test, ReadingsAreWhatNvidiaSmiPrinted) {
  for (const char* state : {"idle", "busy", "mps"}) {
    SCOPED_TRACE(state);
    Load(state);
    ASSERT_EQ(sample_.partitions.size(), 1u);
    const PartitionSample& p = sample_.partitions[0];
    EXPECT_NEAR(*p.fb_used_mib, Smi("memory_used_mib"), 16);
    EXPECT_NEAR(*p.fb_free_mib, Smi("memory_free_mib"), 16);
    EXPECT_NEAR(*sample_.gpu_util_pct, Smi("gpu_util_pct"), 5);
    EXPECT_NEAR(*p.activity, Smi("gpu_util_pct") / 100, 0.05);
    EXPECT_NEAR(*p.dram_active, Smi("memory_util_pct") / 100, 0.05);
    EXPECT_NEAR(*sample_.sm_clock_mhz, Smi("sm_clock_mhz"), 30);
    // Idle the two reads agree to the watt, under MPS within 1 %. The busy dumps fell a second
    // apart while the load ramped up (NVML 515 W, then nvidia-smi 695 W): no common moment.
    if (std::string(state) != "busy") {
      EXPECT_NEAR(*sample_.power_w, Smi("power_w"), 0.03 * Smi("power_w") + 2);
    }
    ASSERT_TRUE(sample_.mps.has_value());
    EXPECT_EQ(sample_.mps->clients, smi_["mps_clients"].get<int>());
    EXPECT_EQ(sample_.processes.size(), smi_["processes"].get<size_t>());
    EXPECT_TRUE(sample_.processes_listed);
  }
}

// The busy state's one process: its memory as nvidia-smi's process list gives it (5482 MiB), and
// its SM share from NVML's process samples (52 %).
TEST_F(RealH200Test, ProcessMemoryAndShare) {
  Load("busy");
  ASSERT_EQ(sample_.processes.size(), 1u);
  EXPECT_EQ(sample_.processes[0].pid, 555u);
  EXPECT_EQ(sample_.processes[0].fb_used_mib, 5482);
  EXPECT_DOUBLE_EQ(*sample_.processes[0].sm, 0.52);
  EXPECT_EQ(sample_.processes[0].partition_uuid, gpu_.uuid);
}

}  // namespace
}  // namespace tessera::agent
