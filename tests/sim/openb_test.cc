// The openb-alloc experiment: strict trace loading, the paper's inflation, and the metrics of a
// replay small enough to follow by hand. The real trace is checked when shared/data is present.
#include "sim/openb.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "shared_data.h"
#include "sim/replay.h"

namespace tessera::sim {
namespace {

class OpenbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("openb_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

constexpr const char* kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

TEST_F(OpenbTest, MalformedLinesNameFileAndLine) {
  const std::string bad_number =
      Write("p1.csv", std::string(kPodHeader) + "a,1000,1024,1,500,,LS,Running,0,1,0\n" +
                          "b,abc,1024,1,500,,LS,Running,0,1,0\n");
  auto r = LoadOpenbPods(bad_number);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(bad_number + ":3: cpu_milli 'abc'", 0), 0u)
      << r.error().message;

  const std::string short_line =
      Write("p2.csv", std::string(kPodHeader) + "a,1000,1024,1,500,,LS,Running,0,1\n");
  r = LoadOpenbPods(short_line);
  ASSERT_FALSE(r);
  EXPECT_NE(
      r.error().message.find(short_line + ":2: expected 11 fields (as in the header), found 10"),
      std::string::npos);

  const std::string bad_model =
      Write("p3.csv", std::string(kPodHeader) + "a,1000,1024,1,500,T4|H9000,LS,Running,0,1,0\n");
  r = LoadOpenbPods(bad_model);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(bad_model + ":2: unknown GPU model 'H9000'"), std::string::npos);

  const std::string bad_share =
      Write("p4.csv", std::string(kPodHeader) + "a,1000,1024,2,500,,LS,Running,0,1,0\n");
  r = LoadOpenbPods(bad_share);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(bad_share + ":2:"), std::string::npos);

  const std::string no_column = Write("n1.csv", "sn,cpu_milli,gpu,model\nx,1,1,T4\n");
  auto n = LoadOpenbNodes(no_column);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find(no_column + ":1: missing column 'memory_mib'"),
            std::string::npos);
}

TEST_F(OpenbTest, PodsAreReadAsTheMethodSays) {
  const std::string path =
      Write("p.csv", std::string(kPodHeader) + "a,1000,1024,1,1500,,LS,Running,0,1,0\n" +
                         "b,2000,2048,0,0,,BE,Failed,5,6,5\n" +
                         "c,3000,4096,1,470,V100M16|V100M32|V100M32,LS,Running,0,1,0\n");
  auto pods = LoadOpenbPods(path);
  ASSERT_TRUE(pods) << pods.error().message;
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[0].gpu.milli, 1000);  // capped
  EXPECT_EQ((*pods)[1].gpu.count, 0);     // phase and qos ignored
  EXPECT_EQ((*pods)[2].gpu.models.size(), 2u);
  EXPECT_EQ((*pods)[2].id, 3);
}

// The simulator's limits on a node list (docs/results.md): at most 64 GPUs on one node, 10,000
// nodes and 50,000 GPUs in all. A node list beyond them is refused, not read: 2e9 GPUs on one
// node would abort with std::bad_alloc, 200,000 nodes would run for more than five minutes.
TEST_F(OpenbTest, NodeListsBeyondTheSimulatorsLimitsAreRefused) {
  const std::string header = "sn,cpu_milli,memory_mib,gpu,model\n";
  const std::string huge =
      Write("n1.csv", header + "a,1000,1024,8,T4\nb,1000,1024,2000000000,T4\n");
  auto n = LoadOpenbNodes(huge);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, huge + ":3: gpu 2000000000: at most 64 GPUs on one node");
  EXPECT_TRUE(LoadOpenbNodes(Write("n2.csv", header + "a,1000,1024,64,T4\n")));

  std::string text = header;
  for (int i = 1; i <= 10001; ++i) text += fmt::format("n{},1000,1024,0,\n", i);
  const std::string many = Write("n3.csv", text);
  n = LoadOpenbNodes(many);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, many + ":10002: more than 10000 nodes");

  // 782 nodes of 64 GPUs: 50,048 GPUs, 48 too many on the last one (line 783).
  text = header;
  for (int i = 1; i <= 782; ++i) text += fmt::format("n{},1000,1024,64,T4\n", i);
  const std::string gpus = Write("n4.csv", text);
  n = LoadOpenbNodes(gpus);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, gpus + ":783: more than 50000 GPUs in all");
}

// A UTF-8 byte-order mark (as spreadsheet programs write) and RFC 4180 quoted fields are read
// as CSV means them.
TEST_F(OpenbTest, ABomAndQuotedFieldsAreRead) {
  const std::string nodes =
      Write("n.csv",
            "\xEF\xBB\xBFsn,cpu_milli,memory_mib,gpu,model\r\n\"node,1\",1000,\"1024\",2,T4\r\n");
  auto n = LoadOpenbNodes(nodes);
  ASSERT_TRUE(n) << n.error().message;
  ASSERT_EQ(n->size(), 1u);
  EXPECT_EQ((*n)[0].name, "node,1");
  EXPECT_EQ((*n)[0].gpus.size(), 2u);
  const std::string pods =
      Write("p.csv", "\xEF\xBB\xBF" + std::string(kPodHeader) +
                         "\"a,\"\"b\"\"\",1000,1024,1,470,\"V100M16|V100M32\",LS,Running,0,1,0\n");
  auto p = LoadOpenbPods(pods);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)[0].name, "a,\"b\"");
  EXPECT_EQ((*p)[0].gpu.models.size(), 2u);
  // A quote inside an unquoted field names its file and line.
  const std::string bad =
      Write("b.csv", std::string(kPodHeader) + "a\"b,1000,1024,1,470,,LS,Running,0,1,0\n");
  auto r = LoadOpenbPods(bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(bad + ":2:", 0), 0u) << r.error().message;
}

model::Workload Gpus(model::WorkloadId id, int count, int milli) {
  model::Workload w;
  w.id = id;
  w.name = "p" + std::to_string(id);
  w.cpu_milli = 1000;
  w.gpu.count = count;
  w.gpu.milli = count == 0 ? 0 : milli;
  return w;
}

TEST(OpenbInflationTest, AppendsDrawsUntilTheTargetThenStops) {
  // 500 + 2000 + 0 = 2500 milli asked; capacity 4000, target 1.3 * 4000 = 5200.
  const std::vector<model::Workload> pods = {Gpus(1, 1, 500), Gpus(2, 2, 1000), Gpus(3, 0, 0)};
  Rng rng(42);
  const std::vector<model::Workload> order = OpenbArrivals(pods, 4000, 1.3, rng);
  double total = 0;
  for (const model::Workload& w : order) total += RequestedGpuMilli(w);
  EXPECT_LE(total, 5200);
  EXPECT_GT(total, 5200 - 2000);  // stopped at the first draw that overshoots (at most 2000)
  ASSERT_GE(order.size(), 3u);
  // The originals come first, shuffled; ids follow the arrival order.
  std::vector<std::string> first = {order[0].name, order[1].name, order[2].name};
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"p1", "p2", "p3"}));
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i].id, static_cast<int64_t>(i + 1));
  // Same seed, same list.
  Rng again(42);
  EXPECT_EQ(OpenbArrivals(pods, 4000, 1.3, again).size(), order.size());
}

TEST(OpenbInflationTest, ThinsAListAboveTheTarget) {
  std::vector<model::Workload> pods;
  for (int i = 1; i <= 20; ++i) pods.push_back(Gpus(i, 1, 1000));  // 20000 asked
  Rng rng(1);
  const std::vector<model::Workload> order = OpenbArrivals(pods, 10000, 1.3, rng);
  EXPECT_EQ(order.size(), 13u);  // 13000 <= 13000 after removing 7 whole GPUs
}

// Thinning as the method states it, one pod at a time: draw a position in what is left, drop
// it, until the list is at or below the target. Quadratic: the oracle the thinning is checked
// against; it drops positions in a list of indices, so each drop moves a few bytes, not pods.
std::vector<std::string> ThinnedOneByOne(const std::vector<model::Workload>& order, double target,
                                         Rng& rng) {
  double total = 0;
  std::vector<size_t> left(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    left[i] = i;
    total += RequestedGpuMilli(order[i]);
  }
  while (total > target && !left.empty()) {
    const size_t i = rng.Below(left.size());
    total -= RequestedGpuMilli(order[left[i]]);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::vector<std::string> names;
  for (size_t i : left) names.push_back(order[i].name);
  return names;
}

// Thinning keeps exactly the pods the one-at-a-time method keeps, for the same seed.
TEST(OpenbInflationTest, ThinningKeepsThePodsTheMethodKeeps) {
  for (uint64_t seed : {1, 2, 3, 42, 1000}) {
    Rng shapes(seed + 7);
    std::vector<model::Workload> pods;
    for (int i = 1; i <= 3000; ++i) {
      const int count = static_cast<int>(shapes.Below(3));  // 0, 1 or 2 GPUs
      pods.push_back(
          Gpus(i, count, count == 1 ? 100 * (1 + static_cast<int>(shapes.Below(10))) : 1000));
    }
    for (double capacity : {100000.0, 500000.0, 1000.0, 0.0}) {
      Rng rng(seed), oracle_rng(seed);
      const std::vector<model::Workload> order = OpenbArrivals(pods, capacity, 1.3, rng);
      std::vector<model::Workload> shuffled(pods.begin(), pods.end());
      oracle_rng.Shuffle(shuffled);
      const std::vector<std::string> want = ThinnedOneByOne(shuffled, 1.3 * capacity, oracle_rng);
      std::vector<std::string> got;
      for (const model::Workload& w : order) got.push_back(w.name);
      EXPECT_EQ(got, want) << "seed " << seed << ", capacity " << capacity;
      for (size_t i = 0; i < order.size(); ++i) {
        EXPECT_EQ(order[i].id, static_cast<int64_t>(i + 1));
      }
      EXPECT_EQ(rng.Below(1u << 30), oracle_rng.Below(1u << 30));  // the same draws were used
    }
  }
}

TEST(OpenbRunTest, AllocationAndFailuresOfATinyReplay) {
  // One node with 2 T4 GPUs; three pods asking one whole GPU each: 3000 milli = 150% of 2000,
  // so inflation 1.5 adds nothing. Whatever the order, the first two fit and the third fails:
  // events at 50% (alloc 50%) and 100% (alloc 100%); the 150% event is beyond the curve.
  OpenbInput input;
  input.nodes = {model::UniformNode("n", *model::FindGpuModel("T4"), 2, 8000, 65536)};
  input.total_gpus = 2;
  input.pods = {Gpus(1, 1, 1000), Gpus(2, 1, 1000), Gpus(3, 1, 1000)};
  input.trace_stem = "tiny";
  for (const char* policy : {"best-fit", "fgd", "frag-pack", "random"}) {
    auto run = RunOpenb(input, policy, 7, 1.5);
    ASSERT_TRUE(run) << run.error().message;
    EXPECT_EQ(run->pods, 3u);
    EXPECT_EQ(run->failed_pods, 1u) << policy;
    EXPECT_DOUBLE_EQ(run->alloc_pct[50], 50) << policy;
    EXPECT_DOUBLE_EQ(run->alloc_pct[100], 100) << policy;
    // 49% and 51% have no event but a neighbour: the reference analysis' fallback.
    EXPECT_DOUBLE_EQ(run->alloc_pct[51], 50);
    EXPECT_TRUE(std::isnan(run->alloc_pct[75]));
    // Typical pod: one whole GPU. After the first pod one GPU is used and the other idle: no
    // partly used GPU, so no fragment.
    EXPECT_DOUBLE_EQ(run->frag_pct[50], 0);
  }
  EXPECT_FALSE(RunOpenb(input, "no-such-policy", 7));
}

TEST(OpenbRealTraceTest, TheTraceLoadsAsDescribed) {
  const std::string dir = std::string(TESSERA_SHARED_DIR) + "/data/openb/";
  TESSERA_NEED_DATA(dir + "openb_pod_list_default.csv");
  auto input = LoadOpenb(dir + "openb_pod_list_default.csv", dir + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(input) << input.error().message;
  EXPECT_EQ(input->nodes.size(), 1213u);
  EXPECT_EQ(input->total_gpus, 6212);
  EXPECT_EQ(input->pods.size(), 8152u);
  EXPECT_EQ(input->trace_stem, "openb_pod_list_default");
  for (const char* t : {"gpushare40", "gpushare80", "gpuspec10", "multigpu20"}) {
    auto pods = LoadOpenbPods(dir + "openb_pod_list_" + t + ".csv");
    EXPECT_TRUE(pods) << pods.error().message;
  }
}

}  // namespace
}  // namespace tessera::sim
