// Property test: 100,000 random place/remove/resize/reshape/availability operations on a 64-node
// mixed cluster; after every step every invariant holds, and a refused operation changed
// nothing. About a third of the placements are deliberately wrong (too big, wrong node, wrong
// slot) so the refusal paths are exercised as often as the success paths. One in six is best
// effort (MuxFlow's offline work: its share caps, reserves nothing), often beside guaranteed
// clients that already hold the whole partition. One in seven is remote (seed 002): its GPU on
// another node than its CPU and memory.
#include <gtest/gtest.h>

#include "base/rng.h"
#include "model/cluster.h"

namespace tessera::model {
namespace {

struct Fingerprint {
  size_t placed;
  double allocated;
  int64_t free_memory;
  int idle;
  bool operator==(const Fingerprint&) const = default;
};

Fingerprint Take(const ClusterState& c) {
  Fingerprint f{c.placed_count(), c.allocated_gpu_milli(), 0, 0};
  for (GpuIndex g = 0; g < c.gpu_count(); ++g) f.free_memory += c.gpu(g).free_memory_mib;
  for (NodeIndex n = 0; n < c.node_count(); ++n) f.idle += c.node(n).idle_gpus;
  return f;
}

ClusterState MixedCluster(Rng& rng) {
  ClusterState c;
  const char* models[] = {"A30-24GB", "A100-40GB", "A100-80GB", "H100-80GB", "V100-32GB", "T4"};
  for (int n = 0; n < 64; ++n) {
    const GpuModelId m = *FindGpuModel(models[n % 6]);
    NodeSpec spec = UniformNode("node-" + std::to_string(n), m, 1 + static_cast<int>(rng.Below(8)),
                                64000, 256 * 1024);
    const std::vector<MigLayout>& layouts = ValidLayouts(GetGpuModel(m));
    for (GpuSpec& g : spec.gpus) {
      if (!layouts.empty() && rng.Uniform() < 0.5) g.mig = layouts[rng.Below(layouts.size())];
    }
    EXPECT_TRUE(c.AddNode(spec));
  }
  return c;
}

TEST(ClusterPropertyTest, HundredThousandRandomOperationsKeepEveryInvariant) {
  Rng rng(20261121);
  ClusterState c = MixedCluster(rng);
  std::vector<WorkloadId> live;
  WorkloadId next_id = 1;
  int placed = 0, refused = 0, removed = 0, reshaped = 0, resized = 0, best_effort = 0,
      remote_placed = 0;
  int oversold = 0;  // steps ending with a partition whose clients' caps exceed 1000 milli
  for (int step = 0; step < 100000; ++step) {
    const Fingerprint before = Take(c);
    const double op = rng.Uniform();
    Expected<void> result;
    if (op < 0.55) {
      // Place on a random partition of a random GPU, sized to fit most of the time.
      const GpuIndex g = static_cast<GpuIndex>(rng.Below(c.gpu_count()));
      const Gpu& gpu = c.gpu(g);
      const int slot = static_cast<int>(rng.Below(gpu.partition_count + (rng.Uniform() < 0.05)));
      const PartitionIndex p = ClusterState::PartitionOf(g, slot);
      const Partition& part = c.partition(p);
      Workload w;
      w.id = next_id++;
      w.cpu_milli = static_cast<int64_t>(rng.Below(4000));
      w.memory_mib = static_cast<int64_t>(rng.Below(16384));
      w.gpu.count = 1;
      const bool wrong = rng.Uniform() < 0.3;
      const bool be = rng.Uniform() < 1.0 / 6;
      const int32_t room = be ? 1000 : std::max(1, part.free_milli());
      w.gpu.milli =
          wrong ? 1 + static_cast<int>(rng.Below(1000)) : 1 + static_cast<int>(rng.Below(room));
      const int64_t mem_room = std::max<int64_t>(0, part.free_memory_mib());
      const int64_t mem = wrong ? static_cast<int64_t>(rng.Below(part.memory_mib + 1))
                                : static_cast<int64_t>(rng.Below(mem_room / 2 + 1));
      // One in seven is remote (seed 002's disaggregated GPUs): CPU and memory on another node;
      // a wrong one names the GPU's own node.
      const bool remote = rng.Uniform() < 1.0 / 7;
      NodeIndex node = gpu.node;
      if (remote) {
        node = static_cast<NodeIndex>(
            (gpu.node + 1 + static_cast<NodeIndex>(rng.Below(c.node_count() - 1))) %
            c.node_count());
        if (wrong && rng.Uniform() < 0.2) node = gpu.node;
      } else if (wrong && rng.Uniform() < 0.2) {
        node = static_cast<NodeIndex>(rng.Below(c.node_count()));
      }
      result = c.Place(w, {w.id, node, {{p, w.gpu.milli, mem, be, remote}}});
      if (result) {
        live.push_back(w.id);
        ++placed;
        best_effort += be;
        remote_placed += remote;
      }
    } else if (op < 0.60) {
      // A multi-GPU workload on idle GPUs of one node.
      const NodeIndex n = static_cast<NodeIndex>(rng.Below(c.node_count()));
      Workload w;
      w.id = next_id++;
      w.gpu.count = 2;
      Placement pl{w.id, n, {}};
      for (const Gpu& gpu : c.gpus_of(n)) {
        if (pl.slices.size() == 2) break;
        if (gpu.idle() && !gpu.mig) {
          pl.slices.push_back(
              {ClusterState::PartitionOf(c.node(n).first_gpu + gpu.index, 0), 1000, 0});
        }
      }
      result = c.Place(w, pl);
      if (result) {
        live.push_back(w.id);
        ++placed;
      }
    } else if (op < 0.90) {
      if (live.empty()) continue;
      const size_t i = rng.Below(live.size());
      result = c.Remove(live[i]);
      EXPECT_TRUE(result) << "remove of a live workload failed";
      live[i] = live.back();
      live.pop_back();
      ++removed;
    } else if (op < 0.94) {
      // Resize a live workload's MPS limits, often beyond what its partitions can give.
      if (live.empty()) continue;
      const PlacedWorkload* pw = c.Find(live[rng.Below(live.size())]);
      std::vector<Slice> slices = pw->placement.slices;
      for (Slice& sl : slices) {
        const Partition& part = c.partition(sl.partition);
        sl.milli =
            1 + static_cast<int32_t>(rng.Below(std::min(1000, sl.milli + part.free_milli() + 200)));
        sl.memory_mib =
            static_cast<int64_t>(rng.Below(sl.memory_mib + part.free_memory_mib() + 2048));
        if (rng.Uniform() < 0.05) sl.best_effort = !sl.best_effort;  // always refused
      }
      result = c.Resize(pw->workload.id, slices);
      if (result) ++resized;
    } else if (op < 0.98) {
      const GpuIndex g = static_cast<GpuIndex>(rng.Below(c.gpu_count()));
      const std::vector<MigLayout>& layouts = ValidLayouts(GetGpuModel(c.gpu(g).model));
      std::optional<MigLayout> to;
      if (!layouts.empty() && rng.Uniform() < 0.8) to = layouts[rng.Below(layouts.size())];
      result = c.Reshape(g, to);
      if (result) ++reshaped;
      if (result && !c.gpu(g).idle()) ADD_FAILURE() << "reshaped a busy GPU";
    } else {
      const GpuIndex g = static_cast<GpuIndex>(rng.Below(c.gpu_count()));
      c.SetGpuAvailable(g, !c.gpu(g).available);
      result = {};
    }
    if (!result) {
      ++refused;
      ASSERT_EQ(Take(c), before) << "step " << step
                                 << ": refused operation changed state: " << result.error().message;
    }
    auto ok = c.CheckInvariants();
    ASSERT_TRUE(ok) << "step " << step << ": " << ok.error().message;
    if (result && op < 0.55 && !live.empty() && live.back() == next_id - 1) {
      const Partition& part = c.partition(c.Find(live.back())->placement.slices[0].partition);
      int32_t caps = 0;
      for (const Client& cl : part.clients) caps += cl.milli;
      oversold += caps > 1000;
    }
    // The uuid index answers as a scan would (the uuids here are unique), on one GPU a step.
    const GpuIndex probe = static_cast<GpuIndex>(step % c.gpu_count());
    for (int slot = 0; slot < c.gpu(probe).partition_count; ++slot) {
      const PartitionIndex p = ClusterState::PartitionOf(probe, slot);
      ASSERT_EQ(c.FindPartition(c.partition(p).uuid), p) << "step " << step;
    }
  }
  // The mix must really exercise every path.
  EXPECT_GT(placed, 20000);
  EXPECT_GT(removed, 20000);
  EXPECT_GT(refused, 5000);
  EXPECT_GT(reshaped, 100);
  EXPECT_GT(resized, 500);
  EXPECT_GT(best_effort, 2000);
  EXPECT_GT(remote_placed, 2000);
  EXPECT_GT(oversold, 500);  // best effort really went beyond what guaranteed clients left
}

}  // namespace
}  // namespace tessera::model
