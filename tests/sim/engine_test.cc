#include "sim/engine.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "policy/first_fit.h"
#include "policy/fit.h"
#include "sim/physics.h"

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
  policy::CycleActions AfterCycle(const model::ClusterState& c) override {
    if (moved_ || c.placed_count() < 2 || !c.Find(1)) return {};
    moved_ = true;
    return {.evictions = {{1, true, "test"}}};
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

// ToyTruth whose "steady" application holds 8000 MiB (SM 0.3, bandwidth 0.2) from its start and
// whose "grow" application holds 4000 MiB for 5 s, then 9000 MiB (SM 0.6, bandwidth 0.4).
class UsageTruth : public ToyTruth {
 public:
  std::optional<UsagePoint> UsageAt(const model::Workload& w, double since) const override {
    if (w.app == "steady") return UsagePoint{8000, 0.3, 0.2};
    if (w.app == "grow") return since < 5 ? UsagePoint{4000, 0.1, 0.1} : UsagePoint{9000, 0.6, 0.4};
    return std::nullopt;
  }
};

TEST_F(EngineTest, AGpuOutgrownByItsClientsKillsTheGrowerWhichRestartsFromItsCheckpoint) {
  // Both share the T4 (16384 MiB) at 5/s each, reserving no memory. At t = 5 the grower's 9000
  // MiB beside the steady 8000 make 17000 > 16384: the grower (+5000 MiB since t = 4; the steady
  // one +0) crashes. Done 25, it keeps floor(25/20)·20 = 20 and redoes 5; it serves nothing until
  // t = 15 and restarts its trajectory there (4000 MiB, fits). The steady one's 90 queries end at
  // t = 18; by then the grower has done 20 + 3·5 = 35 and runs alone at 10/s: its 65 left end at
  // t = 24.5. At t = 20 it grows again, to 9000 MiB alone: no crash.
  ASSERT_EQ(c_.partition(0).memory_mib, 16384);
  UsageTruth truth;
  telemetry::StaticTelemetry t;
  Engine e(c_, ff_, truth, rng_, {.telemetry = &t, .oom_relaunch_s = 10});
  model::Workload steady = W(1, 0, 90, 500, "steady");
  steady.name = "steady";
  model::Workload grow = W(2, 0, 100, 500, "grow");
  grow.name = "grow";
  grow.checkpoint_queries = 20;
  ASSERT_TRUE(e.Add(steady));
  ASSERT_TRUE(e.Add(grow));
  const EngineResult r = e.Run();
  EXPECT_EQ(r.workloads[0].oom_kills, 0);
  EXPECT_DOUBLE_EQ(*r.workloads[0].end_s, 18);
  const WorkloadOutcome& g = r.workloads[1];
  EXPECT_EQ(g.oom_kills, 1);
  EXPECT_DOUBLE_EQ(g.lost_queries, 5);
  EXPECT_DOUBLE_EQ(*g.end_s, 24.5);
  EXPECT_DOUBLE_EQ(g.queries_done, 100);
  EXPECT_FALSE(g.failed);
  // The series a DCGM exporter and the agent would have shown, sampled each second: the GPU's
  // memory is 12000 until t = 4, 8000 at the crash (the grower holds nothing), 8000 + 4000 from
  // t = 15; the grower's own series shows 0 while it restarts.
  const std::string& gpu = c_.partition(0).uuid;
  auto memory = t.MemoryUsed(gpu, 1e9);
  ASSERT_TRUE(memory);
  auto at = [](const telemetry::Series& s, double when) {
    for (const telemetry::Sample& x : s) {
      if (x.t == when) return x.value;
    }
    return -1.0;
  };
  EXPECT_EQ(at(*memory, 4), 12000);
  EXPECT_EQ(at(*memory, 5), 8000);
  EXPECT_EQ(at(*memory, 10), 8000);
  EXPECT_EQ(at(*memory, 15), 12000);
  auto sm = t.SmActivitySeries(gpu, 1e9);
  ASSERT_TRUE(sm);
  EXPECT_NEAR(at(*sm, 4), 0.4, 1e-12);   // 0.3 + 0.1
  EXPECT_NEAR(at(*sm, 20), 0.6, 1e-12);  // the grower alone
  // A finished workload's own series are forgotten with it.
  EXPECT_EQ(t.BandwidthSeries("grow", 1e9), std::nullopt);
  // Memory held, each sample for its second: 12000 × 5 (t = 0..4) + 8000 × 10 (5..14) + 12000 × 3
  // (15..17) + 4000 × 2 (18, 19: the steady one ended at 18) + 9000 × 5 (20..24) MiB·s.
  EXPECT_DOUBLE_EQ(r.gpu_memory_integral, 60000 + 80000 + 36000 + 8000 + 45000);
}

// Two growers (4,000 → 9,000 MiB at t = 5) beside the steady 8,000 MiB on the T4 (16,384 MiB):
// at t = 5 the three hold 26,000. One crash leaves 17,000, still over; growth is 5,000 each.
TEST_F(EngineTest, GrowersCrashUntilTheGpuFitsAndAContainerHoldingNothingNeverCrashes) {
  const std::string& gpu = c_.partition(0).uuid;
  auto memory_at = [&](const telemetry::StaticTelemetry& t, double when) {
    const auto series = t.MemoryUsed(gpu, 1e9);  // kept: a range over *temporary dangles
    for (const telemetry::Sample& x : *series) {
      if (x.t == when) return x.value;
    }
    return -1.0;
  };
  auto run = [&](OomRule rule, telemetry::StaticTelemetry& t) {
    UsageTruth truth;
    model::ClusterState c;  // each run its own T4, as c_ (a run leaves its workloads placed)
    EXPECT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel("T4"), 1, 8000, 8192)));
    Engine e(c, ff_, truth, rng_,
             {.horizon_s = 9, .telemetry = &t, .oom_relaunch_s = 10, .oom_rule = rule});
    for (model::WorkloadId id : {1, 2, 3}) {
      model::Workload w = W(id, 0, 100000, 300, id == 1 ? "steady" : "grow");
      w.name = fmt::format("w{}", id);
      EXPECT_TRUE(e.Add(w));
    }
    return e.Run();
  };
  // kGrowersUntilFit: both growers crash at t = 5 (8,000 + 0 + 0 fits), and none after: the two
  // are in their 10-s back-off, holding nothing, until t = 15.
  telemetry::StaticTelemetry fit;
  const EngineResult r = run(OomRule::kGrowersUntilFit, fit);
  EXPECT_EQ(r.workloads[0].oom_kills, 0);
  EXPECT_EQ(r.workloads[1].oom_kills, 1);
  EXPECT_EQ(r.workloads[2].oom_kills, 1);
  for (double t : {5.0, 6.0, 8.0}) EXPECT_EQ(memory_at(fit, t), 8000) << t;
  // kOneGrower (the old rule): w3 (the later of the tied growers) crashes at t = 5; w2's 9,000
  // beside the steady 8,000 stay over the T4, and each later sample kills the top of a tie at
  // 0 growth — w3 again, holding nothing — so w3 counts 5 crashes by the horizon (t = 5, 6, 7, 8,
  // 9) and w2 none.
  telemetry::StaticTelemetry one;
  const EngineResult old = run(OomRule::kOneGrower, one);
  EXPECT_EQ(old.workloads[1].oom_kills, 0);
  EXPECT_EQ(old.workloads[2].oom_kills, 5);
  EXPECT_EQ(memory_at(one, 6), 17000);
}

TEST_F(EngineTest, EachWorkloadsOwnUseIsPublishedUnderItsName) {
  // The run above, stopped at t = 12 while the grower restarts: its own memory was 4000 MiB
  // until t = 4 and is 0 from the crash on; the steady one's is 8000 MiB throughout.
  UsageTruth truth;
  telemetry::StaticTelemetry t;
  Engine e(c_, ff_, truth, rng_, {.horizon_s = 12, .telemetry = &t, .oom_relaunch_s = 10});
  model::Workload steady = W(1, 0, 90, 500, "steady");
  steady.name = "steady";
  model::Workload grow = W(2, 0, 100, 500, "grow");
  grow.name = "grow";
  ASSERT_TRUE(e.Add(steady));
  ASSERT_TRUE(e.Add(grow));
  (void)e.Run();
  auto grower = t.MemoryUsed("grow", 1e9);
  ASSERT_TRUE(grower);
  ASSERT_EQ(grower->size(), 13u);  // t = 0, 1, ..., 12
  EXPECT_EQ((*grower)[4].value, 4000);
  EXPECT_EQ((*grower)[5].value, 0);
  EXPECT_EQ((*grower)[12].value, 0);
  auto bw = t.BandwidthSeries("steady", 1e9);
  ASSERT_TRUE(bw);
  EXPECT_EQ(bw->back().value, 0.2);
  EXPECT_EQ(t.MemoryUsed("steady", 1e9)->back().value, 8000);
}

// A workload that alone outgrows its GPU crash-loops under the kubelet's back-off: 4,000 MiB for
// 5 s, then 20,000 > 16,384. Crashes at t = 5 (back 10 s later, at 15), 20 (back after 20 s, at
// 40), 45 (after 40 s, at 85) and 90 (after 80 s, at 170): four by t = 100.
class AloneTooBig : public ToyTruth {
 public:
  std::optional<UsagePoint> UsageAt(const model::Workload&, double since) const override {
    return since < 5 ? UsagePoint{4000, 0.1, 0.1} : UsagePoint{20000, 0.5, 0.5};
  }
};

TEST_F(EngineTest, ACrashLoopBacksOffAsTheKubeletDoes) {
  AloneTooBig truth;
  Engine e(c_, ff_, truth, rng_, {.horizon_s = 100});
  ASSERT_TRUE(e.Add(W(1, 0, 100000, 1000)));
  const EngineResult r = e.Run();
  EXPECT_EQ(r.workloads[0].oom_kills, 4);
  EXPECT_FALSE(r.workloads[0].end_s.has_value());
}

TEST_F(EngineTest, WithoutTrajectoriesNoUsageIsSampled) {
  // The toy application states no usage: nothing is published beyond utilisation and rates,
  // and nothing is killed, however much the slices reserve.
  telemetry::StaticTelemetry t;
  Engine e(c_, ff_, truth_, rng_, {.telemetry = &t});
  ASSERT_TRUE(e.Add(W(1, 0, 100, 500)));
  const EngineResult r = e.Run();
  EXPECT_EQ(r.workloads[0].oom_kills, 0);
  EXPECT_EQ(t.MemoryUsed(c_.partition(0).uuid, 1e9), std::nullopt);
}

// First fit that, once a second workload runs, gives workload 1 the whole of its partition.
class GrowOnce : public policy::Policy {
 public:
  std::string_view name() const override { return "grow-once"; }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex node,
                                         const model::ClusterState& c) override {
    return inner_.Score(w, node, c);
  }
  policy::CycleActions AfterCycle(const model::ClusterState& c) override {
    if (c.placed_count() < 2 || !c.Find(1)) return {};
    std::vector<model::Slice> s = c.Find(1)->placement.slices;
    s[0].milli = 1000;
    return {.resizes = {{1, s}}};
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

namespace tessera::sim {
namespace {

// An online service offered λ(t) = t / 30 QPS, capacity 10 QPS; busy and SM load
// 0.5 × λ / 10 each. The truth sees time only through SetTime.
class LoadTruth : public GroundTruth {
 public:
  void SetTime(double t) override { now_ = t; }
  bool HasOfferedLoad(const model::Workload& w) const override { return w.app == "svc"; }
  RunRate Rate(const model::PlacedWorkload& pw, const model::ClusterState&) override {
    const double lambda = HasOfferedLoad(pw.workload) ? std::min(10.0, now_ / 30) : 10.0;
    const double u = lambda / 10;
    return {.qps = lambda, .gpu_busy = 0.5 * u, .sm_load = 0.5 * u, .capacity_qps = 10};
  }
  double GpuPower(model::GpuIndex, double, const model::ClusterState&) override { return 0; }

 private:
  double now_ = 0;
};

TEST(EngineLoadTest, ServicesAreReRatedAndSampledEveryLoadTick) {
  model::ClusterState c;
  ASSERT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel("T4"), 1, 8000, 8192)));
  policy::FirstFit ff;
  LoadTruth truth;
  Rng rng(1);
  telemetry::StaticTelemetry telemetry;
  Engine e(c, ff, truth, rng, {.horizon_s = 185, .telemetry = &telemetry, .load_interval_s = 60});
  model::Workload w = W(1, 0, int64_t{1} << 40, 1000, "svc");
  w.name = "svc-0";
  ASSERT_TRUE(e.Add(w));
  const EngineResult r = e.Run();
  // Ticks at 60, 120 and 180 s: λ = 2, 4, 6 QPS of a capacity of 10.
  const std::vector<LoadSample>& load = r.workloads[0].load;
  ASSERT_EQ(load.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(load[i].t, 60.0 * static_cast<double>(i + 1));
    EXPECT_DOUBLE_EQ(load[i].capacity_qps, 10);
    EXPECT_DOUBLE_EQ(load[i].served_qps, 2.0 * static_cast<double>(i + 1));
  }
  ASSERT_EQ(r.load_ticks.size(), 3u);
  EXPECT_DOUBLE_EQ(r.load_ticks[2].gpu_util, 0.3);
  EXPECT_DOUBLE_EQ(r.load_ticks[2].sm_activity, 0.3);
  // SM activity by workload and by GPU, as muxflow's dynamic SM reads them.
  EXPECT_DOUBLE_EQ(*telemetry.SmActivity("svc-0"), 0.3);
  EXPECT_DOUBLE_EQ(*telemetry.SmActivity(c.gpu(0).uuid), 0.3);
  // ∫ SM load: 0 until the first re-rate at 60, 0.1 to 120, 0.2 to 180, 0.3 to 185.
  EXPECT_NEAR(r.sm_activity_integral, 60 * 0.1 + 60 * 0.2 + 5 * 0.3, 1e-9);
  EXPECT_FALSE(r.workloads[0].end_s);  // a service runs to the horizon
}

}  // namespace
}  // namespace tessera::sim

namespace tessera::sim {
namespace {

// Puts every workload's CPU on node 0 and its GPU on node `id` (remote; seed 002).
class RemotePlacer : public policy::Policy {
 public:
  std::string_view name() const override { return "remote-placer"; }
  policy::Feasibility Filter(const model::Workload&, model::NodeIndex node,
                             const model::ClusterState&) const override {
    return node == 0 ? policy::Feasibility::Yes() : policy::Feasibility::No("not node 0");
  }
  std::optional<policy::Candidate> Score(const model::Workload& w, model::NodeIndex,
                                         const model::ClusterState& c) override {
    const model::GpuIndex g = c.node(static_cast<model::NodeIndex>(w.id)).first_gpu;
    return policy::Candidate{
        .score = 1,
        .placement = {.workload = w.id,
                      .node = 0,
                      .slices = {{model::ClusterState::PartitionOf(g, 0), 1000, 0, false, true}}}};
  }
};

// NW-like (seed 002 Fig. 3: 17 % of its run on the network alone, 49 % under load) at 100
// queries/s locally: 83/s remote and alone, 75/s while another stream shares its CPU node
// (load 0.17: 83 / (1 + (0.83/0.51 − 1) · 0.17) = 75). Job 1 (1,660 queries) starts at t = 0,
// job 2 (1,500) at t = 10, when job 1 has 830 left: both at 75/s, so job 1 ends at 10 + 830/75
// = 21.067; job 2 has done 830 by then and ends 670/83 = 8.072 s later. Without the re-rate
// (job 1 left at 83/s) job 1 would end at t = 20.
TEST(EngineRemoteTest, ARemoteStreamStartingOrEndingReratesTheOthersOnItsNodes) {
  auto catalog = ParseAppCatalog(R"(
apps:
  - key: nw
    compute_s: 0
    memory_s: 0
    fixed_s: 0.01
    footprint_mib: 1000
    remote: {network_share: 0.17, network_share_loaded: 0.49}
)",
                                 "test.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  model::ClusterState c;
  const auto k80 = *model::FindGpuModel("K80");
  ASSERT_TRUE(c.AddNode(model::UniformNode("cpu", k80, 0, 64000, 1 << 20)));
  for (const char* name : {"g1", "g2"}) {
    ASSERT_TRUE(c.AddNode(model::UniformNode(name, k80, 1, 64000, 1 << 20)));
  }
  Physics physics(*catalog, 1, {.noise_sd = 0});
  RemotePlacer placer;
  Rng rng(1);
  Engine e(c, placer, physics, rng);
  model::Workload a = W(1, 0, 1660, 1000, "nw"), b = W(2, 10, 1500, 1000, "nw");
  ASSERT_TRUE(e.Add(a));
  ASSERT_TRUE(e.Add(b));
  const EngineResult r = e.Run();
  ASSERT_EQ(r.workloads.size(), 2u);
  EXPECT_NEAR(*r.workloads[0].end_s, 10 + 830.0 / 75, 1e-6);
  EXPECT_NEAR(*r.workloads[1].end_s, 10 + 830.0 / 75 + 670.0 / 83, 1e-6);
  EXPECT_EQ(r.workloads[0].remote_slices, 1);
  EXPECT_EQ(r.workloads[1].remote_slices, 1);
}

// Seed 002's simulator (≈430) re-rates every task of a machine when one starts or finishes,
// local ones too. An NW-like job (100 queries/s alone on its local K80, 10 % of its run on
// storage I/O over the node's link) runs from t = 0; at t = 10 an Iperf-like job (the link
// saturated, CPU-only) starts on the same node: the job's disk part stretches by 1 + 3.69 × 1,
// so it runs at 100 / (1 + 0.1 × 3.69) = 73.05/s. 2,000 queries: 1,000 done by t = 10, the rest
// at 73.05/s end at 10 + 1,000 / 73.05 = 23.69 (Iperf runs for 100 s). Without the neighbours'
// re-rate the job keeps its 100/s (nothing on its GPU changed) and ends at t = 20.
TEST(EngineLinkTest, ANetworkHeavyNeighbourReratesALocalJobOnItsNode) {
  auto catalog = ParseAppCatalog(R"(
apps:
  - key: nw
    compute_s: 0
    memory_s: 0
    fixed_s: 0.01
    footprint_mib: 1000
    link: {disk_share: 0.1}
  - key: iperf
    compute_s: 0
    memory_s: 0
    fixed_s: 1
    footprint_mib: 0
    link: {load: 1}
)",
                                 "test.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  const auto end_of_job = [&](bool rerate) {
    model::ClusterState c;
    EXPECT_TRUE(c.AddNode(model::UniformNode("n", *model::FindGpuModel("K80"), 1, 64000, 1 << 20)));
    Physics physics(*catalog, 1, {.noise_sd = 0, .link_colocation = true});
    policy::FirstFit ff;
    Rng rng(1);
    Engine e(c, ff, physics, rng, {.rerate_node_neighbours = rerate});
    model::Workload iperf = W(2, 10, 100, 0, "iperf");
    iperf.gpu = {};
    EXPECT_TRUE(e.Add(W(1, 0, 2000, 1000, "nw")));
    EXPECT_TRUE(e.Add(iperf));
    const EngineResult r = e.Run();
    EXPECT_NEAR(*r.workloads[1].end_s, 110, 1e-6);
    return *r.workloads[0].end_s;
  };
  EXPECT_NEAR(end_of_job(true), 10 + 1000 / (100 / (1 + 0.1 * 3.69)), 1e-6);
  EXPECT_NEAR(end_of_job(false), 20, 1e-6);
}

}  // namespace
}  // namespace tessera::sim
