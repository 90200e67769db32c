#include "agent/fake_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tessera::agent {
namespace {

using P = Script::Point;

Script Steps(bool loop, double period) {
  Script s;
  s.loop = loop;
  s.period_s = period;
  s.points = {{0, 0.2, 1024, 100}, {5, 0.8, std::nullopt, 300}};
  return s;
}

TEST(ScriptTest, HoldsEachPointUntilTheNextAndTheLastForever) {
  const Script s = Steps(false, 0);
  EXPECT_EQ(s.At(0, &P::util), 0.2);
  EXPECT_EQ(s.At(4.99, &P::util), 0.2);
  EXPECT_EQ(s.At(5, &P::util), 0.8);
  EXPECT_EQ(s.At(1000, &P::util), 0.8);
  EXPECT_EQ(s.At(1000, &P::fb_used_mib), 1024);  // the second point does not set it
  EXPECT_EQ(s.At(3, &P::power_w), 100);
  // ∫ power over [0, 8] = 5 s × 100 W + 3 s × 300 W = 1400 J.
  EXPECT_DOUBLE_EQ(s.Integral(0, 8, &P::power_w), 1400);
  EXPECT_DOUBLE_EQ(s.Integral(2, 6, &P::power_w), 3 * 100 + 1 * 300);
}

TEST(ScriptTest, LoopsEveryPeriod) {
  const Script s = Steps(true, 10);
  EXPECT_EQ(s.At(13, &P::util), 0.2);
  EXPECT_EQ(s.At(17, &P::util), 0.8);
  EXPECT_EQ(s.At(1700000004.5, &P::util), 0.2);  // Unix time: 4.5 s into a period
  // One period holds 5 × 100 + 5 × 300 = 2000 J; [0, 27] = 2 periods + 5 × 100 + 2 × 300.
  EXPECT_DOUBLE_EQ(s.Integral(0, 27, &P::power_w), 2 * 2000 + 500 + 600);
}

std::string Where(const std::string& text) {
  auto r = ParseFakeNode(text, "node.yaml");
  EXPECT_FALSE(r) << text;
  return r ? "" : r.error().message;
}

TEST(FakeNodeTest, MalformedFilesNameTheFileAndLine) {
  EXPECT_EQ(Where("node: n\ngpus:\n  - model: H100-80GB\n  - model: Z9000\n").substr(0, 12),
            "node.yaml:4:");
  EXPECT_EQ(Where("node: n\ngpus: [ {model: A30-24GB\n").substr(0, 10), "node.yaml:");
  EXPECT_NE(Where("node: n\ngpus:\n  - model: A30-24GB\n    mig: \"4g.24gb@0,1g.6gb@0\"\n")
                .find("node.yaml:4:"),
            std::string::npos);
  EXPECT_NE(Where("node: n\ngpus:\n  - model: A30-24GB\n    script:\n      points:\n"
                  "        - {t: 0, util: 1.5}\n")
                .find("node.yaml:6: util must lie in 0..1"),
            std::string::npos);
  EXPECT_NE(Where("gpus: []\n").find("missing 'node'"), std::string::npos);
  EXPECT_NE(Where("node: n\ngpus:\n  - model: A30-24GB\n    lost: maybe\n").find("node.yaml:4:"),
            std::string::npos);
}

// Values a GPU cannot report, and keys the format does not have (typos), are refused with the
// file and line rather than read as something else: cpu_milli -5 does not fall back to the
// host's CPUs, util .nan does not reach /metrics, a misspelt key is not silently ignored.
TEST(FakeNodeTest, OutOfRangeValuesAndUnknownKeysNameTheFileAndLine) {
  const std::string gpu = "node: n\ngpus:\n  - model: A30-24GB\n";
  const std::string point = gpu + "    script:\n      points:\n        - ";  // line 6
  struct Case {
    std::string text;
    std::string want;  // the whole message after "node.yaml:"
  } cases[] = {
      {"node: n\ncpu_milli: -5\ngpus: []\n", "2: cpu_milli -5 must not be negative"},
      {"node: n\nmemory_mib: -1\ngpus: []\n", "2: memory_mib -1 must not be negative"},
      {point + "{t: 0, util: .nan}\n", "6: util must lie in 0..1"},
      {point + "{t: 0, util: -0.5}\n", "6: util must lie in 0..1"},
      {point + "{t: 0, fb_used_mib: .inf}\n", "6: fb_used_mib must be a finite number"},
      {point + "{t: 0, fb_used_mib: -1}\n", "6: fb_used_mib must not be negative"},
      {point + "{t: 0, fb_used_mib: 30000}\n",
       "6: fb_used_mib 30000 exceeds the 24576 MiB of the GPU"},
      {point + "{t: 0, power_w: .nan}\n", "6: power_w must be a finite number"},
      {point + "{t: .nan, util: 0.5}\n", "6: t must be a finite number"},
      {gpu + "    script:\n      repeat: loop\n      period_s: .inf\n      points:\n"
             "        - {t: 0, util: 0.5}\n",
       "6: period_s must be a finite number"},
      {"node: n\ncpu_mili: 32000\ngpus: []\n",
       "2: unknown key 'cpu_mili' (known: node, cpu_milli, memory_mib, time_base, gpus)"},
      {gpu + "    uuid: GPU-x\n    scirpt: {points: [{t: 0}]}\n",
       "5: unknown key 'scirpt' (known: model, product_name, uuid, lost, mig, script, "
       "instances, mps, processes)"},
      {point + "{t: 0, utl: 0.5}\n",
       "6: unknown key 'utl' (known: t, util, fb_used_mib, power_w, sm_active, dram_active, "
       "sm_clock_mhz)"},
      {gpu + "    script:\n      repeat: loop\n      period: 10\n      points:\n"
             "        - {t: 0, util: 0.5}\n",
       "6: unknown key 'period' (known: repeat, period_s, points)"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"7g.40gb\"\n    instances:\n"
       "      - {uuid: MIG-a, gi: 2}\n",
       "6: unknown key 'gi' (known: uuid, gi_id, script)"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"7g.40gb\"\n    instances:\n"
       "      - {uuid: MIG-a, gi_id: -2}\n",
       "6: gi_id -2 must not be negative"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"1g.5gb@0\"\n    instances:\n"
       "      - script: {points: [{t: 0, fb_used_mib: 6000}]}\n",
       "6: fb_used_mib 6000 exceeds the 5120 MiB of MIG instance 1g.5gb"},
      // The MPS server's state (docs/runtime.md, "Stuck MPS server").
      {gpu + "    mps: {server: stuck, clients: 1}\n",
       "4: server 'stuck' is not one of running, hung, absent"},
      {gpu + "    mps: {clients: 1}\n", "4: missing 'server'"},
      {gpu + "    mps: {server: running, clients: -1}\n", "4: clients -1 must not be negative"},
      {gpu + "    mps: {server: running, clients: 1.5}\n", "4: 'clients' has the wrong type"},
      {gpu + "    mps: {server: absent, clients: 2}\n",
       "4: 2 clients need a server (server: absent)"},
      {gpu + "    mps: {server: running, client: 2}\n",
       "4: unknown key 'client' (known: server, clients)"},
      {gpu + "    mps: running\n", "4: 'mps' is a map: {server, clients} or {points}"},
      {gpu + "    mps:\n      points:\n        - {t: 0, server: running}\n"
             "        - {t: 0, server: hung}\n",
       "7: point times must increase"},
      {gpu + "    mps:\n      points:\n        - {t: .inf, server: running}\n",
       "6: t must be a finite number"},
      {gpu + "    mps:\n      repeat: loop\n      period_s: 10\n      points:\n"
             "        - {t: 0, server: running}\n        - {t: 10, server: hung}\n",
       "6: period_s must exceed the span of the points"},
      {gpu + "    mps:\n      server: running\n      points: [{t: 0, server: hung}]\n",
       "5: unknown key 'server' (known: repeat, period_s, points)"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"7g.40gb\"\n"
       "    mps: {server: running}\n",
       "5: 'mps' describes a whole GPU's MPS server; this GPU has MIG on"},
      // Usage series: SM and DRAM activity, the SM clock, per-process use.
      {point + "{t: 0, sm_active: 1.5}\n", "6: sm_active must lie in 0..1"},
      {point + "{t: 0, dram_active: .nan}\n", "6: dram_active must lie in 0..1"},
      {point + "{t: 0, dram_active: -0.1}\n", "6: dram_active must lie in 0..1"},
      {point + "{t: 0, sm_clock_mhz: -1}\n", "6: sm_clock_mhz must not be negative"},
      {point + "{t: 0, sm_clock_mhz: .inf}\n", "6: sm_clock_mhz must be a finite number"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"7g.40gb\"\n    instances:\n"
       "      - script: {points: [{t: 0, sm_clock_mhz: 1410}]}\n",
       "6: unknown key 'sm_clock_mhz' (known: t, util, fb_used_mib, power_w, sm_active, "
       "dram_active)"},
      {gpu + "    processes: {pid: 1}\n", "4: 'processes' must be a list"},
      {gpu + "    processes:\n      - {pod_uid: u}\n", "5: missing 'pid'"},
      {gpu + "    processes:\n      - {pid: -3}\n", "5: pid -3 must not be negative"},
      {gpu + "    processes:\n      - {pid: 0}\n", "5: pid 0 is not a process id"},
      {gpu + "    processes:\n      - {pid: 1, pod: u}\n",
       "5: unknown key 'pod' (known: pid, pod_uid, partition, script)"},
      {gpu + "    processes:\n      - {pid: 1, script: {points: [{t: 0, util: 0.5}]}}\n",
       "5: unknown key 'util' (known: t, fb_used_mib, sm_active, dram_active)"},
      {gpu + "    processes:\n      - {pid: 1, script: {points: [{t: 0, sm_active: 2}]}}\n",
       "5: sm_active must lie in 0..1"},
      {gpu + "    processes:\n      - {pid: 1, script: {points: [{t: 0, fb_used_mib: 30000}]}}\n",
       "5: fb_used_mib 30000 exceeds the 24576 MiB of the GPU"},
      {gpu + "    uuid: GPU-x\n    processes:\n      - {pid: 1, partition: GPU-y}\n",
       "6: partition 'GPU-y' is not one of this GPU's (GPU-x)"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"3g.20gb@0,3g.20gb@4\"\n"
       "    instances: [{uuid: MIG-a}, {uuid: MIG-b}]\n    processes:\n      - {pid: 7}\n",
       "7: a process on a MIG GPU needs 'partition': one of its instances"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"3g.20gb@0,3g.20gb@4\"\n"
       "    instances: [{uuid: MIG-a}, {uuid: MIG-b}]\n    processes:\n"
       "      - {pid: 7, partition: MIG-c}\n",
       "7: partition 'MIG-c' is not one of this GPU's (MIG-a, MIG-b)"},
      {"node: n\ngpus:\n  - model: A100-40GB\n    mig: \"3g.20gb@0,3g.20gb@4\"\n"
       "    instances: [{uuid: MIG-a}, {uuid: MIG-b}]\n    processes:\n"
       "      - {pid: 7, partition: MIG-b, script: {points: [{t: 0, fb_used_mib: 20481}]}}\n",
       "7: fb_used_mib 20481 exceeds the 20480 MiB of MIG instance 3g.20gb"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Where(c.text), "node.yaml:" + c.want) << c.text;
  }
}

TEST(FakeNodeTest, TheExampleFileDescribesTheDocumentedNode) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/agent/fake_node.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  auto node = ParseFakeNode(ss.str(), "fake_node.yaml");
  ASSERT_TRUE(node) << node.error().message;
  EXPECT_EQ(node->node, "fake-node-1");
  EXPECT_TRUE(node->epoch_time);
  ASSERT_EQ(node->gpus.size(), 2u);
  const auto& a100 = node->gpus[0].inventory;
  EXPECT_EQ(a100.model, "A100-40GB");
  EXPECT_TRUE(a100.mig_enabled);
  ASSERT_EQ(a100.partitions.size(), 3u);
  EXPECT_EQ(a100.partitions[1].profile, "2g.10gb");
  EXPECT_EQ(a100.partitions[1].memory_mib, 10240);
  EXPECT_EQ(a100.partitions[1].gi_id, 3);
  EXPECT_EQ(a100.partitions[2].start, 6);
  EXPECT_EQ(node->gpus[1].inventory.partitions[0].uuid, "GPU-22222222-2222-4222-8222-222222222222");
  EXPECT_EQ(node->gpus[1].mps.At(0), (MpsSample{.server = true, .clients = 2, .responsive = true}));
  EXPECT_TRUE(node->gpus[0].mps.points.empty());
  // The usage series the telemetry integration tests read.
  const FakeGpu& a30 = node->gpus[1];
  EXPECT_EQ(a30.script.At(0, &P::sm_active), 0.5);
  EXPECT_EQ(a30.script.At(0, &P::dram_active), 0.25);
  EXPECT_EQ(a30.script.At(0, &P::sm_clock_mhz), 1440);
  ASSERT_EQ(a30.processes.size(), 1u);
  EXPECT_EQ(a30.processes[0].pid, 4242u);
  EXPECT_EQ(a30.processes[0].pod_uid, "7e57a30a-0000-4000-8000-000000000001");
  EXPECT_EQ(a30.processes[0].partition_uuid, "GPU-22222222-2222-4222-8222-222222222222");
  EXPECT_EQ(a30.processes[0].script.At(0, &P::fb_used_mib), 3072);
  EXPECT_TRUE(node->gpus[0].processes.empty());
}

class FakeBackendTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-fake-" + std::to_string(::getpid()) + "-" +
             testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml");
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::filesystem::path path_;
  ManualClock clock_{50};
};

constexpr const char* kOneGpu = R"(node: n1
gpus:
  - uuid: GPU-x
    model: H100-80GB
    script:
      points:
        - {t: 0, util: 0.5, fb_used_mib: 1000, power_w: 200}
        - {t: 10, util: 0.9, fb_used_mib: 4000, power_w: 400}
)";

TEST_F(FakeBackendTest, PlaysTheScriptOnTheAgentsClock) {
  Write(kOneGpu);
  auto b = FakeBackend::Load(path_.string(), clock_, 0);
  ASSERT_TRUE(b) << b.error().message;
  auto gpus = (*b)->Discover();
  ASSERT_TRUE(gpus);
  clock_.Advance(12);  // script time 12
  auto s = (*b)->Sample(*gpus);
  ASSERT_TRUE(s);
  const GpuSample& g = (*s)[0];
  EXPECT_EQ(g.partitions[0].activity, 0.9);
  EXPECT_EQ(g.gpu_util_pct, 90);
  EXPECT_EQ(g.partitions[0].fb_used_mib, 4000);
  EXPECT_EQ(g.partitions[0].fb_free_mib, 81920 - 4000);  // H100-80GB: 81920 MiB
  EXPECT_EQ(g.power_w, 400);
  // Energy since start: 10 s × 200 W + 2 s × 400 W = 2800 J = 2,800,000 mJ.
  EXPECT_DOUBLE_EQ(*g.energy_mj, 2.8e6);
}

// A hung server from t = 30 to 60, then gone: the reading the agent's detector gets.
TEST_F(FakeBackendTest, PlaysTheMpsServersTimeline) {
  Write(std::string(kOneGpu) +
        "    mps:\n"
        "      points:\n"
        "        - {t: 0, server: running, clients: 2}\n"
        "        - {t: 30, server: hung, clients: 2}\n"
        "        - {t: 60, server: absent}\n");
  auto b = FakeBackend::Load(path_.string(), clock_, 0);
  ASSERT_TRUE(b) << b.error().message;
  auto gpus = (*b)->Discover();
  ASSERT_TRUE(gpus);
  auto at = [&](double script_t) {
    clock_.Set(50 + script_t);  // the backend started at clock 50
    auto s = (*b)->Sample(*gpus);
    EXPECT_TRUE(s);
    return s ? (*s)[0].mps : std::nullopt;
  };
  EXPECT_EQ(at(10), (MpsSample{.server = true, .clients = 2, .responsive = true}));
  EXPECT_EQ(at(30), (MpsSample{.server = true, .clients = 2, .responsive = false}));
  EXPECT_EQ(at(59.9), (MpsSample{.server = true, .clients = 2, .responsive = false}));
  EXPECT_EQ(at(61), (MpsSample{.server = false, .clients = 0}));
  EXPECT_EQ(at(1000), (MpsSample{.server = false, .clients = 0}));
}

TEST_F(FakeBackendTest, AGpuWithoutMpsHasNoMpsReading) {
  Write(std::string(kOneGpu) + "    mps: {server: running, clients: 1}\n" +
        "  - {uuid: GPU-y, model: T4}\n");
  auto b = FakeBackend::Load(path_.string(), clock_, 0);
  ASSERT_TRUE(b) << b.error().message;
  auto gpus = (*b)->Discover();
  ASSERT_TRUE(gpus);
  auto s = (*b)->Sample(*gpus);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)[0].mps, (MpsSample{.server = true, .clients = 1, .responsive = true}));
  EXPECT_EQ((*s)[1].mps, std::nullopt);
}

// SM and DRAM activity per partition, the SM clock per GPU, and each process's own use on its
// partition, as scripted at the sample's time; what no point sets stays unknown.
TEST_F(FakeBackendTest, PlaysUsageSeriesAndProcesses) {
  Write(R"(node: n1
gpus:
  - uuid: GPU-m
    model: A100-40GB
    mig: "3g.20gb@0,3g.20gb@4"
    script: {points: [{t: 0, power_w: 150, sm_clock_mhz: 1410}]}
    instances:
      - {uuid: MIG-a, script: {points: [{t: 0, sm_active: 0.4, dram_active: 0.2}]}}
      - {uuid: MIG-b}
    processes:
      - {pid: 11, pod_uid: uid-1, partition: MIG-a, script: {points: [{t: 0, fb_used_mib: 2048},
                                                              {t: 10, fb_used_mib: 4096}]}}
      - {pid: 12, partition: MIG-b, script: {points: [{t: 0, sm_active: 0.25}]}}
  - uuid: GPU-w
    model: A30-24GB
    processes:
      - {pid: 21}
  - uuid: GPU-x
    model: A30-24GB
)");
  auto b = FakeBackend::Load(path_.string(), clock_, 0);
  ASSERT_TRUE(b) << b.error().message;
  auto gpus = (*b)->Discover();
  ASSERT_TRUE(gpus);
  clock_.Advance(12);  // script time 12
  auto s = (*b)->Sample(*gpus);
  ASSERT_TRUE(s);
  const GpuSample& m = (*s)[0];
  EXPECT_EQ(m.sm_clock_mhz, 1410);
  EXPECT_EQ(m.partitions[0].sm_active, 0.4);
  EXPECT_EQ(m.partitions[0].dram_active, 0.2);
  EXPECT_EQ(m.partitions[1].sm_active, std::nullopt);
  EXPECT_EQ(m.partitions[1].dram_active, std::nullopt);
  ASSERT_EQ(m.processes.size(), 2u);
  EXPECT_EQ(m.processes[0],
            (ProcessSample{
                .pid = 11, .partition_uuid = "MIG-a", .fb_used_mib = 4096, .pod_uid = "uid-1"}));
  EXPECT_EQ(m.processes[1],
            (ProcessSample{.pid = 12, .partition_uuid = "MIG-b", .sm = 0.25, .pod_uid = ""}));
  const GpuSample& w = (*s)[1];
  EXPECT_EQ(w.sm_clock_mhz, std::nullopt);
  EXPECT_EQ(w.partitions[0].sm_active, std::nullopt);
  // No partition named on a whole GPU: the GPU itself; no pod_uid: the agent resolves the pid.
  ASSERT_EQ(w.processes.size(), 1u);
  EXPECT_EQ(w.processes[0], (ProcessSample{.pid = 21, .partition_uuid = "GPU-w"}));
  // A GPU whose file lists processes has them all; one that says nothing has none known.
  EXPECT_TRUE(m.processes_listed);
  EXPECT_TRUE(w.processes_listed);
  EXPECT_FALSE((*s)[2].processes_listed);
  EXPECT_TRUE((*s)[2].processes.empty());
}

TEST(MpsScriptTest, LoopsEveryPeriod) {
  MpsScript m;
  m.loop = true;
  m.period_s = 100;
  m.points = {{0, {.server = true, .clients = 1, .responsive = true}},
              {80, {.server = true, .clients = 1, .responsive = false}}};
  EXPECT_EQ(m.At(79)->responsive, true);
  EXPECT_EQ(m.At(80)->responsive, false);
  EXPECT_EQ(m.At(99)->responsive, false);
  EXPECT_EQ(m.At(100)->responsive, true);  // the next period starts over
  EXPECT_EQ(m.At(285)->responsive, false);
  EXPECT_EQ(MpsScript{}.At(5), std::nullopt);
}

TEST_F(FakeBackendTest, RereadsAChangedFileAndKeepsTheLastGoodOneWhenItIsBroken) {
  Write(kOneGpu);
  auto b = FakeBackend::Load(path_.string(), clock_, 0);
  ASSERT_TRUE(b);
  Write(std::string(kOneGpu) + "    mig: \"7g.80gb\"\n");
  auto reshaped = (*b)->Discover();
  ASSERT_TRUE(reshaped) << reshaped.error().message;
  EXPECT_TRUE((*reshaped)[0].mig_enabled);
  Write("node: n1\ngpus: [");
  auto broken = (*b)->Discover();
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find(path_.string()), std::string::npos);
  EXPECT_TRUE((*b)->node().gpus[0].inventory.mig_enabled);  // the last good description
}

// A file still broken on the next round is still an error, not a success (the agent must not
// log "recovered" while it is broken); fixing it is a success again.
TEST_F(FakeBackendTest, AFileStaysBrokenUntilItIsFixed) {
  Write(kOneGpu);
  auto b = FakeBackend::Load(path_.string(), clock_, 0);
  ASSERT_TRUE(b);
  Write("node: n1\ngpus: [");
  auto first = (*b)->Discover();
  ASSERT_FALSE(first);
  auto again = (*b)->Discover();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message, first.error().message);
  Write(kOneGpu);
  EXPECT_TRUE((*b)->Discover());
}

TEST_F(FakeBackendTest, LoadRefusesAMissingOrMalformedFile) {
  auto missing = FakeBackend::Load("/nonexistent/fake.yaml", clock_, 0);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/nonexistent/fake.yaml"), std::string::npos);
  Write("node: [");
  EXPECT_FALSE(FakeBackend::Load(path_.string(), clock_, 0));
}

}  // namespace
}  // namespace tessera::agent
