#include "sim/engine.h"

#include <gtest/gtest.h>

#include "policy/first_fit.h"
#include "policy/fit.h"

namespace tessera::sim {
namespace {

// A toy ground truth simple enough to follow by hand: a workload completes 10 queries/s when
// alone on its partition and 10/n when n share it, keeping the engine busy 0.5 each and
// loading the SMs 0.5 each; app "oom" fails at start; a GPU draws 10 W + 60 W x SM load.
class ToyTruth : public GroundTruth {
 public:
  RunRate Rate(const model::PlacedWorkload& pw, const model::ClusterState& c) override {
    if (pw.workload.app == "oom") return {0, 0, true, "out of memory"};
    const auto& part = c.partition(pw.placement.slices.at(0).partition);
    return {10.0 / static_cast<double>(part.clients.size()), 0.5, false, "", 0.5};
  }
  double GpuPower(model::GpuIndex, double load, const model::ClusterState&) override {
    return 10 + 60 * load;
  }
};

model::Workload W(model::WorkloadId id, double arrival, int64_t queries, int milli,
                  std::string app = "toy") {
  model::Workload w;
  w.id = id;
  w.app = std::move(app);
  w.arrival_s = arrival;
  w.queries = queries;
  w.gpu.count = 1;
  w.gpu.milli = milli;
  return w;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.AddNode(model::UniformNode("n", *model::FindGpuModel("T4"), 1, 8000, 8192)));
  }
  model::ClusterState c_;
  policy::FirstFit ff_;
  ToyTruth truth_;
  Rng rng_{1};
};

TEST_F(EngineTest, RatesMoveWhenCoLocationChanges) {
  // A: t=0, 100 queries alone at 10/s. B arrives t=5 (A has 50 left) and shares: both 5/s.
  // B's 30 queries end at t=11; A then has 50-30=20 left alone at 10/s: ends t=13.
  Engine e(c_, ff_, truth_, rng_);
  ASSERT_TRUE(e.Add(W(1, 0, 100, 500)));
  ASSERT_TRUE(e.Add(W(2, 5, 30, 500)));
  const EngineResult r = e.Run();
  ASSERT_EQ(r.workloads.size(), 2u);
  EXPECT_DOUBLE_EQ(*r.workloads[0].end_s, 13);
  EXPECT_DOUBLE_EQ(*r.workloads[1].start_s, 5);
  EXPECT_DOUBLE_EQ(*r.workloads[1].end_s, 11);
  EXPECT_NEAR(r.workloads[0].achieved_qps(), 100.0 / 13, 1e-9);
  // Both share the T4 whole, each with half its threads.
  EXPECT_EQ(r.workloads[1].profile, "whole");
  EXPECT_EQ(r.workloads[1].milli, 500);
  EXPECT_NEAR(r.workloads[1].achieved_qps(), 5, 1e-9);
  EXPECT_DOUBLE_EQ(r.end_s, 13);
  // Utilisation 0.5 on [0,5), 1.0 on [5,11), 0.5 on [11,13): (2.5 + 6 + 1) / 13.
  EXPECT_NEAR(r.gpu_util_mean, 9.5 / 13, 1e-9);
  // Power 40 W, 70 W, 40 W over those spans: 200 + 420 + 80 = 700 J.
  EXPECT_NEAR(r.energy_j, 700, 1e-9);
  EXPECT_NEAR(r.power_w_mean, 700.0 / 13, 1e-9);
  EXPECT_TRUE(c_.CheckInvariants());
  EXPECT_EQ(c_.placed_count(), 0u);
}

TEST_F(EngineTest, QueuedWorkloadStartsWhenTheGpuFreesAndFailuresAreRecorded) {
  // A takes the whole GPU for 100/10 = 10 s; B (whole GPU) arrives at 1 and waits until 10,
  // then runs 50/10 = 5 s; C fails the moment it starts (after B, at 15).
  Engine e(c_, ff_, truth_, rng_);
  ASSERT_TRUE(e.Add(W(1, 0, 100, 1000)));
  ASSERT_TRUE(e.Add(W(2, 1, 50, 1000)));
  ASSERT_TRUE(e.Add(W(3, 2, 50, 1000, "oom")));
  EXPECT_FALSE(e.Add(W(3, 2, 50, 1000)));  // duplicate id
  EXPECT_FALSE(e.Add(W(4, 2, 0, 1000)));   // nothing to run
  const EngineResult r = e.Run();
  EXPECT_DOUBLE_EQ(*r.workloads[1].start_s, 10);
  EXPECT_DOUBLE_EQ(r.workloads[1].pending_s(), 9);
  EXPECT_DOUBLE_EQ(*r.workloads[1].end_s, 15);
  EXPECT_TRUE(r.workloads[2].failed);
  EXPECT_EQ(r.workloads[2].failure, "out of memory");
  EXPECT_DOUBLE_EQ(*r.workloads[2].start_s, 15);
  EXPECT_DOUBLE_EQ(r.workloads[2].achieved_qps(), 0);
  EXPECT_EQ(r.scheduler.bound, 3);
}

// Cuts the idle A30 into four 1g.6gb instances and places on the first.
TEST_F(EngineTest, TelemetryCarriesEachRunningWorkloadsRateUntilItEnds) {
  // As in RatesMoveWhenCoLocationChanges: w1 alone at 10/s, at 5/s beside w2 from t=5 to 11,
  // alone at 10/s again, done at t=13. Samples every second; once a workload ends its name
  // is forgotten.
  auto at = [this](double horizon) {
    telemetry::StaticTelemetry telemetry;
    model::ClusterState c = c_;
    model::Workload w1 = W(1, 0, 100, 500), w2 = W(2, 5, 30, 500);
    w1.name = "w1";
    w2.name = "w2";
    Engine e(c, ff_, truth_, rng_, {.horizon_s = horizon, .telemetry = &telemetry});
    EXPECT_TRUE(e.Add(w1));
    EXPECT_TRUE(e.Add(w2));
    e.Run();
    return std::pair{telemetry.WorkloadQps("w1"), telemetry.WorkloadQps("w2")};
  };
  using Q = std::optional<double>;
  EXPECT_EQ(at(3.5), (std::pair<Q, Q>{10.0, std::nullopt}));
  EXPECT_EQ(at(8.5), (std::pair<Q, Q>{5.0, 5.0}));
  EXPECT_EQ(at(12.5), (std::pair<Q, Q>{10.0, std::nullopt}));
  EXPECT_EQ(at(100), (std::pair<Q, Q>{std::nullopt, std::nullopt}));
}

// First fit that moves workload 1 (Eviction::requeue) the first time it shares the cluster.
class MoveOnce : public policy::Policy {
 public:
  std::string_view name() const override { return "move-once"; }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex node,
                                         const model::ClusterState& c) override {
    return inner_.Score(w, node, c);
  }
  std::vector<policy::Eviction> Evict(const model::ClusterState& c) override {
    if (moved_ || c.placed_count() < 2 || !c.Find(1)) return {};
    moved_ = true;
    return {{1, true, "test"}};
  }

 private:
  bool moved_ = false;
  policy::FirstFit inner_;
};

TEST_F(EngineTest, AMovedWorkloadKeepsItsProgressAndPaysTheRestart) {
  // w1: 100 queries alone at 10/s from t=0. w2 arrives at t=5 and binds; w1 is moved then,
  // with 50 done, and bound again at once beside w2 (both 5/s by the toy truth), but serves
  // nothing until t=5+10. w2's 30 queries end at t=11; w1's last 50 run alone from t=15 at
  // 10/s: done at t=20, 100 queries over 20 s from its first start, one move, not a failure.
  MoveOnce policy;
  Engine e(c_, policy, truth_, rng_, {.move_restart_s = 10});
  ASSERT_TRUE(e.Add(W(1, 0, 100, 500)));
  ASSERT_TRUE(e.Add(W(2, 5, 30, 500)));
  const EngineResult r = e.Run();
  const WorkloadOutcome& w1 = r.workloads[0];
  EXPECT_FALSE(w1.failed);
  EXPECT_EQ(w1.moves, 1);
  EXPECT_DOUBLE_EQ(*w1.start_s, 0);
  EXPECT_DOUBLE_EQ(*w1.end_s, 20);
  EXPECT_DOUBLE_EQ(w1.achieved_qps(), 5);
  EXPECT_DOUBLE_EQ(*r.workloads[1].end_s, 11);
}

TEST_F(EngineTest, AnEvictedCheckpointingJobRestartsFromItsLastCheckpoint) {
  // As above, but w1 saves its progress every 20 queries (a training job's checkpoint): moved
  // at t=5 with 50 done, it keeps floor(50 / 20) · 20 = 40 and redoes 10. Its 60 left run alone
  // from t=15 (restart) at 10/s: done at t=21.
  MoveOnce policy;
  Engine e(c_, policy, truth_, rng_, {.move_restart_s = 10});
  model::Workload w1 = W(1, 0, 100, 500);
  w1.checkpoint_queries = 20;
  ASSERT_TRUE(e.Add(w1));
  ASSERT_TRUE(e.Add(W(2, 5, 30, 500)));
  const EngineResult r = e.Run();
  const WorkloadOutcome& o = r.workloads[0];
  EXPECT_FALSE(o.failed);
  EXPECT_EQ(o.moves, 1);
  EXPECT_DOUBLE_EQ(o.lost_queries, 10);
  EXPECT_DOUBLE_EQ(*o.end_s, 21);
  EXPECT_DOUBLE_EQ(o.queries_done, 100);
}

// First fit that, once a second workload runs, gives workload 1 the whole of its partition.
class GrowOnce : public policy::Policy {
 public:
  std::string_view name() const override { return "grow-once"; }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex node,
                                         const model::ClusterState& c) override {
    return inner_.Score(w, node, c);
  }
  std::vector<policy::ResizeTo> Resizes(const model::ClusterState& c) override {
    if (c.placed_count() < 2 || !c.Find(1)) return {};
    std::vector<model::Slice> s = c.Find(1)->placement.slices;
    s[0].milli = 1000;
    return {{1, s}};
  }

 private:
  policy::FirstFit inner_;
};

// Serves milli / 100 queries/s: the MPS share is all that matters.
class ShareTruth : public GroundTruth {
 public:
  RunRate Rate(const model::PlacedWorkload& pw, const model::ClusterState&) override {
    return {pw.placement.slices.at(0).milli / 100.0, 0.5, false, "", 0.5};
  }
  double GpuPower(model::GpuIndex, double, const model::ClusterState&) override { return 0; }
};

TEST_F(EngineTest, APolicysResizeReratesTheWorkloadAtOnce) {
  // w1 at 500 milli serves 5/s on GPU 0; w2 (a whole GPU) lands on GPU 1 at t=5, and the same
  // cycle grows w1 to 1000: 25 done, its 75 left at 10/s end at t=12.5 (20 without the re-rate).
  model::ClusterState c;
  ASSERT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel("T4"), 2, 8000, 8192)));
  GrowOnce policy;
  ShareTruth truth;
  Engine e(c, policy, truth, rng_);
  ASSERT_TRUE(e.Add(W(1, 0, 100, 500)));
  ASSERT_TRUE(e.Add(W(2, 5, 30, 1000)));
  const EngineResult r = e.Run();
  EXPECT_DOUBLE_EQ(*r.workloads[0].end_s, 12.5);
  EXPECT_EQ(r.scheduler.resized, 1);
}

class ReshapeFirst : public policy::Policy {
 public:
  std::string_view name() const override { return "reshape-first"; }
  // The default filter rejects a MIG request on a GPU not cut yet; a reshaping policy judges
  // feasibility itself.
  policy::Feasibility Filter(const model::Workload&, model::NodeIndex,
                             const model::ClusterState&) const override {
    return policy::Feasibility::Yes();
  }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex,
                                         const model::ClusterState& c) override {
    if (c.gpu(0).mig) {
      policy::Candidate cand;
      cand.score = 1;
      cand.placement = *policy::FirstFitPlacement(w, 0, c);
      return cand;
    }
    policy::Candidate cand;
    cand.score = 1;
    cand.placement = {w.id, 0, {{0, 1000, 6144}}};
    cand.reshape = policy::ReshapeTo{
        0, *model::ParseLayout(model::GetGpuModel(c.gpu(0).model), "1g.6gb,1g.6gb,1g.6gb,1g.6gb")};
    return cand;
  }
};

TEST(EngineReshapeTest, AReshapeDelaysTheStartByItsDuration) {
  model::ClusterState c;
  ASSERT_TRUE(
      c.AddNode(model::UniformNode("a30", *model::FindGpuModel("A30-24GB"), 1, 8000, 8192)));
  ReshapeFirst policy;
  ToyTruth truth;
  Rng rng(1);
  Engine e(c, policy, truth, rng, {.reshape_s = 5});
  model::Workload w = W(1, 2, 100, 1000);
  w.gpu.mig_profile = "1g.6gb";
  ASSERT_TRUE(e.Add(w));
  const EngineResult r = e.Run();
  // Arrives at 2, reshape 2..7, then 100 queries at 10/s: ends at 17.
  EXPECT_DOUBLE_EQ(*r.workloads[0].start_s, 7);
  EXPECT_DOUBLE_EQ(*r.workloads[0].end_s, 17);
  EXPECT_EQ(r.workloads[0].profile, "1g.6gb");
  EXPECT_EQ(r.workloads[0].partition.rfind("MIG-", 0), 0u);
  EXPECT_EQ(r.scheduler.reshapes, 1);
  EXPECT_EQ(c.gpu(0).partition_count, 4);
}

}  // namespace
}  // namespace tessera::sim
