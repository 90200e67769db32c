#include "sched/preemption.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "policy/first_fit.h"
#include "sched/scheduler.h"
#include "sched/two_nodes.h"

namespace tessera::sched {
namespace {

// A share of one GPU at a priority.
Workload Ranked(WorkloadId id, int milli, int priority) {
  return testing_support::Share(id, milli, 0, priority);
}

// n0: a V100, n1: an A30 (MIG off), one GPU each; first fit places.
class PreemptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing_support::AddTwoNodes(c_));
  }
  void Run(const Workload& w, model::NodeIndex n) {
    auto cand = ff_.Score(w, n, c_);
    ASSERT_TRUE(cand);
    ASSERT_TRUE(c_.Place(w, cand->placement));
  }
  ClusterState c_;
  policy::FirstFit ff_;
};

// w1 (priority 0) and w2 (5) share n0 at 500 each; w3 (1) holds n1 whole.
TEST_F(PreemptionTest, TheFewestAndLeastImportantVictimsOnTheCheapestNode) {
  Run(Ranked(1, 500, 0), 0);
  Run(Ranked(2, 500, 5), 0);
  Run(Ranked(3, 1000, 1), 1);
  const ClusterState before = c_;
  // Half a GPU at priority 10: on n0, w2 (more important) is put back first and spared, w1 is
  // the victim (highest victim priority 0); on n1, w3 (1). n0 wins.
  auto p = FindPreemption(Ranked(9, 500, 10), c_, ff_);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 0);
  EXPECT_EQ(p->victims, std::vector<WorkloadId>{1});
  // At priority 3, w2 (5) is not a potential victim; w1 still is.
  p = FindPreemption(Ranked(9, 500, 3), c_, ff_);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->victims, std::vector<WorkloadId>{1});
  // A whole GPU: n0 needs both (highest 5), n1 only w3 (highest 1): n1.
  p = FindPreemption(Ranked(9, 1000, 10), c_, ff_);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 1);
  EXPECT_EQ(p->victims, std::vector<WorkloadId>{3});
  // n1 ruled out by the driver: n0's two, the least important first.
  const AdmitsFn not_n1 = [](const Workload&, model::NodeIndex n) -> std::string_view {
    return n == 1 ? "tainted" : "";
  };
  p = FindPreemption(Ranked(9, 1000, 10), c_, ff_, not_n1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 0);
  EXPECT_EQ(p->victims, (std::vector<WorkloadId>{1, 2}));
  // w1 not preemptible (the driver's say): n0 would cost w2 (5), so n1's w3 (1).
  p = FindPreemption(Ranked(9, 500, 10), c_, ff_, {},
                     [](const Workload& v) { return v.id != 1; });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 1);
  EXPECT_EQ(p->victims, std::vector<WorkloadId>{3});
  // Priority 0 outranks nobody; priority 1 only w1, and w1 alone does not free a whole GPU.
  EXPECT_FALSE(FindPreemption(Ranked(9, 500, 0), c_, ff_));
  EXPECT_FALSE(FindPreemption(Ranked(9, 1000, 1), c_, ff_));
  // The cluster is untouched.
  EXPECT_EQ(c_.placed_count(), before.placed_count());
  EXPECT_EQ(c_.gpu(0).free_milli, 0);
  EXPECT_EQ(c_.gpu(1).free_milli, 0);
  // Once n1 is free, nothing needs evicting: it fits as the cluster is.
  ASSERT_TRUE(c_.Remove(3));
  EXPECT_FALSE(FindPreemption(Ranked(9, 1000, 10), c_, ff_));
}

class PreemptingSchedulerTest : public PreemptionTest {
 protected:
  void SetUp() override {
    PreemptionTest::SetUp();
    hooks_.bind = [this](const Workload& w, const model::Placement& p,
                         const model::Environment&) -> Expected<void> {
      bound_.push_back({w.id, p.node});
      return {};
    };
    hooks_.evict = [this](const Workload& w, const policy::Eviction& e) -> Expected<void> {
      EXPECT_TRUE(e.preemption);
      EXPECT_FALSE(e.requeue);
      asked_.push_back(e.reason);
      if (decline_ == w.id) return Fail("a disruption budget refused it");
      return {};
    };
  }
  ManualClock clock_;
  Rng rng_{7};
  Hooks hooks_;
  WorkloadId decline_ = 0;
  std::vector<std::pair<WorkloadId, model::NodeIndex>> bound_;
  std::vector<std::string> asked_;
};

TEST_F(PreemptingSchedulerTest, AHigherPriorityWorkloadEvictsOneAndBindsTheNextCycle) {
  Scheduler s(c_, ff_, clock_, rng_, hooks_, {.preemption = true});
  ASSERT_TRUE(s.Submit(Ranked(1, 1000, 0)));
  ASSERT_TRUE(s.Submit(Ranked(2, 1000, 0)));
  ASSERT_EQ(s.RunCycle().bound, 2);
  ASSERT_TRUE(s.Submit(Ranked(4, 1000, 0)));  // equal priority: waits, evicts nobody
  CycleStats st = s.RunCycle();
  EXPECT_EQ(std::tuple(st.bound, st.evicted, st.preemptions), std::tuple(0, 0, 0));
  ASSERT_TRUE(s.Submit(Ranked(3, 1000, 10)));
  st = s.RunCycle();
  // Both nodes cost one victim of priority 0: the lower node, n0, and its w1.
  EXPECT_EQ(std::tuple(st.bound, st.evicted, st.preemptions), std::tuple(0, 1, 1));
  EXPECT_EQ(asked_, std::vector<std::string>{"preempted by w3 (priority 10 > 0) on node n0"});
  EXPECT_EQ(c_.Find(1), nullptr);
  st = s.RunCycle();  // w3 is first in the queue (priority 10) and takes n0; w4 still waits
  EXPECT_EQ(st.bound, 1);
  EXPECT_EQ(bound_.back(), (std::pair<WorkloadId, model::NodeIndex>{3, 0}));
  EXPECT_EQ(s.pending_count(), 1u);
  EXPECT_EQ(s.RunCycle().evicted, 0);  // w4 (priority 0) outranks nobody
  EXPECT_EQ(s.totals().preemptions, 1);
}

TEST_F(PreemptingSchedulerTest, OffNeverAndADeclinedVictimEvictNothingMore) {
  {
    ClusterState c = c_;
    Scheduler off(c, ff_, clock_, rng_, hooks_);  // preemption is off by default
    ASSERT_TRUE(off.Submit(Ranked(1, 1000, 0)));
    ASSERT_TRUE(off.Submit(Ranked(2, 1000, 0)));
    ASSERT_TRUE(off.Submit(Ranked(3, 1000, 10)));
    EXPECT_EQ(off.RunCycle().evicted, 0);
    EXPECT_EQ(off.RunCycle().evicted, 0);
    EXPECT_TRUE(asked_.empty());
  }
  hooks_.may_preempt = [](const Workload& w) { return w.id != 3; };  // preemptionPolicy: Never
  Scheduler s(c_, ff_, clock_, rng_, hooks_, {.preemption = true});
  ASSERT_TRUE(s.Submit(Ranked(1, 500, 0)));
  ASSERT_TRUE(s.Submit(Ranked(2, 500, 1)));
  ASSERT_TRUE(s.Submit(Ranked(5, 1000, 0)));  // n0: w1 + w2; n1: w5
  ASSERT_EQ(s.RunCycle().bound, 3);
  ASSERT_TRUE(s.Submit(Ranked(3, 1000, 10)));
  EXPECT_EQ(s.RunCycle().evicted, 0);
  EXPECT_TRUE(asked_.empty());
  // w6 may: a whole GPU; n1 costs w5 (priority 0), n0 w1 and w2 (highest 1): n1 — unless the
  // driver rules n1 out. Then n0's victims go least important first; w1 declined ends it, and
  // w2 is not asked.
  hooks_.admits = [](const Workload& w, model::NodeIndex n) -> std::string_view {
    return w.id == 6 && n == 1 ? "tainted" : "";
  };
  Scheduler t(c_, ff_, clock_, rng_, hooks_, {.preemption = true});
  ASSERT_TRUE(t.Submit(Ranked(6, 1000, 10)));
  decline_ = 1;
  const CycleStats st = t.RunCycle();
  EXPECT_EQ(st.evictions_declined, 1);
  EXPECT_EQ(st.evicted, 0);
  EXPECT_EQ(st.preemptions, 0);
  EXPECT_EQ(asked_, std::vector<std::string>{"preempted by w6 (priority 10 > 0) on node n0"});
  EXPECT_NE(c_.Find(1), nullptr);  // back where it ran
  EXPECT_NE(c_.Find(2), nullptr);
  EXPECT_TRUE(c_.CheckInvariants());
}

// A search that found nothing is not repeated while nothing changes, and a request shape is
// searched once per cycle: here no running workload may be evicted (the driver's say).
TEST_F(PreemptingSchedulerTest, AFruitlessSearchIsNotRepeated) {
  testing_support::CountingFirstFit policy(/*declares=*/true);
  hooks_.preemptible = [](const Workload&) { return false; };
  Scheduler s(c_, policy, clock_, rng_, hooks_, {.preemption = true});
  ASSERT_TRUE(s.Submit(Ranked(1, 1000, 0)));
  ASSERT_TRUE(s.Submit(Ranked(2, 1000, 0)));
  ASSERT_EQ(s.RunCycle().bound, 2);
  ASSERT_TRUE(s.Submit(Ranked(3, 1000, 10)));
  policy.filters = 0;
  EXPECT_EQ(s.RunCycle().evicted, 0);
  // Placing w3 asks n1 only (n0's verdict for this shape is kept from w2's turn, and n0 has not
  // changed since); the search asks both (no potential victims on either).
  EXPECT_EQ(policy.filters, 1 + 2);
  policy.filters = 0;
  s.RunCycle();
  EXPECT_EQ(policy.filters, 0);  // nothing arrived, nothing changed
  ASSERT_TRUE(s.Submit(Ranked(4, 1000, 10)));  // the same shape
  policy.filters = 0;
  s.RunCycle();
  // Placing: the shape's verdicts are kept (first fit's Filter reads the node alone, and no node
  // changed); the search asks both nodes once for the shape of w3 and w4.
  EXPECT_EQ(policy.filters, 2);
  EXPECT_TRUE(asked_.empty());
}

}  // namespace
}  // namespace tessera::sched
