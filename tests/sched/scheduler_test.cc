#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <span>
#include <utility>

#include "policy/first_fit.h"
#include "policy/fit.h"
#include "sched/two_nodes.h"

namespace tessera::sched {
namespace {

using model::FindGpuModel;
using model::GetGpuModel;
using model::ParseLayout;
using model::UniformNode;
using policy::Candidate;

using testing_support::CountingFirstFit;
using testing_support::Share;

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing_support::AddTwoNodes(c_));
    hooks_.bind = [this](const Workload& w, const model::Placement& p,
                         const model::Environment& env) -> Expected<void> {
      if (fail_binds_) return Fail("api server said no");
      bound_.push_back({w.id, p.node});
      envs_.push_back(env.cuda_visible_devices);
      return {};
    };
  }
  ClusterState c_;
  ManualClock clock_;
  Rng rng_{7};
  Hooks hooks_;
  bool fail_binds_ = false;
  std::vector<std::pair<WorkloadId, model::NodeIndex>> bound_;
  std::vector<std::string> envs_;
};

TEST_F(SchedulerTest, FirstFitBindsInArrivalOrderThroughTheHook) {
  policy::FirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  // Submitted out of order; FIFO by arrival: 2 (t=1), 1 (t=2), 3 (t=3).
  ASSERT_TRUE(s.Submit(Share(1, 600, 2)));
  ASSERT_TRUE(s.Submit(Share(2, 600, 1)));
  ASSERT_TRUE(s.Submit(Share(3, 600, 3)));
  const CycleStats st = s.RunCycle();
  // 2 takes 600 of n0; 1 does not fit beside it (600 + 600 > 1000) so it goes to n1 (an A30
  // with MIG off, one whole GPU); 3 then fits on neither and stays pending.
  EXPECT_EQ(st.bound, 2);
  EXPECT_EQ(s.pending_count(), 1u);
  ASSERT_EQ(bound_.size(), 2u);
  EXPECT_EQ(bound_[0], (std::pair<WorkloadId, model::NodeIndex>{2, 0}));
  EXPECT_EQ(bound_[1], (std::pair<WorkloadId, model::NodeIndex>{1, 1}));
  EXPECT_EQ(envs_[0], c_.gpu(0).uuid);
}

TEST_F(SchedulerTest, UnschedulableStaysQueuedWithTheReasonsOrIsDropped) {
  policy::FirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 1000)));
  ASSERT_TRUE(s.Submit(Share(2, 1000)));
  Workload big = Share(3, 1000);
  big.gpu.count = 2;
  ASSERT_TRUE(s.Submit(big));
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bound, 2);
  EXPECT_EQ(st.unschedulable, 1);
  EXPECT_EQ(s.pending_count(), 1u);
  EXPECT_EQ(s.LastReason(3), "0/2 nodes are available: 2 too few GPUs");

  Scheduler dropper(c_, ff, clock_, rng_, hooks_, {.drop_unschedulable = true});
  ASSERT_TRUE(dropper.Submit(Share(4, 500)));
  EXPECT_EQ(dropper.RunCycle().dropped, 1);
  EXPECT_EQ(dropper.pending_count(), 0u);
  // Both GPUs are taken whole by 1 and 2.
  EXPECT_EQ(dropper.LastReason(4), "0/2 nodes are available: 2 no GPU with enough free share");
}

TEST_F(SchedulerTest, FailedBindUndoesTheReservation) {
  policy::FirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 500)));
  fail_binds_ = true;
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bind_failures, 1);
  EXPECT_EQ(c_.placed_count(), 0u);
  EXPECT_EQ(c_.gpu(0).free_milli, 1000);
  EXPECT_EQ(s.pending_count(), 1u);
  EXPECT_EQ(s.LastReason(1), "bind failed: api server said no");
  fail_binds_ = false;
  EXPECT_EQ(s.RunCycle().bound, 1);
  EXPECT_TRUE(s.Finish(1));
  EXPECT_EQ(c_.gpu(0).free_milli, 1000);
  EXPECT_TRUE(c_.CheckInvariants());
}

// Cuts the A30 into 4 x 1g.6gb before placing, and places the workload on instance 2.
class ReshapeFirst : public policy::Policy {
 public:
  std::string_view name() const override { return "reshape-first"; }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex n,
                                 const ClusterState& c) override {
    if (n != 1) return std::nullopt;
    const auto& a30 = GetGpuModel(c.gpu(1).model);
    return Candidate{50,
                     {w.id, 1, {{ClusterState::PartitionOf(1, 2), 1000, 6144}}},
                     policy::ReshapeTo{1, *ParseLayout(a30, "1g.6gb,1g.6gb,1g.6gb,1g.6gb")}};
  }
};

TEST_F(SchedulerTest, ReshapeParksTheWorkloadUntilTheDriverSaysDone) {
  ReshapeFirst policy;
  std::vector<GpuIndex> reshaping;
  hooks_.reshape = [&](GpuIndex g, const std::optional<model::MigLayout>&) {
    reshaping.push_back(g);
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 1000)));
  CycleStats st = s.RunCycle();
  EXPECT_EQ(st.reshapes, 1);
  EXPECT_EQ(st.parked, 1);
  EXPECT_EQ(reshaping, std::vector<GpuIndex>{1});
  EXPECT_FALSE(c_.gpu(1).available);
  EXPECT_EQ(c_.gpu(1).partition_count, 4);
  EXPECT_EQ(s.pending_count(), 0u);
  EXPECT_TRUE(bound_.empty());
  st = s.ReshapeDone(1);
  EXPECT_EQ(st.bound, 1);
  EXPECT_TRUE(c_.gpu(1).available);
  EXPECT_EQ(c_.partition(ClusterState::PartitionOf(1, 2)).clients.size(), 1u);
  EXPECT_TRUE(c_.CheckInvariants());
}

// Exercises the batch, proactive reshape and end-of-cycle hooks together.
class Batchy : public policy::Policy {
 public:
  std::string_view name() const override { return "batchy"; }
  std::optional<Candidate> Score(const Workload&, model::NodeIndex, const ClusterState&) override {
    return std::nullopt;
  }
  bool Batches() const override { return true; }
  std::optional<std::vector<Candidate>> PlaceBatch(std::span<const Workload* const> pending,
                                                   const ClusterState& c) override {
    std::vector<Candidate> out;
    for (const Workload* w : pending) {
      if (w->id == 1) out.push_back({1, *policy::FirstFitPlacement(*w, 0, c), std::nullopt});
    }
    return out;
  }
  std::optional<std::optional<model::MigLayout>> Reshape(GpuIndex g,
                                                         const ClusterState& c) override {
    return std::optional<model::MigLayout>(
        *ParseLayout(GetGpuModel(c.gpu(g).model), "2g.12gb,2g.12gb"));
  }
  policy::CycleActions AfterCycle(const ClusterState& c) override {
    if (c.Find(1) && ++cycles_ == 2) return {.evictions = {{1, false, "test"}}};
    return {};
  }
  int cycles_ = 0;
};

TEST_F(SchedulerTest, BatchReshapeAndEvictHooks) {
  Batchy policy;
  std::vector<WorkloadId> evicted;
  hooks_.evict = [&](const Workload& w, const policy::Eviction&) -> Expected<void> {
    evicted.push_back(w.id);
    return {};
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 500)));
  ASSERT_TRUE(s.Submit(Share(2, 500)));
  CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bound, 1);
  EXPECT_EQ(s.pending_count(), 1u);  // 2 was not in the batch
  EXPECT_EQ(st.reshapes, 1);         // the idle A30 was cut in two (no hook: at once)
  EXPECT_EQ(c_.gpu(1).partition_count, 2);
  EXPECT_TRUE(c_.gpu(1).available);
  EXPECT_EQ(s.RunCycle().reshapes, 0);  // already in that layout
  EXPECT_EQ(evicted, std::vector<WorkloadId>{1});
  EXPECT_EQ(c_.placed_count(), 0u);
}

TEST_F(SchedulerTest, RandomTieBreakIsSeededAndSpreads) {
  ClusterState wide;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(
        wide.AddNode(UniformNode("n" + std::to_string(i), *FindGpuModel("T4"), 1, 1000, 1000)));
  }
  auto run = [&](uint64_t seed) {
    ClusterState c = wide;
    Rng rng(seed);
    policy::FirstFit ff;
    std::vector<model::NodeIndex> nodes;
    Hooks h;
    h.bind = [&](const Workload&, const model::Placement& p,
                 const model::Environment&) -> Expected<void> {
      nodes.push_back(p.node);
      return {};
    };
    Scheduler s(c, ff, clock_, rng, h, {.tie_break = TieBreak::kRandom});
    for (int i = 1; i <= 4; ++i) EXPECT_TRUE(s.Submit(Share(i, 100)));
    s.RunCycle();
    return nodes;
  };
  EXPECT_EQ(run(1), run(1));
  bool spread = false;
  for (model::NodeIndex n : run(1)) spread |= n != 0;
  EXPECT_TRUE(spread);
}

// Halves whoever runs on the V100 to make room for the newcomer at 500 milli.
class HalveNeighbour : public policy::Policy {
 public:
  std::string_view name() const override { return "halve"; }
  policy::Feasibility Filter(const Workload&, model::NodeIndex n,
                             const ClusterState&) const override {
    return n == 0 ? policy::Feasibility::Yes() : policy::Feasibility::No("not the V100");
  }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex,
                                 const ClusterState& c) override {
    Candidate cand;
    cand.score = 1;
    cand.placement = {w.id, 0, {{0, 500, 0}}};
    for (const model::Client& other : c.partition(0).clients) {
      cand.resizes.push_back({other.workload, {{0, 500, 0}}});
    }
    return cand;
  }
};

TEST_F(SchedulerTest, ResizesApplyWithThePlacementAndRollBackWithAFailedBind) {
  ASSERT_TRUE(c_.Place(Share(1, 1000), {1, 0, {{0, 1000, 0}}}));
  HalveNeighbour policy;
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(2, 500)));
  fail_binds_ = true;
  EXPECT_EQ(s.RunCycle().bind_failures, 1);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 1000);  // rolled back
  EXPECT_EQ(c_.partition(0).used_milli, 1000);
  fail_binds_ = false;
  EXPECT_EQ(s.RunCycle().bound, 1);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 500);
  EXPECT_EQ(c_.Find(2)->placement.slices[0].milli, 500);
  EXPECT_TRUE(c_.CheckInvariants());
}

TEST_F(SchedulerTest, SubmitRefusesDuplicatesAndInvalidRequests) {
  policy::FirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 500)));
  EXPECT_FALSE(s.Submit(Share(1, 500)));
  EXPECT_FALSE(s.Submit(Share(2, 1500)));
  EXPECT_TRUE(s.Cancel(1));
  EXPECT_EQ(s.pending_count(), 0u);
}

// First fit's placement with a fixed score and ceiling per node, counting Score calls;
// `declares` sets OfferInputs::score_ceilings.
class CeilingPolicy : public policy::Policy {
 public:
  CeilingPolicy(std::vector<double> scores, std::vector<double> ceilings, bool declares = false)
      : scores_(std::move(scores)), ceilings_(std::move(ceilings)), declares_(declares) {}
  std::string_view name() const override { return "ceiling"; }
  OfferInputs OffersDependOn() const override { return {.score_ceilings = declares_}; }
  policy::Feasibility Filter(const Workload& w, model::NodeIndex n,
                             const ClusterState& c) const override {
    return inner_.Filter(w, n, c);
  }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex n,
                                 const ClusterState& c) override {
    scored.push_back(n);
    std::optional<Candidate> offer = inner_.Score(w, n, c);
    if (offer) offer->score = scores_[n];
    return offer;
  }
  std::optional<double> ScoreCeiling(const Workload&, model::NodeIndex n,
                                     const ClusterState&) override {
    return ceilings_[n];
  }
  std::vector<model::NodeIndex> scored;

 private:
  std::vector<double> scores_, ceilings_;
  bool declares_;
  policy::FirstFit inner_;
};

// The core skips a node whose ceiling is below the best offer so far, and only such a node:
// one that could tie is scored (the tie rules stay as they were), and so is every node while
// the `scored` hook records each node's offer.
TEST_F(SchedulerTest, ANodeWhoseCeilingIsBelowTheBestSoFarIsNotScored) {
  const auto v100 = *FindGpuModel("V100-32GB");
  ASSERT_TRUE(c_.AddNode(UniformNode("n2", v100, 1, 8000, 65536)));
  ASSERT_TRUE(c_.AddNode(UniformNode("n3", v100, 1, 8000, 65536)));
  // n0 offers 50. n1 (ceiling 40 < 50) is skipped; n2 (ceiling 50) may tie and is scored;
  // n3 (ceiling 90) is scored and wins with 70.
  CeilingPolicy p({50, 30, 50, 70}, {60, 40, 50, 90});
  Scheduler s(c_, p, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 500, 1)));
  s.RunCycle();
  EXPECT_EQ(p.scored, (std::vector<model::NodeIndex>{0, 2, 3}));
  ASSERT_EQ(bound_.size(), 1u);
  EXPECT_EQ(bound_[0].second, 3);
  // With every offer recorded, every node is scored.
  CeilingPolicy recorded({50, 30, 50, 70}, {60, 40, 50, 90});
  ClusterState other = c_;
  ASSERT_TRUE(other.Remove(1));  // the copy starts empty again
  Hooks hooks = hooks_;
  int offers = 0;
  hooks.scored = [&](const Workload&, const Candidate&, std::span<const Offer> o) {
    offers = static_cast<int>(o.size());
  };
  Scheduler r(other, recorded, clock_, rng_, hooks);
  ASSERT_TRUE(r.Submit(Share(2, 500, 2)));
  r.RunCycle();
  EXPECT_EQ(recorded.scored, (std::vector<model::NodeIndex>{0, 1, 2, 3}));
  EXPECT_EQ(offers, 4);
}

// A policy that declares cheap ceilings has its nodes scored highest ceiling first (the lower
// node first among equal ceilings) until a ceiling is below the best offer; the choice is the
// scan's: the highest score, the lowest node among ties.
TEST_F(SchedulerTest, DeclaredCeilingsAreScoredHighestFirstAndChooseAsTheScanDoes) {
  const auto v100 = *FindGpuModel("V100-32GB");
  ASSERT_TRUE(c_.AddNode(UniformNode("n2", v100, 1, 8000, 65536)));
  ASSERT_TRUE(c_.AddNode(UniformNode("n3", v100, 1, 8000, 65536)));
  // Order n1 (90), n3 (90), n2 (70), n0 (50): n1 offers 60, n3 ties it (n1 stays, the lower
  // node), n2 beats it with 65, and n0's ceiling 50 < 65 ends the search. The scan picks n2 too.
  CeilingPolicy p({50, 60, 65, 60}, {50, 90, 70, 90}, true);
  Scheduler s(c_, p, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 250, 1)));
  s.RunCycle();
  EXPECT_EQ(p.scored, (std::vector<model::NodeIndex>{1, 3, 2}));
  ASSERT_EQ(bound_.size(), 1u);
  EXPECT_EQ(bound_[0].second, 2);
  // A tie at the top found in the wrong order: n3 (ceiling 90) offers 70 first, n1 (80) ties
  // it and wins as the lower node; n0 and n2 (10 < 70) are not scored.
  CeilingPolicy q({5, 70, 5, 70}, {10, 80, 10, 90}, true);
  Scheduler t(c_, q, clock_, rng_, hooks_);
  ASSERT_TRUE(t.Submit(Share(2, 250, 2)));
  t.RunCycle();
  EXPECT_EQ(q.scored, (std::vector<model::NodeIndex>{3, 1}));
  ASSERT_EQ(bound_.size(), 2u);
  EXPECT_EQ(bound_[1].second, 1);
  // A ceiling of −∞ says the node has no offer: it is counted refused and never scored, even
  // before any offer (n0 and n2 here); n3 (90) then n1 (80) are scored, n1 wins.
  const double none = -std::numeric_limits<double>::infinity();
  CeilingPolicy v({5, 70, 5, 70}, {none, 80, none, 90}, true);
  Scheduler x(c_, v, clock_, rng_, hooks_);
  ASSERT_TRUE(x.Submit(Share(4, 250, 4)));
  x.RunCycle();
  EXPECT_EQ(v.scored, (std::vector<model::NodeIndex>{3, 1}));
  ASSERT_EQ(bound_.size(), 3u);
  EXPECT_EQ(bound_[2].second, 1);
  // With the random tie rule the nodes are scanned in order, as for a policy that does not
  // declare: n0 (50) first, n1 (40 < 50) skipped.
  CeilingPolicy r({50, 30, 50, 70}, {60, 40, 50, 90}, true);
  Scheduler u(c_, r, clock_, rng_, hooks_, {.tie_break = TieBreak::kRandom});
  ASSERT_TRUE(u.Submit(Share(3, 250, 3)));
  u.RunCycle();
  EXPECT_EQ(r.scored, (std::vector<model::NodeIndex>{0, 2, 3}));
}

// First fit's placement where the workload's SLO is at most the node's limit (a higher SLO has
// fewer offers), counting Score calls per workload; `declares` sets slo_monotone.
class SloLimitPolicy : public policy::Policy {
 public:
  SloLimitPolicy(std::vector<double> limits, bool declares)
      : limits_(std::move(limits)), declares_(declares) {}
  std::string_view name() const override { return "slo-limit"; }
  OfferInputs OffersDependOn() const override {
    return {.slo_value = true, .slo_monotone = declares_};
  }
  policy::Feasibility Filter(const Workload& w, model::NodeIndex n,
                             const ClusterState& c) const override {
    return inner_.Filter(w, n, c);
  }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex n,
                                 const ClusterState& c) override {
    scored.push_back(w.id);
    if (w.slo_qps > limits_[n]) return std::nullopt;
    return inner_.Score(w, n, c);
  }
  std::vector<WorkloadId> scored;  // one entry per node scored

 private:
  std::vector<double> limits_;
  bool declares_;
  policy::FirstFit inner_;
};

// A policy whose failures stand for higher SLOs (slo_monotone) has a workload of the same
// shape and a higher SLO than one that found no node this cycle refused without scoring; a
// lower SLO is still tried, and lowers the bar when it fails too.
TEST_F(SchedulerTest, AFailureStandsForHigherSlosOfItsShapeWhenThePolicySaysSo) {
  auto slo = [](WorkloadId id, double qps) {
    Workload w = Share(id, 100, static_cast<double>(id));
    w.app = "resnet";
    w.slo_qps = qps;
    return w;
  };
  // Limits 5 (n0) and 3 (n1). Queue: 10 fails (both nodes scored), 12 is refused unscored,
  // 4 binds on n0, 8 fails (scored: below 10), 9 is refused unscored (8 failed first).
  for (const bool declares : {true, false}) {
    ClusterState c = c_;
    SloLimitPolicy p({5, 3}, declares);
    Scheduler s(c, p, clock_, rng_, hooks_);
    for (auto [id, qps] : {std::pair{1, 10.0}, {2, 12.0}, {3, 4.0}, {4, 8.0}, {5, 9.0}}) {
      ASSERT_TRUE(s.Submit(slo(id, qps)));
    }
    bound_.clear();
    s.RunCycle();
    ASSERT_EQ(bound_.size(), 1u);
    EXPECT_EQ(bound_[0], (std::pair<WorkloadId, model::NodeIndex>{3, 0}));
    const std::vector<WorkloadId> expected =
        declares ? std::vector<WorkloadId>{1, 1, 3, 3, 4, 4}
                 : std::vector<WorkloadId>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
    EXPECT_EQ(p.scored, expected) << "declares " << declares;
    EXPECT_EQ(s.LastReason(1), "0/2 nodes are available: 2 no offer from the policy");
    // Tried, the higher SLOs get the reason of the failure that stood for them; skipped, they
    // keep their last one (none yet), as a skipped equal shape does.
    EXPECT_EQ(s.LastReason(2), declares ? "" : s.LastReason(1));
    EXPECT_EQ(s.LastReason(5), declares ? "" : s.LastReason(4));
    EXPECT_EQ(s.pending().size(), 4u);
  }
}

TEST_F(SchedulerTest, KeptFilterVerdictsAreAskedAgainOnlyOfNodesThatChanged) {
  const auto v100 = *FindGpuModel("V100-32GB");
  ASSERT_TRUE(c_.AddNode(UniformNode("n2", v100, 1, 8000, 65536)));
  ASSERT_TRUE(c_.AddNode(UniformNode("n3", v100, 1, 8000, 65536)));
  ClusterState plain_cluster = c_;
  CountingFirstFit kept(true), plain(false);
  Scheduler s(c_, kept, clock_, rng_, hooks_);
  Hooks quiet;
  Scheduler p(plain_cluster, plain, clock_, rng_, quiet);
  auto both = [&](auto step) {
    step(s, c_);
    step(p, plain_cluster);
  };
  // w1 (600) sees all four nodes and binds on n0.
  both([](Scheduler& x, ClusterState&) { ASSERT_TRUE(x.Submit(Share(1, 600, 1))); });
  both([](Scheduler& x, ClusterState&) { x.RunCycle(); });
  EXPECT_EQ(kept.filters, 4);
  // w2, the same shape: only n0 changed since; n0 has 400 left, so it binds on n1.
  both([](Scheduler& x, ClusterState&) { ASSERT_TRUE(x.Submit(Share(2, 600, 2))); });
  both([](Scheduler& x, ClusterState&) { x.RunCycle(); });
  EXPECT_EQ(kept.filters, 4 + 1);
  // n2 goes down: w3 re-asks n1 (w2) and n2 (readiness), keeps n0's refusal, binds on n3.
  both([](Scheduler& x, ClusterState& c) {
    c.SetNodeReady(2, false);
    ASSERT_TRUE(x.Submit(Share(3, 600, 3)));
    x.RunCycle();
  });
  EXPECT_EQ(kept.filters, 5 + 2);
  // A new shape (300) sees every node: it binds on n0.
  both([](Scheduler& x, ClusterState&) {
    ASSERT_TRUE(x.Submit(Share(4, 300, 4)));
    x.RunCycle();
  });
  EXPECT_EQ(kept.filters, 7 + 4);
  // w5 (600) fits nowhere: n0 (w4) and n3 (w3) are asked again, and its reason counts the
  // kept refusals of n1 and n2 as the plain scheduler's fresh ones.
  both([](Scheduler& x, ClusterState&) {
    ASSERT_TRUE(x.Submit(Share(5, 600, 5)));
    x.RunCycle();
  });
  EXPECT_EQ(kept.filters, 11 + 2);
  EXPECT_EQ(plain.filters, 4 * 5);
  EXPECT_EQ(s.LastReason(5),
            "0/4 nodes are available: 3 no GPU with enough free share, 1 node not ready");
  EXPECT_EQ(s.LastReason(5), p.LastReason(5));
  ASSERT_EQ(bound_.size(), 4u);
  EXPECT_EQ(bound_[0], (std::pair<WorkloadId, model::NodeIndex>{1, 0}));
  EXPECT_EQ(bound_[1], (std::pair<WorkloadId, model::NodeIndex>{2, 1}));
  EXPECT_EQ(bound_[2], (std::pair<WorkloadId, model::NodeIndex>{3, 3}));
  EXPECT_EQ(bound_[3], (std::pair<WorkloadId, model::NodeIndex>{4, 0}));
  for (WorkloadId id = 1; id <= 4; ++id) {
    EXPECT_EQ(c_.Find(id)->placement, plain_cluster.Find(id)->placement) << id;
  }
}

TEST_F(SchedulerTest, LongQueuesAreNotRescannedWhenNothingCanChange) {
  CountingFirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  // Two whole GPUs, ten whole-GPU requests of one shape: the first two bind; the third finds
  // no node (2 filter calls); the other seven have the same shape and are not tried.
  for (int i = 1; i <= 10; ++i) ASSERT_TRUE(s.Submit(Share(i, 1000, i)));
  CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bound, 2);
  EXPECT_EQ(st.attempted, 3);
  EXPECT_EQ(st.unschedulable, 1);
  EXPECT_EQ(ff.filters, 2 + 2 + 2);  // w1 and w2 see both nodes, w3 fails on both
  EXPECT_NE(s.LastReason(3), "");
  EXPECT_EQ(s.LastReason(4), "");  // skipped: never tried, so no reason yet
  // Nothing changed: the next cycle does not scan at all.
  ff.filters = 0;
  st = s.RunCycle();
  EXPECT_EQ(st.attempted, 0);
  EXPECT_EQ(ff.filters, 0);
  // A different shape arrives: it is tried (and fails), the old shape is tried once more.
  ASSERT_TRUE(s.Submit(Share(11, 300, 11)));
  st = s.RunCycle();
  EXPECT_EQ(st.attempted, 2);
  EXPECT_EQ(st.unschedulable, 2);
  // A GPU frees up: the head of the queue binds, in FIFO order.
  ASSERT_TRUE(s.Finish(1));
  st = s.RunCycle();
  EXPECT_EQ(st.bound, 1);
  EXPECT_EQ(bound_.back().first, 3);
  EXPECT_EQ(s.pending_count(), 8u);
}

// Offers only to workloads whose SLO is at most 10 QPS (as slo-aware admits only where the SLO
// is predicted to be met), declaring it when `declares`.
class SloGate final : public policy::Policy {
 public:
  explicit SloGate(bool declares) : declares_(declares) {}
  std::string_view name() const override { return "slo-gate"; }
  OfferInputs OffersDependOn() const override { return {.slo_value = declares_}; }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex node,
                                 const ClusterState& c) override {
    if (w.slo_qps > 10) return std::nullopt;
    std::optional<model::Placement> p = policy::FirstFitPlacement(w, node, c);
    if (!p) return std::nullopt;
    return Candidate{50, std::move(*p), {}, {}};
  }

 private:
  bool declares_;
};

TEST_F(SchedulerTest, OffersThatDependOnTheSloBypassTheShapeMemo) {
  // Same request shape, SLOs 20 (no offer) then 5. A policy that declares the SLO gets the
  // second one tried and bound in the same cycle; one that does not declare it breaks the
  // contract, and the core (rightly, by that contract) skips the second as the same shape.
  for (bool declares : {true, false}) {
    ClusterState c = c_;
    SloGate gate(declares);
    bound_.clear();
    Scheduler s(c, gate, clock_, rng_, hooks_);
    Workload high = Share(1, 500, 1), low = Share(2, 500, 2);
    high.slo_qps = 20;
    low.slo_qps = 5;
    ASSERT_TRUE(s.Submit(high));
    ASSERT_TRUE(s.Submit(low));
    const CycleStats st = s.RunCycle();
    EXPECT_EQ(st.attempted, declares ? 2 : 1) << declares;
    EXPECT_EQ(st.bound, declares ? 1 : 0) << declares;
    EXPECT_EQ(
        RequestShape(high, {.slo_value = declares}) == RequestShape(low, {.slo_value = declares}),
        !declares);
  }
}

TEST_F(SchedulerTest, DroppingStillFailsEveryIdenticalShapeWithItsReason) {
  CountingFirstFit ff;
  std::vector<WorkloadId> dropped;
  hooks_.unschedulable = [&](const Workload& w, const std::string&, bool d) {
    if (d) dropped.push_back(w.id);
  };
  Scheduler s(c_, ff, clock_, rng_, hooks_, {.drop_unschedulable = true});
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(s.Submit(Share(i, 1000, i)));
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bound, 2);
  EXPECT_EQ(st.dropped, 3);
  EXPECT_EQ(dropped, (std::vector<WorkloadId>{3, 4, 5}));
  EXPECT_EQ(s.LastReason(5), s.LastReason(3));
  EXPECT_EQ(ff.filters, 2 + 2 + 2);  // 4 and 5 reuse 3's verdict
  EXPECT_EQ(s.pending_count(), 0u);
}

// First fit in a policy's own order: the largest GPU share first (FIFO among equals).
class LargestShareFirst : public policy::Policy {
 public:
  std::string_view name() const override { return "largest-share-first"; }
  bool CustomOrder() const override { return true; }
  void Order(std::vector<const Workload*>& pending) const override {
    std::stable_sort(pending.begin(), pending.end(), [](const Workload* a, const Workload* b) {
      return a->gpu.milli > b->gpu.milli;
    });
  }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex n,
                                 const ClusterState& c) override {
    return inner_.Score(w, n, c);
  }

 private:
  policy::FirstFit inner_;
};

TEST_F(SchedulerTest, CustomOrderDecidesWhoGetsTheSpaceAndTheScoredHookSeesIt) {
  // Two GPUs of 1000 milli. FIFO would place 300, 300, 300 on n0 (900), 700 on n1, and leave
  // the second 700 waiting. Largest first: 700 -> n0, 700 -> n1 (300 left on each), 300 -> n0,
  // 300 -> n1, and the third 300 (w3, last among equals) finds no GPU with 300 free.
  LargestShareFirst policy;
  std::vector<WorkloadId> scored;
  std::vector<std::vector<Offer>> offers;
  hooks_.scored = [&](const Workload& w, const Candidate& chosen, std::span<const Offer> o) {
    scored.push_back(w.id);
    offers.emplace_back(o.begin(), o.end());
    EXPECT_EQ(chosen.placement.workload, w.id);
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 300, 1)));
  ASSERT_TRUE(s.Submit(Share(2, 300, 2)));
  ASSERT_TRUE(s.Submit(Share(3, 300, 3)));
  ASSERT_TRUE(s.Submit(Share(4, 700, 4)));
  ASSERT_TRUE(s.Submit(Share(5, 700, 5)));
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bound, 4);
  EXPECT_EQ(st.unschedulable, 1);
  using Bound = std::pair<WorkloadId, model::NodeIndex>;
  EXPECT_EQ(bound_, (std::vector<Bound>{{4, 0}, {5, 1}, {1, 0}, {2, 1}}));
  EXPECT_EQ(s.LastReason(3), "0/2 nodes are available: 2 no GPU with enough free share");
  EXPECT_EQ(c_.gpu(0).free_milli, 0);
  EXPECT_EQ(c_.gpu(1).free_milli, 0);
  // The hook heard every scored workload in the policy's order, with every node's offer
  // (first fit offers 100 wherever the share fits): w4 and w1 fit both GPUs, w5 and w2 only n1.
  EXPECT_EQ(scored, (std::vector<WorkloadId>{4, 5, 1, 2}));
  ASSERT_EQ(offers.size(), 4u);
  EXPECT_EQ(offers[0].size(), 2u);
  EXPECT_EQ(offers[1].size(), 1u);
  EXPECT_EQ(offers[1][0].node, 1);
  EXPECT_EQ(offers[1][0].score, 100);
  EXPECT_EQ(offers[2].size(), 2u);
  EXPECT_EQ(offers[3].size(), 1u);
}

// kube-scheduler's PrioritySort: a higher Workload::priority goes first, FIFO within one.
// Three shares of 600 on two GPUs of 1000: only two fit. By arrival w1 and w2 would; w3, of
// priority 10, arrives last and takes n0; w1 (priority 0, the earlier of the two) takes n1.
TEST_F(SchedulerTest, AHigherPriorityGoesFirstAndArrivalOrdersEquals) {
  policy::FirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 600, 1)));
  ASSERT_TRUE(s.Submit(Share(2, 600, 2)));
  Workload urgent = Share(3, 600, 3);
  urgent.priority = 10;
  ASSERT_TRUE(s.Submit(urgent));
  std::vector<WorkloadId> queue;
  for (const Workload* w : s.pending()) queue.push_back(w->id);
  EXPECT_EQ(queue, (std::vector<WorkloadId>{3, 1, 2}));
  EXPECT_EQ(s.RunCycle().bound, 2);
  using Bound = std::pair<WorkloadId, model::NodeIndex>;
  EXPECT_EQ(bound_, (std::vector<Bound>{{3, 0}, {1, 1}}));
  EXPECT_EQ(s.pending_count(), 1u);
}

// A policy's own order (largest share first) holds within a priority, never across: w2 (300,
// priority 5) goes before both 700s and takes n0 first; then w3 (700) fills n0, w4 (700) goes to
// n1 and w1 (300) fills it. By the policy's order alone w2 would have come last.
TEST_F(SchedulerTest, ACustomOrderRanksWithinAPriorityOnly) {
  LargestShareFirst policy;
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 300, 1)));
  Workload small_urgent = Share(2, 300, 2);
  small_urgent.priority = 5;
  ASSERT_TRUE(s.Submit(small_urgent));
  ASSERT_TRUE(s.Submit(Share(3, 700, 3)));
  ASSERT_TRUE(s.Submit(Share(4, 700, 4)));
  EXPECT_EQ(s.RunCycle().bound, 4);
  using Bound = std::pair<WorkloadId, model::NodeIndex>;
  EXPECT_EQ(bound_, (std::vector<Bound>{{2, 0}, {3, 0}, {4, 1}, {1, 1}}));
}

// Decides a whole cycle at once: the placements it is told, in that order. Counts how often
// the core falls back to per-workload filtering and scoring, and what queue it was shown.
class FixedBatch : public policy::Policy {
 public:
  std::string_view name() const override { return "fixed-batch"; }
  bool CustomOrder() const override { return reverse; }
  void Order(std::vector<const Workload*>& pending) const override {
    std::reverse(pending.begin(), pending.end());
  }
  policy::Feasibility Filter(const Workload&, model::NodeIndex,
                             const ClusterState&) const override {
    ++filters;
    return policy::Feasibility::Yes();
  }
  std::optional<Candidate> Score(const Workload&, model::NodeIndex, const ClusterState&) override {
    ++scores;
    return std::nullopt;
  }
  bool Batches() const override { return true; }
  std::optional<std::vector<Candidate>> PlaceBatch(std::span<const Workload* const> pending,
                                                   const ClusterState&) override {
    shown.clear();
    for (const Workload* w : pending) shown.push_back(w->id);
    return batch;
  }
  bool reverse = false;
  std::vector<Candidate> batch;
  std::vector<WorkloadId> shown;
  mutable int filters = 0;
  int scores = 0;
};

TEST_F(SchedulerTest, PlaceBatchReservesAndBindsEveryCandidateWithoutScoring) {
  FixedBatch policy;
  bool scored = false;
  hooks_.scored = [&](const Workload&, const Candidate&, std::span<const Offer>) { scored = true; };
  // w2 takes 400 of the V100 (partition 0) and w1 600 of the A30; w9 is not
  // queued; w4 asks for 700 on the V100 beside w2's 400, which the cluster refuses; w3 is left
  // out of the batch.
  policy.batch = {{10, {2, 0, {{0, 400, 0}}}, std::nullopt},
                  {10, {1, 1, {{ClusterState::PartitionOf(1, 0), 600, 0}}}, std::nullopt},
                  {10, {9, 0, {{0, 100, 0}}}, std::nullopt},
                  {10, {4, 0, {{0, 700, 0}}}, std::nullopt}};
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  const int share[] = {600, 400, 500, 700};  // w1..w4
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(s.Submit(Share(i, share[i - 1], i)));
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(policy.shown, (std::vector<WorkloadId>{1, 2, 3, 4}));  // FIFO
  EXPECT_EQ(st.attempted, 3);                                      // w2, w1, w4 (w9 is not queued)
  EXPECT_EQ(st.bound, 2);                                          // in the batch's order
  EXPECT_EQ(st.policy_errors, 2);                                  // w9 unknown, w4 over the V100
  EXPECT_EQ(st.unschedulable, 0);
  using Bound = std::pair<WorkloadId, model::NodeIndex>;
  EXPECT_EQ(bound_, (std::vector<Bound>{{2, 0}, {1, 1}}));
  EXPECT_EQ(c_.partition(0).used_milli, 400);
  EXPECT_EQ(c_.partition(ClusterState::PartitionOf(1, 0)).used_milli, 600);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 600);  // the batch's slices, as given
  EXPECT_EQ(s.pending_count(), 2u);                       // w3 and w4
  EXPECT_EQ(s.LastReason(4).rfind("policy proposed an invalid placement: ", 0), 0u)
      << s.LastReason(4);
  // Per-workload filtering and scoring were skipped, and so was the scored hook.
  EXPECT_EQ(policy.filters, 0);
  EXPECT_EQ(policy.scores, 0);
  EXPECT_FALSE(scored);
  EXPECT_TRUE(c_.CheckInvariants());

  // With its own order, the batch sees the queue in that order: w4 (t=4) before w3 (t=3).
  policy.reverse = true;
  policy.batch.clear();
  EXPECT_EQ(s.RunCycle().bound, 0);
  EXPECT_EQ(policy.shown, (std::vector<WorkloadId>{4, 3}));
  EXPECT_EQ(policy.scores, 0);
}

// The driver's admission rules (Kubernetes' node selector and taints): workloads named
// "pinned-…" may run only on n1. A refused node is counted with the driver's reason, and a
// workload of the same request shape under other rules is still tried after a pinned one
// failed: the rules are part of the shape.
class AdmissionTest : public SchedulerTest, public ::testing::WithParamInterface<bool> {};

// Both node loops: the kept ranking (first fit, lowest-node ties, nobody listening to offers)
// and the plain scan (a `scored` hook wants every offer).
TEST_P(AdmissionTest, TheDriversAdmissionRulesRefuseNodesAndSplitShapes) {
  static constexpr std::string_view kRefused = "node(s) didn't match Pod's node affinity/selector";
  const auto pinned = [](const Workload& w) { return w.name.starts_with("pinned"); };
  int asked = 0;
  hooks_.admits = [&](const Workload& w, model::NodeIndex n) -> std::string_view {
    ++asked;
    return pinned(w) && n == 0 ? kRefused : std::string_view();
  };
  hooks_.admission_key = [&](const Workload& w) {
    return pinned(w) ? std::string("n1 only") : std::string();
  };
  int offers_heard = 0;
  if (GetParam()) {
    hooks_.scored = [&](const Workload&, const Candidate&, std::span<const Offer> offers) {
      offers_heard += static_cast<int>(offers.size());
    };
  }
  policy::FirstFit ff;
  Scheduler s(c_, ff, clock_, rng_, hooks_);
  Workload a = Share(1, 1000, 1), b = Share(2, 1000, 2), free = Share(3, 1000, 3);
  a.name = "pinned-a";
  b.name = "pinned-b";
  for (Workload* w : {&a, &b, &free}) ASSERT_TRUE(s.Submit(*w));
  const CycleStats st = s.RunCycle();
  // a: n0 refuses it, n1 (the A30, MIG off) takes it whole. b: n0 refuses, n1 is full.
  // free: first fit on n0, though b's request shape failed just before it.
  EXPECT_EQ(st.bound, 2);
  using Bound = std::pair<WorkloadId, model::NodeIndex>;
  EXPECT_EQ(bound_, (std::vector<Bound>{{1, 1}, {3, 0}}));
  EXPECT_EQ(s.LastReason(2),
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 too "
            "few idle GPUs");
  EXPECT_GT(asked, 0);
  // The scan heard a's one offer (n1; n0 refused it) and free's one (n0; n1 was full).
  EXPECT_EQ(offers_heard, GetParam() ? 2 : 0);
  EXPECT_TRUE(c_.CheckInvariants());
}

INSTANTIATE_TEST_SUITE_P(BothNodeLoops, AdmissionTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Scan") : std::string("KeptRanking");
                         });

TEST_F(SchedulerTest, ABatchCandidateOnANodeThatRefusesTheWorkloadIsNotCommitted) {
  hooks_.admits = [](const Workload& w, model::NodeIndex n) -> std::string_view {
    return w.id == 2 && n == 0 ? "node(s) had untolerated taint {dedicated: batch}" : "";
  };
  hooks_.admission_key = [](const Workload& w) { return std::to_string(w.id == 2); };
  FixedBatch policy;
  // w1 on the V100 (allowed), w2 on the V100 too (refused there).
  policy.batch = {{10, {1, 0, {{0, 400, 0}}}, std::nullopt},
                  {10, {2, 0, {{0, 400, 0}}}, std::nullopt}};
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 400, 1)));
  ASSERT_TRUE(s.Submit(Share(2, 400, 2)));
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(st.bound, 1);
  EXPECT_EQ(st.unschedulable, 1);
  using Bound = std::pair<WorkloadId, model::NodeIndex>;
  EXPECT_EQ(bound_, (std::vector<Bound>{{1, 0}}));
  EXPECT_EQ(c_.partition(0).used_milli, 400);  // w2's 400 was never reserved
  EXPECT_EQ(s.pending_count(), 1u);
  EXPECT_EQ(s.LastReason(2),
            "the batch chose node n0, which refuses it: node(s) had untolerated taint "
            "{dedicated: batch}");
}

// Evicts the workloads it is armed with, once.
class EvictOnce : public policy::Policy {
 public:
  std::string_view name() const override { return "evict-once"; }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex n,
                                 const ClusterState& c) override {
    return inner_.Score(w, n, c);
  }
  policy::CycleActions AfterCycle(const ClusterState&) override {
    policy::CycleActions out;
    for (WorkloadId id : std::exchange(armed, {})) out.evictions.push_back({id, id == 1, "armed"});
    return out;
  }
  std::vector<WorkloadId> armed;

 private:
  policy::FirstFit inner_;
};

// The driver did not carry an eviction out (a disruption budget refused it, a dry run): the
// workload is back where it ran, holding its slice, and the waiting w3 gets nothing.
TEST_F(SchedulerTest, AnEvictionTheDriverDeclinesPutsTheWorkloadBack) {
  EvictOnce policy;
  int asked = 0;
  hooks_.evict = [&](const Workload&, const policy::Eviction&) -> Expected<void> {
    ++asked;
    return Fail("refused by a disruption budget");
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(s.Submit(Share(i, 1000, i)));
  ASSERT_EQ(s.RunCycle().bound, 2);  // w1 -> n0, w2 -> n1, w3 waits
  const model::Placement before = c_.Find(2)->placement;
  policy.armed = {2};
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(st.evicted, 0);
  EXPECT_EQ(st.evictions_declined, 1);
  ASSERT_NE(c_.Find(2), nullptr);
  EXPECT_EQ(c_.Find(2)->placement, before);
  EXPECT_EQ(c_.gpu(1).free_milli, 0);
  EXPECT_EQ(c_.placed_count(), 2u);
  EXPECT_EQ(s.pending_count(), 1u);
}

TEST_F(SchedulerTest, EvictRemovesRunningWorkloadsAndTellsTheDriver) {
  EvictOnce policy;
  std::vector<std::string> evicted;
  hooks_.evict = [&](const Workload& w, const policy::Eviction& e) -> Expected<void> {
    EXPECT_EQ(e.reason, "armed");
    EXPECT_EQ(e.requeue, w.id == 1);
    evicted.push_back(w.name);
    EXPECT_EQ(c_.Find(w.id), nullptr);  // it has already left the cluster state
    return {};
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(s.Submit(Share(i, 1000, i)));
  CycleStats st = s.RunCycle();  // w1 -> n0, w2 -> n1, w3 waits
  EXPECT_EQ(st.bound, 2);
  EXPECT_EQ(st.evicted, 0);
  // w2 runs: evicted. w3 is only queued and 99 is unknown: neither is running, so both are
  // policy errors and w3 stays queued.
  policy.armed = {2, 3, 99};
  st = s.RunCycle();
  EXPECT_EQ(st.evicted, 1);
  EXPECT_EQ(st.policy_errors, 2);
  EXPECT_EQ(evicted, std::vector<std::string>{"w2"});
  EXPECT_EQ(c_.Find(2), nullptr);
  EXPECT_NE(c_.Find(1), nullptr);
  EXPECT_EQ(c_.placed_count(), 1u);
  EXPECT_EQ(c_.gpu(1).free_milli, 1000);
  EXPECT_EQ(s.pending_count(), 1u);  // the core does not requeue w2: that is the driver's call
  EXPECT_EQ(s.totals().evicted, 1);
  // The freed GPU goes to the waiting w3 in the next cycle.
  st = s.RunCycle();
  EXPECT_EQ(st.bound, 1);
  EXPECT_EQ(bound_.back(), (std::pair<WorkloadId, model::NodeIndex>{3, 1}));
  EXPECT_EQ(s.pending_count(), 0u);
  EXPECT_TRUE(c_.CheckInvariants());
}

}  // namespace
}  // namespace tessera::sched

namespace tessera::sched {
namespace {

// First fit that asks, every cycle, for workload 1 at half its share.
class Halve : public policy::Policy {
 public:
  std::string_view name() const override { return "halve"; }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex node,
                                 const ClusterState& c) override {
    return inner_.Score(w, node, c);
  }
  policy::CycleActions AfterCycle(const ClusterState& c) override {
    const model::PlacedWorkload* pw = c.Find(1);
    if (pw == nullptr) return {};
    std::vector<model::Slice> s = pw->placement.slices;
    s[0].milli = std::max(1, s[0].milli / 2);
    return {.resizes = {{1, s}, {99, s}}};  // 99 is not placed: a policy error, counted
  }

 private:
  policy::FirstFit inner_;
};

TEST_F(SchedulerTest, ResizesReachTheDriverWhichMayRefuseThem) {
  Halve policy;
  bool refuse = false;
  std::vector<int32_t> seen;
  hooks_.resized = [&](const Workload& w, const model::Placement& now) -> Expected<void> {
    EXPECT_EQ(w.id, 1);
    seen.push_back(now.slices[0].milli);
    if (refuse) return Fail("a running client keeps its limit");
    return {};
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 800)));
  CycleStats st = s.RunCycle();  // bound at 800, then halved to 400 in the same cycle
  EXPECT_EQ(st.resized, 1);
  EXPECT_EQ(st.policy_errors, 1);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 400);
  refuse = true;
  st = s.RunCycle();  // 200 is refused by the driver: the cluster keeps 400
  EXPECT_EQ(st.resized, 0);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 400);
  EXPECT_EQ(seen, (std::vector<int32_t>{400, 200}));
  EXPECT_TRUE(c_.CheckInvariants());
}

// Once armed, evicts workload 2 and halves both 1 and 2 in the same end-of-cycle actions.
class EvictAndHalve : public policy::Policy {
 public:
  std::string_view name() const override { return "evict-and-halve"; }
  std::optional<Candidate> Score(const Workload& w, model::NodeIndex node,
                                 const ClusterState& c) override {
    return inner_.Score(w, node, c);
  }
  policy::CycleActions AfterCycle(const ClusterState& c) override {
    if (!std::exchange(armed, false)) return {};
    policy::CycleActions out{.evictions = {{2, false, "armed"}}};
    for (WorkloadId id : {1, 2}) {
      std::vector<model::Slice> s = c.Find(id)->placement.slices;
      s[0].milli /= 2;
      out.resizes.push_back({id, s});
    }
    return out;
  }
  bool armed = false;

 private:
  policy::FirstFit inner_;
};

// The core applies a cycle's evictions, then its resizes: the driver hears of them in that
// order, and a resize of a workload evicted just before is a policy error, not applied.
TEST_F(SchedulerTest, AfterCycleEvictsThenResizes) {
  EvictAndHalve policy;
  std::vector<std::string> heard;
  hooks_.evict = [&](const Workload& w, const policy::Eviction&) -> Expected<void> {
    heard.push_back("evict " + w.name);
    return {};
  };
  hooks_.resized = [&](const Workload& w, const model::Placement& now) -> Expected<void> {
    heard.push_back("resize " + w.name + " to " + std::to_string(now.slices[0].milli));
    return {};
  };
  Scheduler s(c_, policy, clock_, rng_, hooks_);
  ASSERT_TRUE(s.Submit(Share(1, 800)));
  ASSERT_TRUE(s.Submit(Share(2, 600)));
  EXPECT_EQ(s.RunCycle().bound, 2);
  policy.armed = true;
  const CycleStats st = s.RunCycle();
  EXPECT_EQ(st.evicted, 1);
  EXPECT_EQ(st.resized, 1);
  EXPECT_EQ(st.policy_errors, 1);
  EXPECT_EQ(heard, (std::vector<std::string>{"evict w2", "resize w1 to 400"}));
  EXPECT_EQ(c_.Find(2), nullptr);
  EXPECT_EQ(c_.Find(1)->placement.slices[0].milli, 400);
  EXPECT_TRUE(c_.CheckInvariants());
}

}  // namespace
}  // namespace tessera::sched
