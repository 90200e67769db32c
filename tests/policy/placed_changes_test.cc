// PlacedChanges: the closed loop's list of what to look at again, worked out by hand on a
// two-node cluster: a node's workloads when its version moves, a workload whose QPS the
// telemetry changed, the workloads that left, and everything where it cannot tell.
#include "policy/placed_changes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/cluster.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::WorkloadId;
using Ids = std::vector<WorkloadId>;

class PlacedChangesTest : public ::testing::Test {
 protected:
  PlacedChangesTest() {
    const model::GpuModelId v100 = *model::FindGpuModel("V100-32GB");
    EXPECT_TRUE(c_.AddNode(model::UniformNode("n0", v100, 2, 64000, 1 << 20)));
    EXPECT_TRUE(c_.AddNode(model::UniformNode("n1", v100, 2, 64000, 1 << 20)));
  }
  // Workload `id` ("pod-<id>") on GPU `gpu` (GPUs 0–1 are node 0's, 2–3 node 1's), 25 %.
  void Put(WorkloadId id, model::GpuIndex gpu) {
    model::Workload w;
    w.id = id;
    w.name = "pod-" + std::to_string(id);
    w.gpu.count = 1;
    const model::PartitionIndex p = ClusterState::PartitionOf(gpu, 0);
    ASSERT_TRUE(c_.Place(w, {id, gpu < 2 ? 0 : 1, {{p, 250, 1024}}}));
  }

  ClusterState c_;
  telemetry::StaticTelemetry t_;
  PlacedChanges changes_;
};

TEST_F(PlacedChangesTest, VisitsTheNodesThatChangedTheQpsThatMovedAndReportsWhoLeft) {
  Put(1, 0);
  Put(2, 1);
  Put(3, 2);
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), (Ids{1, 2, 3}));  // the first pass sees everyone
  EXPECT_EQ(changes_.gone(), Ids{});

  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{});  // nothing moved

  Put(4, 3);  // node 1 changes: its workloads, old and new
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), (Ids{3, 4}));

  t_.SetWorkloadQps("pod-2", 10);   // a QPS on node 0, which did not change
  t_.SetUtilization("GPU-x", 0.5);  // not a QPS
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{2});
  t_.SetWorkloadQps("pod-2", 10);  // the same value: no change
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{});

  ASSERT_TRUE(c_.Remove(3));
  t_.SetWorkloadQps("pod-3", 5);  // a workload that left: not visited
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{4});
  EXPECT_EQ(changes_.gone(), Ids{3});

  changes_.Update(c_, &t_, true);  // the caller says everything moved
  EXPECT_EQ(changes_.visit(), (Ids{1, 2, 4}));
  EXPECT_EQ(changes_.gone(), Ids{});
}

// A workload that moves from one node to another between passes is visited, not gone.
TEST_F(PlacedChangesTest, AWorkloadThatMovedNodesIsNotGone) {
  Put(1, 0);
  changes_.Update(c_, &t_, false);
  ASSERT_TRUE(c_.Remove(1));
  Put(1, 2);
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{1});
  EXPECT_EQ(changes_.gone(), Ids{});
}

// A telemetry whose version moves but which keeps no log of QPS changes: every pass after a
// move visits everyone; a pass with the version unchanged visits what the nodes say.
class NoLogTelemetry final : public telemetry::Telemetry {
 public:
  std::optional<double> Utilization(std::string_view) const override { return std::nullopt; }
  std::optional<uint64_t> Version() const override { return version; }
  uint64_t version = 1;
};

TEST_F(PlacedChangesTest, WithoutALogEveryMoveOfTheTelemetryVisitsEveryone) {
  NoLogTelemetry t;
  Put(1, 0);
  Put(2, 2);
  changes_.Update(c_, &t, false);
  changes_.Update(c_, &t, false);
  EXPECT_EQ(changes_.visit(), Ids{});
  t.version = 2;
  changes_.Update(c_, &t, false);
  EXPECT_EQ(changes_.visit(), (Ids{1, 2}));
}

// More QPS changes than the log holds between two passes: the log cannot answer, so
// everyone is visited.
TEST_F(PlacedChangesTest, ALogThatOverflowedVisitsEveryone) {
  Put(1, 0);
  Put(2, 2);
  changes_.Update(c_, &t_, false);
  for (size_t i = 0; i <= telemetry::StaticTelemetry::kChangeLog; ++i) {
    t_.SetWorkloadQps("other", static_cast<double>(i));
  }
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), (Ids{1, 2}));
}

}  // namespace
}  // namespace tessera::policy
