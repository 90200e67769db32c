// drmaestro (seed 002): the utility and costs worked by hand, the two flow networks of a
// hand-sized cluster arc by arc, the waiting counter, network-aware postponement and gang
// re-queueing.
//
// The profile used throughout: an app "nw" of 0.1 s per query on a K80, 1.2× slower on a remote
// GPU with the network idle, sensitivity 0.6. A job of 1,000 queries: φ = 100 s local, 120 s
// remote (non network-aware).
#include "policy/drmaestro.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "policy/flow/flow.h"
#include "policy/registry.h"

namespace tessera::policy {
namespace {

using model::ClusterState;

const model::GpuModelId kK80 = *model::FindGpuModel("K80");

JobProfiles Profiles() {
  return {{"nw",
           {.seconds_per_query = {{kK80, 0.1}},
            .remote_slowdown = 1.2,
            .network_sensitivity = 0.6,
            .network_share = 0.17}}};
}

// A node of `gpus` K80s, 16 cores and 64 GiB.
void AddNode(ClusterState& c, const std::string& name, int gpus) {
  ASSERT_TRUE(c.AddNode(model::UniformNode(name, kK80, gpus, 16000, 64 << 10)));
}

Workload Job(WorkloadId id, double goal_s, int z = 5, int gpus = 1, double arrival = 0) {
  Workload w;
  w.id = id;
  w.name = "job-" + std::to_string(id);
  w.app = "nw";
  w.klass = model::WorkloadClass::kOffline;
  w.queries = 1000;
  w.cpu_milli = 8000;
  w.memory_mib = 16 << 10;
  w.gpu = {.count = gpus, .milli = 1000};
  w.goal_s = goal_s;
  w.goal_z = z;
  w.arrival_s = arrival;
  return w;
}

// Takes the whole CPU of `node` (002's warm-up).
void HoldCpu(ClusterState& c, NodeIndex node, WorkloadId id) {
  Workload w;
  w.id = id;
  w.name = "warmup";
  w.cpu_milli = c.node(node).cpu_milli;
  ASSERT_TRUE(c.Place(w, {.workload = id, .node = node}));
}

// Arc by arc, in order: ends, capacity, cost and the optimum's flow.
void ExpectNetwork(const std::vector<DrmaestroArc>& got, const std::vector<DrmaestroArc>& want,
                   const char* phase) {
  ASSERT_EQ(got.size(), want.size()) << phase;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::tie(got[i].from, got[i].to, got[i].capacity, got[i].cost, got[i].flow),
              std::tie(want[i].from, want[i].to, want[i].capacity, want[i].cost, want[i].flow))
        << phase << " arc " << i << ": " << got[i].from << " → " << got[i].to;
  }
}

TEST(DrmaestroTest, UtilityFollowsEquationSix) {
  // Within the goal: (τ − φ)/τ, whatever z.
  EXPECT_DOUBLE_EQ(DrmaestroUtility(100, 150, 5), 1.0 / 3);
  EXPECT_DOUBLE_EQ(DrmaestroUtility(100, 150, 10), 1.0 / 3);
  EXPECT_DOUBLE_EQ(DrmaestroUtility(150, 150, 1), 0);
  // Beyond it: scaled by (10 − z)/9: z = 1 (most important) keeps it all, z = 10 none.
  EXPECT_DOUBLE_EQ(DrmaestroUtility(200, 150, 1), -1.0 / 3);
  EXPECT_DOUBLE_EQ(DrmaestroUtility(200, 150, 4), -1.0 / 3 * 6 / 9);
  EXPECT_DOUBLE_EQ(DrmaestroUtility(200, 150, 10), 0);
}

// Node a: one K80 and 16 free cores. Node b: one K80, its CPU all held. Jobs 1 and 2: 8 cores,
// one GPU; τ = 140 s and 150 s. Costs × 1000, job 2 (job 1):
//   local: φ = 100, Ut = 1/3 (2/7), (1 − Ut)·1 = 667 (714);
//   remote: φ = 120, Ut = 0.2 (1/7), (1 − Ut)·2 = 1,600 (1,714);
//   unscheduled: (1 − Ut_local)·2 + W = 1,333 (1,429) + 1,000 W.
// Cycle 1: node a has one local GPU (its local class takes one job) and CPU for two (slots
// min(16/8, 64/16) = 2), offered to the other as the remote class. Job 1 goes local: 714 + 1,333
// beats 667 + 1,429, and remote is dearer than waiting. Cycle 2 (job 1 placed, W = 1 for job 2):
// waiting costs 2,333 > 1,600, so job 2 takes node a's CPU and node b's GPU remotely.
TEST(DrmaestroTest, HandSizedNetworksArcByArcAndTheWaitingCounterDisaggregates) {
  ClusterState c;
  AddNode(c, "a", 1);
  AddNode(c, "b", 1);
  HoldCpu(c, 1, 100);
  const JobProfiles profiles = Profiles();
  Drmaestro p({}, &profiles);
  p.RecordNetworks(true);
  const Workload j1 = Job(1, 140, 5, 1, 0), j2 = Job(2, 150, 5, 1, 1);
  const Workload* pending[] = {&j1, &j2};
  auto out = p.PlaceBatch(pending, c);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(out->at(0).placement.workload, 1);
  EXPECT_EQ(out->at(0).placement.node, 0);
  ASSERT_EQ(out->at(0).placement.slices.size(), 1u);
  EXPECT_FALSE(out->at(0).placement.slices[0].remote);
  EXPECT_EQ(c.partition(out->at(0).placement.slices[0].partition).gpu, 0);

  const DrmaestroCycle& cycle = p.last_cycle();
  const int64_t inf = flow::kUnlimited;
  const std::vector<DrmaestroArc> phase1 = {
      {"job 1", "local K80 load 0 (shape 0)", 1, 714, 1},
      {"job 1", "remote any load 0 (shape 0)", 1, 1714, 0},
      {"job 1", "unscheduled", 1, 1429, 0},
      {"job 2", "local K80 load 0 (shape 0)", 1, 667, 0},
      {"job 2", "remote any load 0 (shape 0)", 1, 1600, 0},
      {"job 2", "unscheduled", 1, 1333, 1},
      {"unscheduled", "sink", inf, 0, 1},
      {"local K80 load 0 (shape 0)", "a", 1, 0, 1},
      {"remote any load 0 (shape 0)", "a", 2, 0, 0},
      {"a", "sink", 2, 0, 1},
  };
  ExpectNetwork(cycle.phase1.network, phase1, "phase 1");
  EXPECT_EQ(cycle.phase1.total_cost, 714 + 1333);
  // Phase 2: job 1's one GPU; supplies are node a's and node b's idle K80s.
  const std::vector<DrmaestroArc> phase2 = {
      {"job 1 GPU", "a K80", 1, 714, 1},
      {"job 1 GPU", "remote K80 load 0", 1, 1714, 0},
      {"job 1 GPU", "unscheduled", 1, 1429, 0},
      {"remote K80 load 0", "a K80", 1, 0, 0},
      {"a K80", "sink", 1, 0, 1},
      {"remote K80 load 0", "b K80", 1, 0, 0},
      {"b K80", "sink", 1, 0, 0},
      {"unscheduled", "sink", inf, 0, 0},
  };
  ExpectNetwork(cycle.phase2.network, phase2, "phase 2");
  EXPECT_EQ(cycle.phase2.total_cost, 714);
  EXPECT_EQ(p.waited(2), 1);
  EXPECT_EQ(p.waited(1), 0);

  // Cycle 2.
  ASSERT_TRUE(c.Place(j1, out->at(0).placement));
  const Workload* still[] = {&j2};
  out = p.PlaceBatch(still, c);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  const Placement& remote = out->at(0).placement;
  EXPECT_EQ(remote.node, 0);
  ASSERT_EQ(remote.slices.size(), 1u);
  EXPECT_TRUE(remote.slices[0].remote);
  EXPECT_EQ(c.gpu(c.partition(remote.slices[0].partition).gpu).node, 1);
  EXPECT_EQ(p.last_cycle().jobs.at(0).unscheduled_cost, 2333);
  EXPECT_EQ(p.last_cycle().jobs.at(0).phase1_cost, 1600);
  EXPECT_EQ(p.last_cycle().jobs.at(0).phase2_cost, 1600);
  ASSERT_TRUE(c.Place(j2, remote));
  EXPECT_TRUE(c.CheckInvariants());
  EXPECT_EQ(p.waited(2), 0);
}

// Eq. 5 as written against our per-resource slots. Jobs ask 8 cores and 16 GiB; node a has 16
// free cores and 64 GiB, node b 8 free cores (8 held) and 64 GiB. Slots: a min(16/8, 64/16) = 2,
// b min(8/8, 64/16) = 1. Eq. 5, normalised by the largest free amounts (16 cores, 64 GiB): a
// job is 8/16 + 16/64 = 0.75; a supplies 1 + 1 = 2 → ⌊2.67⌋ = 2, b 0.5 + 1 = 1.5 → 2: b's spare
// memory stands in for the CPU it lacks. Whatever the flow sends, a placement must still fit.
TEST(DrmaestroTest, SummedSupplyIsEquationFiveAndLetsMemoryStandInForCpu) {
  for (bool summed : {false, true}) {
    SCOPED_TRACE(summed);
    ClusterState c;
    AddNode(c, "a", 1);
    AddNode(c, "b", 1);
    Workload hold;
    hold.id = 100;
    hold.name = "half-warmup";
    hold.cpu_milli = 8000;
    ASSERT_TRUE(c.Place(hold, {.workload = 100, .node = 1}));
    const JobProfiles profiles = Profiles();
    Drmaestro p({.summed_supply = summed}, &profiles);
    p.RecordNetworks(true);
    const Workload j1 = Job(1, 140), j2 = Job(2, 150), j3 = Job(3, 160);
    const Workload* pending[] = {&j1, &j2, &j3};
    auto out = p.PlaceBatch(pending, c);
    ASSERT_TRUE(out);
    std::map<std::string, int64_t> to_sink;
    for (const DrmaestroArc& a : p.last_cycle().phase1.network) {
      if (a.to == "sink") to_sink[a.from] = a.capacity;
    }
    EXPECT_EQ(to_sink["a"], 2);
    EXPECT_EQ(to_sink["b"], summed ? 2 : 1);
    for (const Candidate& cand : *out) {
      const WorkloadId id = cand.placement.workload;
      ASSERT_TRUE(c.Place(id == 1 ? j1 : id == 2 ? j2 : j3, cand.placement));
    }
    EXPECT_TRUE(c.CheckInvariants());
  }
}

// A starved job: no goal of its own worth protecting (τ = 10^6 s: Ut ≈ 1, so placing it gains
// ≈ 0 over waiting), beside a newcomer each cycle with a tight goal (τ = 101 s: placing it gains
// 990). One GPU. Cycle 1: the newcomer wins. Cycle 2: the starved job's wait costs 1,000 more,
// which beats any newcomer's 990.
TEST(DrmaestroTest, WaitingCounterLetsAStarvedJobWin) {
  ClusterState c;
  AddNode(c, "a", 1);
  const JobProfiles profiles = Profiles();
  Drmaestro p({.disaggregate = false}, &profiles);
  const Workload starved = Job(1, 1e6, 5, 1, 0);
  for (int cycle = 1; cycle <= 2; ++cycle) {
    const Workload newcomer = Job(10 + cycle, 101, 5, 1, cycle);
    std::vector<const Workload*> pending = {&starved, &newcomer};
    p.Order(pending);
    auto out = p.PlaceBatch(pending, c);
    ASSERT_TRUE(out);
    ASSERT_EQ(out->size(), 1u) << "cycle " << cycle;
    EXPECT_EQ(out->at(0).placement.workload, cycle == 1 ? newcomer.id : starved.id);
    if (cycle == 1) {
      EXPECT_EQ(p.waited(starved.id), 1);
      // The queue now leads with the job that waited.
      std::vector<const Workload*> q = {&newcomer, &starved};
      p.Order(q);
      EXPECT_EQ(q.front(), &starved);
    }
  }
}

// Network-aware: with node a's own GPU taken, the only GPU is remote, and a job with τ = 110 s
// misses it there (φ = 100 × 1.2 × (1 + 0.6 × 0.05) = 123.6 s at the first load bucket's
// midpoint) — postponed while W < max_postpone_cycles (2), then placed: it does not wait
// forever while it fits. Without network awareness it is placed at once (φ = 120 s is not
// compared with the goal; 1 − Ut = 1.09·2 = 2,182 vs waiting (1 − 10/110)·2 = 1,818 → it waits
// one cycle, then W = 1 makes waiting 2,818).
TEST(DrmaestroTest, NetworkAwarePostponesGoalMissingRemotePlacementsButNotForever) {
  ClusterState c;
  AddNode(c, "a", 1);
  AddNode(c, "b", 1);
  HoldCpu(c, 1, 100);
  const JobProfiles profiles = Profiles();
  ASSERT_TRUE(
      c.Place(Job(50, 1000),
              {.workload = 50, .node = 0, .slices = {{ClusterState::PartitionOf(0, 0), 1000, 0}}}));
  Drmaestro aware({.network_aware = true, .max_postpone_cycles = 2}, &profiles);
  const Workload j = Job(1, 110, 1);
  const Workload* pending[] = {&j};
  for (int cycle = 1; cycle <= 2; ++cycle) {
    auto out = aware.PlaceBatch(pending, c);
    ASSERT_TRUE(out);
    EXPECT_TRUE(out->empty()) << "cycle " << cycle;
    EXPECT_NE(aware.last_cycle().jobs.at(0).outcome.find("postponed"), std::string::npos)
        << aware.last_cycle().jobs.at(0).outcome;
    EXPECT_TRUE(aware.HoldsBack()) << "cycle " << cycle;  // the driver must keep cycling
  }
  auto out = aware.PlaceBatch(pending, c);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE(out->at(0).placement.slices.at(0).remote);
  EXPECT_FALSE(aware.HoldsBack());

  Drmaestro plain({}, &profiles);
  EXPECT_TRUE(plain.PlaceBatch(pending, c)->empty());
  EXPECT_FALSE(plain.HoldsBack());  // it waited because waiting was cheaper: nothing postponed
  EXPECT_EQ(plain.last_cycle().jobs.at(0).unscheduled_cost, 1818);
  EXPECT_EQ(plain.PlaceBatch(pending, c)->size(), 1u);
}

// 002's NA postpones any placement that would miss the goal ("if the placement does not satisfy
// the task's SLO, the placement will be postponed"), a local one too where co-location reaches
// it through the node's link (link_load, local_sensitivity: the disaggregation experiment's
// co-location world). An Iperf-like job (link_load 1) runs on node a: a's load bucket is 9
// (midpoint 0.95), so the job's local φ there is 100 × (1 + 0.369 × 0.95) = 135 s > 110 s;
// on node b (load 0, midpoint 0.05) 100 × (1 + 0.369 × 0.05) = 101.8 s. NA puts it on b. With
// b's CPU held it can only go to a: local 135 s, remote 100 × (1.2 × (1 + 0.6 × 0.95) + 0.369 ×
// 0.95) = 223 s, both past the goal, so NA postpones it while plain drmaestro places it on a.
TEST(DrmaestroTest, NetworkAwareAlsoKeepsLocalJobsOffALoadedLink) {
  JobProfiles profiles = Profiles();
  profiles["nw"].link_load = 0.1;
  profiles["nw"].local_sensitivity = 0.369;
  profiles["iperf"] = {.link_load = 1};
  ClusterState c;
  AddNode(c, "a", 1);
  AddNode(c, "b", 1);
  Workload iperf;
  iperf.id = 90;
  iperf.name = "iperf";
  iperf.app = "iperf";
  iperf.cpu_milli = 8000;
  ASSERT_TRUE(c.Place(iperf, {.workload = 90, .node = 0}));
  const Workload j = Job(1, 110);
  const Workload* pending[] = {&j};
  Drmaestro aware({.network_aware = true}, &profiles);
  auto out = aware.PlaceBatch(pending, c);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(out->at(0).placement.node, 1);
  EXPECT_FALSE(out->at(0).placement.slices.at(0).remote);

  HoldCpu(c, 1, 100);
  Drmaestro held({.network_aware = true}, &profiles);
  out = held.PlaceBatch(pending, c);
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->empty());
  EXPECT_NE(held.last_cycle().jobs.at(0).outcome.find("postponed"), std::string::npos)
      << held.last_cycle().jobs.at(0).outcome;
  Drmaestro plain({}, &profiles);
  out = plain.PlaceBatch(pending, c);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(out->at(0).placement.node, 0);
}

// Gang: two jobs of two GPUs each, three idle GPUs, remote as preferred as local (P = 1: a
// remote GPU costs 800, less than waiting, 1,333). Phase 1 places both on node a (one through
// its local class, one through the remote class); phase 2 has 4 sub-tasks for 3 GPUs, so one job
// gets both its GPUs and the other only one: it stays unscheduled whole (its GPU is not handed
// out), and its waiting counter grows.
TEST(DrmaestroTest, GangJobWithAnUnscheduledGpuIsRequeuedWhole) {
  ClusterState c;
  AddNode(c, "a", 2);
  AddNode(c, "b", 1);
  HoldCpu(c, 1, 100);
  const JobProfiles profiles = Profiles();
  Drmaestro p({.remote_preference = 1}, &profiles);
  const Workload j1 = Job(1, 150, 5, 2, 0), j2 = Job(2, 150, 5, 2, 1);
  const Workload* pending[] = {&j1, &j2};
  auto out = p.PlaceBatch(pending, c);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 1u);
  const Placement& placed = out->at(0).placement;
  EXPECT_EQ(placed.slices.size(), 2u);
  const WorkloadId left = placed.workload == 1 ? 2 : 1;
  EXPECT_EQ(p.waited(left), 1);
  EXPECT_EQ(p.last_cycle().phase2.unscheduled, 1);
  bool found = false;
  for (const DrmaestroJobLine& line : p.last_cycle().jobs) {
    if (line.id != left) continue;
    found = true;
    EXPECT_EQ(line.outcome, "unscheduled: gang, 1 of its 2 GPUs found no place");
  }
  EXPECT_TRUE(found);
  const Workload& w = placed.workload == 1 ? j1 : j2;
  ASSERT_TRUE(c.Place(w, placed));
  EXPECT_TRUE(c.CheckInvariants());
}

// Without disaggregation (002's Firmament-like baseline) a job never gets a remote GPU: node a
// has CPU but no GPU, node b's GPU sits on a CPU-full node, so the job waits however long. With
// it (P = 1: remote 800 < waiting 1,333) the job takes node a's CPU and node b's GPU at once.
TEST(DrmaestroTest, WithoutDisaggregationGpusStayLocal) {
  ClusterState c;
  AddNode(c, "a", 0);
  AddNode(c, "b", 1);
  HoldCpu(c, 1, 100);
  const JobProfiles profiles = Profiles();
  Drmaestro local({.disaggregate = false}, &profiles);
  const Workload j = Job(1, 150);
  const Workload* pending[] = {&j};
  for (int cycle = 0; cycle < 3; ++cycle) EXPECT_TRUE(local.PlaceBatch(pending, c)->empty());
  Drmaestro remote({.remote_preference = 1}, &profiles);
  auto out = remote.PlaceBatch(pending, c);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(out->at(0).placement.node, 0);
  EXPECT_TRUE(out->at(0).placement.slices.at(0).remote);
}

// A GPU too small for the job's memory is no candidate in either phase: node a's K80 (12 GiB)
// cannot hold a 16 GiB request, so the job, with its CPU on node a, takes node b's V100
// remotely (an unprofiled model: the neutral cost 1·P = 1,000 < waiting 1,333).
TEST(DrmaestroTest, AGpuTooSmallForTheRequestIsNoCandidate) {
  ClusterState c;
  AddNode(c, "a", 1);
  ASSERT_TRUE(
      c.AddNode(model::UniformNode("b", *model::FindGpuModel("V100-32GB"), 1, 16000, 64 << 10)));
  HoldCpu(c, 1, 100);
  const JobProfiles profiles = Profiles();
  Drmaestro p({.remote_preference = 1}, &profiles);
  Workload j = Job(1, 150);
  j.gpu.memory_mib = 16 << 10;
  const Workload* pending[] = {&j};
  auto out = p.PlaceBatch(pending, c);
  ASSERT_EQ(out->size(), 1u) << p.Explain(j, c);
  const Placement& placed = out->at(0).placement;
  EXPECT_EQ(placed.node, 0);
  ASSERT_EQ(placed.slices.size(), 1u);
  EXPECT_TRUE(placed.slices[0].remote);
  EXPECT_EQ(c.gpu(c.partition(placed.slices[0].partition).gpu).node, 1);
  ASSERT_TRUE(c.Place(j, placed));
}

// An app without a profile or a job without a goal costs the neutral 1 − Ut = 1 (002).
TEST(DrmaestroTest, UnknownAppsCostNeutral) {
  ClusterState c;
  AddNode(c, "a", 1);
  Drmaestro p({}, nullptr);
  p.RecordNetworks(true);
  Workload j = Job(1, 150);
  const Workload* pending[] = {&j};
  auto out = p.PlaceBatch(pending, c);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(p.last_cycle().phase1.network.at(0).cost, 1000);  // local: 1 · P 1
  EXPECT_EQ(p.last_cycle().jobs.at(0).unscheduled_cost, 2000);
}

TEST(DrmaestroTest, OptionsAreCheckedAndRegistered) {
  auto made = MakePolicy("drmaestro", {}, {{"network_aware", true}, {"load_buckets", 4}});
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ((*made)->name(), "drmaestro");
  auto bad = MakePolicy("drmaestro", {}, {{"load_buckets", 0}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("load_buckets"), std::string::npos);
  EXPECT_FALSE(MakePolicy("drmaestro", {}, {{"disaggregate", "yes"}}));
  // The postponement bound is how long a run of held-back jobs on an idle cluster may cycle.
  EXPECT_TRUE(MakePolicy("drmaestro", {}, {{"max_postpone_cycles", 100000}}));
  auto unbounded = MakePolicy("drmaestro", {}, {{"max_postpone_cycles", 100001}});
  ASSERT_FALSE(unbounded);
  EXPECT_NE(unbounded.error().message.find("max_postpone_cycles"), std::string::npos);
}

}  // namespace
}  // namespace tessera::policy
