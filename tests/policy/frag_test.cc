// The fragmentation measure of the FGD paper (ATC'23 §3.2) and its typical pods, with numbers
// derived by hand from the definition in policy/frag.h.
#include "policy/frag.h"

#include <gtest/gtest.h>

namespace tessera::policy {
namespace {

using model::FindGpuModel;

NodeFree Node(int64_t cpu, std::vector<int32_t> free, const char* model = "T4") {
  NodeFree n;
  n.cpu_milli = cpu;
  n.gpus = static_cast<int>(free.size());
  for (size_t i = 0; i < free.size(); ++i) {
    n.free_milli[i] = free[i];
    n.model[i] = *FindGpuModel(model);
  }
  return n;
}

PodShape Shape(int64_t cpu, int count, int milli, double weight = 1) {
  return PodShape{cpu, count, milli, 0, weight};
}

TEST(FragTest, ShapeFragmentFollowsThePaperCases) {
  // GPUs with 1000, 600, 200 free; 1800 in all.
  const NodeFree n = Node(8000, {1000, 600, 200});
  // A 500-milli share fits (two GPUs can take it): only the 200 GPU is fragment.
  EXPECT_DOUBLE_EQ(ShapeFragmentMilli(n, Shape(4000, 1, 500)), 200);
  // A whole GPU fits on GPU 0: the partly used 600 and 200 are fragment.
  EXPECT_DOUBLE_EQ(ShapeFragmentMilli(n, Shape(4000, 1, 1000)), 800);
  // Two whole GPUs do not fit: everything free is fragment.
  EXPECT_DOUBLE_EQ(ShapeFragmentMilli(n, Shape(4000, 2, 1000)), 1800);
  // Not enough CPU: everything free is fragment.
  EXPECT_DOUBLE_EQ(ShapeFragmentMilli(n, Shape(9000, 1, 100)), 1800);
  // A CPU-only shape counts all free GPU milli (the reference simulator's XL/XR classes).
  EXPECT_DOUBLE_EQ(ShapeFragmentMilli(n, Shape(1000, 0, 0)), 1800);
  // A shape that only allows another model: everything free is fragment.
  PodShape v100 = Shape(1000, 1, 100);
  v100.model_mask = uint64_t{1} << *FindGpuModel("V100M32");
  EXPECT_DOUBLE_EQ(ShapeFragmentMilli(n, v100), 1800);
}

TEST(FragTest, NodeFragmentIsTheWeightedSumOverTypicalPods) {
  const NodeFree n = Node(8000, {1000, 600, 200});
  // Weights 3:1 renormalise to 0.75 and 0.25: 0.75 * 200 + 0.25 * 800 = 350.
  const ShapeDistribution typical({Shape(4000, 1, 500, 3), Shape(4000, 1, 1000, 1)});
  EXPECT_DOUBLE_EQ(typical.shapes()[0].weight, 0.75);
  EXPECT_DOUBLE_EQ(FragmentMilli(n, typical), 350);
}

TEST(FragTest, TypicalPodsCoverTheRequestedShareMostFrequentFirst) {
  std::vector<model::Workload> pods;
  auto add = [&](int n, int64_t cpu, int count, int milli) {
    for (int i = 0; i < n; ++i) {
      model::Workload w;
      w.id = static_cast<model::WorkloadId>(pods.size() + 1);
      w.cpu_milli = cpu;
      w.gpu.count = count;
      w.gpu.milli = milli;
      pods.push_back(w);
    }
  };
  add(60, 4000, 1, 500);   // 60%
  add(30, 8000, 1, 1000);  // 30% -> 90%
  add(6, 2000, 0, 0);      // 6%  -> 96% >= 95%: stop
  add(4, 1000, 1, 200);    // left out
  const ShapeDistribution t = ShapeDistribution::Typical(pods, 0.95);
  ASSERT_EQ(t.shapes().size(), 3u);
  EXPECT_EQ(t.shapes()[0].gpu_milli, 500);
  EXPECT_EQ(t.shapes()[2].gpu_count, 0);
  EXPECT_NEAR(t.shapes()[0].weight, 60.0 / 96, 1e-12);
}

TEST(FragTest, JsonRoundTripAndErrors) {
  PodShape s = Shape(4000, 1, 500, 1);
  s.model_mask = uint64_t{1} << *FindGpuModel("T4");
  const ShapeDistribution t({s, Shape(1000, 2, 1000, 1)});
  auto back = ShapeDistribution::FromJson(t.ToJson());
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->shapes().size(), 2u);
  EXPECT_TRUE(back->shapes()[0].SameShape(s));
  EXPECT_DOUBLE_EQ(back->shapes()[1].weight, 0.5);
  auto bad = ShapeDistribution::FromJson(nlohmann::json::parse(
      R"([{"cpu_milli": 1, "gpu_count": 1, "gpu_milli": 5, "gpu_models": ["NoSuchGpu"], "weight": 1}])"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("NoSuchGpu"), std::string::npos);
}

}  // namespace
}  // namespace tessera::policy
