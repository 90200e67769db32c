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

  // Visited for their node, not their QPS: the log answered and named neither.
  EXPECT_FALSE(changes_.QpsMayHaveMoved(3));
  EXPECT_FALSE(changes_.QpsMayHaveMoved(4));

  t_.SetWorkloadQps("pod-2", 10);   // a QPS on node 0, which did not change
  t_.SetUtilization("GPU-x", 0.5);  // not a QPS
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{2});
  EXPECT_TRUE(changes_.QpsMayHaveMoved(2));
  EXPECT_FALSE(changes_.QpsMayHaveMoved(1));
  t_.SetWorkloadQps("pod-2", 10);  // the same value: no change
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{});
  EXPECT_FALSE(changes_.QpsMayHaveMoved(2));

  ASSERT_TRUE(c_.Remove(3));
  t_.SetWorkloadQps("pod-3", 5);  // a workload that left: not visited
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{4});
  EXPECT_EQ(changes_.gone(), Ids{3});

  changes_.Update(c_, &t_, true);  // the caller says everything moved
  EXPECT_EQ(changes_.visit(), (Ids{1, 2, 4}));
  EXPECT_EQ(changes_.gone(), Ids{});
  EXPECT_TRUE(changes_.QpsMayHaveMoved(1));  // the log was not read: anything may have
}

// The names the log is matched by are made as workloads arrive on a node, and rebuilt from
// the nodes when entries of departed workloads pile up: a QPS change of a workload that has
// stayed on its node through many arrivals and departures beside it is still seen.
TEST_F(PlacedChangesTest, ALongStayingWorkloadsQpsIsSeenAfterTheNamesAreRebuilt) {
  Put(1, 0);
  changes_.Update(c_, &t_, false);
  // 3,000 workloads come and go beside it (node 0 changes at every pass): more names than
  // 2 × placed + 1,024, so the map of names is rebuilt at least once.
  for (WorkloadId id = 100; id < 3100; ++id) {
    Put(id, 1);
    changes_.Update(c_, &t_, false);
    ASSERT_TRUE(c_.Remove(id));
    changes_.Update(c_, &t_, false);
  }
  t_.SetWorkloadQps("pod-1", 7);
  changes_.Update(c_, &t_, false);
  EXPECT_EQ(changes_.visit(), Ids{1});
  EXPECT_TRUE(changes_.QpsMayHaveMoved(1));
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
