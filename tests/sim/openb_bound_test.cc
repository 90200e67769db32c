// The openb allocation bound: worked by hand on one node, and never below the best packing an
// exhaustive search finds on small random clusters.
#include "sim/openb_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "base/rng.h"
#include "openb_pods.h"

namespace tessera::sim {
namespace {

double Bound(const std::vector<model::NodeSpec>& nodes, const std::vector<model::Workload>& pods,
             bool integer = true, int level = 100) {
  const int levels[] = {level};
  auto points = OpenbAllocationBound(nodes, pods, levels, {.integer = integer});
  EXPECT_TRUE(points) << points.error().message;
  return points ? points->front().alloc_pct : -1;
}

// One T4 node with two GPUs; pods asking 0.6, 0.6 and 0.5 of one GPU. No GPU holds two of
// them, so the best is the two 0.6 shares: 1,200 of 2,000 milli, 60 %. The milli alone would
// allow all three (85 %); u^(1) counts a 0.6 share as a whole GPU and a 0.5 share as half, so
// the integer program finds 60 %. Its linear relaxation places 1.5 of the 0.6 shares beside the
// 0.5 one (u^(1): 1.5 + 0.5 = 2 GPUs): 1,400 milli, 70 %.
TEST(OpenbBoundTest, SharesThatCannotShareAGpuByHand) {
  const std::vector<model::NodeSpec> nodes = {
      model::UniformNode("n", *model::FindGpuModel("T4"), 2, 8000, 65536)};
  const std::vector<model::Workload> pods = {OpenbPod(1, 1, 600), OpenbPod(2, 1, 600),
                                             OpenbPod(3, 1, 500)};
  EXPECT_NEAR(Bound(nodes, pods), 60, 1e-6);
  EXPECT_NEAR(Bound(nodes, pods, /*integer=*/false), 70, 1e-6);
}

// Two whole-GPU pods of 3 CPU cores each on a node of two GPUs and 4 cores: only one fits, so
// half the GPUs at most — CPU strands the other GPU, and the bound sees it.
TEST(OpenbBoundTest, CpuStrandsAGpuByHand) {
  const std::vector<model::NodeSpec> nodes = {
      model::UniformNode("n", *model::FindGpuModel("T4"), 2, 4000, 65536)};
  const std::vector<model::Workload> pods = {OpenbPod(1, 1, 1000, 3000),
                                             OpenbPod(2, 1, 1000, 3000)};
  EXPECT_NEAR(Bound(nodes, pods), 50, 1e-6);
  EXPECT_NEAR(Bound(nodes, pods, /*integer=*/false), 50, 1e-6);
}

// Only the arrivals within the level count: 600 + 600 milli of 2,000 is 60 %; at level 30 only
// the first (30.5 % of 2,000 = 610 milli) has arrived.
TEST(OpenbBoundTest, CountsOnlyTheArrivalsOfTheLevel) {
  const std::vector<model::NodeSpec> nodes = {
      model::UniformNode("n", *model::FindGpuModel("T4"), 2, 8000, 65536)};
  const std::vector<model::Workload> pods = {OpenbPod(1, 1, 600), OpenbPod(2, 1, 600),
                                             OpenbPod(3, 1, 500)};
  const int levels[] = {30, 100};
  auto points = OpenbAllocationBound(nodes, pods, levels);
  ASSERT_TRUE(points) << points.error().message;
  EXPECT_EQ((*points)[0].pods, 1u);
  EXPECT_NEAR((*points)[0].alloc_pct, 30, 1e-6);
  EXPECT_EQ((*points)[1].pods, 3u);
}

// The most GPU milli any packing of `pods` on `nodes` holds: every pod skipped or put on every
// node it fits (a share on every GPU with room, whole GPUs on the first free ones).
int64_t BestPacking(const std::vector<model::NodeSpec>& nodes,
                    const std::vector<model::Workload>& pods) {
  struct Free {
    int64_t cpu, memory;
    std::vector<int> milli;
  };
  std::vector<Free> free;
  for (const model::NodeSpec& n : nodes) {
    free.push_back({n.cpu_milli, n.memory_mib, std::vector<int>(n.gpus.size(), 1000)});
  }
  int64_t best = 0;
  std::function<void(size_t, int64_t)> place = [&](size_t i, int64_t held) {
    best = std::max(best, held);
    if (i == pods.size()) return;
    place(i + 1, held);
    const model::Workload& w = pods[i];
    for (size_t n = 0; n < nodes.size(); ++n) {
      Free& f = free[n];
      if (w.cpu_milli > f.cpu || w.memory_mib > f.memory) continue;
      if (w.gpu.count > 0 && !w.gpu.AllowsModel(nodes[n].gpus.front().model)) continue;
      f.cpu -= w.cpu_milli;
      f.memory -= w.memory_mib;
      if (w.gpu.count == 0) {
        place(i + 1, held);
      } else if (w.gpu.sharing()) {
        for (int& g : f.milli) {
          if (g < w.gpu.milli) continue;
          g -= w.gpu.milli;
          place(i + 1, held + w.gpu.milli);
          g += w.gpu.milli;
        }
      } else {
        std::vector<int*> taken;
        for (int& g : f.milli) {
          if (g == 1000 && static_cast<int>(taken.size()) < w.gpu.count) taken.push_back(&g);
        }
        if (static_cast<int>(taken.size()) == w.gpu.count) {
          for (int* g : taken) *g = 0;
          place(i + 1, held + 1000 * w.gpu.count);
          for (int* g : taken) *g = 1000;
        }
      }
      f.cpu += w.cpu_milli;
      f.memory += w.memory_mib;
    }
  };
  place(0, 0);
  return best;
}

// 300 random clusters of 1–3 nodes (T4 or V100, 1–4 GPUs, 4–16 cores) and 2–7 pods (CPU-only,
// a share of one GPU, or 2–3 whole GPUs; some only on one model): the bound with every pod
// arrived is never below the best exhaustive packing, and is that packing on most of them.
TEST(OpenbBoundTest, NeverBelowTheBestExhaustivePacking) {
  Rng rng(7);
  const model::GpuModelId models[] = {*model::FindGpuModel("T4"),
                                      *model::FindGpuModel("V100-32GB")};
  const int shares[] = {200, 250, 300, 400, 500, 600, 700, 1000};
  int tight = 0;
  constexpr int kClusters = 300;
  for (int c = 0; c < kClusters; ++c) {
    std::vector<model::NodeSpec> nodes;
    int gpus = 0;
    for (int n = 0, count = 1 + static_cast<int>(rng.Below(3)); n < count; ++n) {
      const int g = 1 + static_cast<int>(rng.Below(4));
      gpus += g;
      nodes.push_back(model::UniformNode("n" + std::to_string(n), models[rng.Below(2)], g,
                                         4000 * (1 + static_cast<int64_t>(rng.Below(4))), 65536));
    }
    std::vector<model::Workload> pods;
    for (int i = 0, count = 2 + static_cast<int>(rng.Below(6)); i < count; ++i) {
      const double kind = rng.Uniform();
      const int64_t cpu = 1000 * (1 + static_cast<int64_t>(rng.Below(8)));
      model::Workload w = kind < 0.1 ? OpenbPod(i + 1, 0, 0, cpu)
                          : kind < 0.8
                              ? OpenbPod(i + 1, 1, shares[rng.Below(8)], cpu)
                              : OpenbPod(i + 1, 2 + static_cast<int>(rng.Below(2)), 1000, cpu);
      if (w.gpu.count > 0 && rng.Uniform() < 0.2) w.gpu.models = {models[rng.Below(2)]};
      pods.push_back(std::move(w));
    }
    const double best = 100.0 * static_cast<double>(BestPacking(nodes, pods)) / (1000.0 * gpus);
    const double bound = Bound(nodes, pods, true, 1000);
    EXPECT_GE(bound, best - 1e-6) << "cluster " << c;
    if (bound <= best + 1e-6) ++tight;
  }
  std::printf("bound = best packing on %d of %d clusters\n", tight, kClusters);
  EXPECT_GE(tight, kClusters / 2);
}

}  // namespace
}  // namespace tessera::sim
