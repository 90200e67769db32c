// muxflow (seed 001 §4–§5) against hand-worked numbers and a brute-force optimum.
//
// The profile: offline applications j0..j3 on a T4 at MPS 25/50/75/100 %, measured exactly
// (the completion method is `baseline`, which keeps measured cells), so a job's normalised
// throughput at p % is iso(p) / iso(100):
//   j0: 40, 70, 90, 100 → 0.40, 0.70, 0.90       j1: 50, 80, 95, 100 → 0.50, 0.80, 0.95
//   j2: 20, 45, 75, 100 → 0.20, 0.45, 0.75       j3: 30, 60, 85, 100 → 0.30, 0.60, 0.85
// and f(j, s) on "mps" beside services s0..s2: 0.05 · (1 + (j + s) % 3).
// A service's SM activity a leaves the offline job 100 − ⌈100 a⌉ %: 0.75 → 25, 0.5 → 50, 0.25 → 75.
#include "policy/muxflow.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "policy/registry.h"
#include "predict/config_key.h"
#include "predict/predictor.h"
#include "sched/scheduler.h"
#include "telemetry/telemetry.h"

namespace tessera::policy {
namespace {

using model::ClusterState;
using model::GpuIndex;

constexpr double kIso[4][4] = {
    {40, 70, 90, 100}, {50, 80, 95, 100}, {20, 45, 75, 100}, {30, 60, 85, 100}};
constexpr int kPercents[4] = {25, 50, 75, 100};
double F(int job, int service) { return 0.05 * (1 + (job + service) % 3); }
double Normalised(int job, int percent) {
  const int k = percent / 25 - 1;
  return kIso[job][k] / kIso[job][3];
}

// With `a10`, every job also runs on an A10 at twice its T4 throughput, share for share.
predict::Predictor MuxflowPredictor(bool a10 = false) {
  predict::ProfileMatrix m;
  predict::InterferenceMatrices im;
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < 4; ++k) {
      m.Observe(m.AddRow(fmt::format("j{}", j)),
                m.AddCol(predict::ConfigKey("T4", "whole", kPercents[k])), kIso[j][k]);
      if (a10) {
        m.Observe(m.AddRow(fmt::format("j{}", j)),
                  m.AddCol(predict::ConfigKey("A10", "whole", kPercents[k])), 2 * kIso[j][k]);
      }
    }
    for (int s = 0; s < 3; ++s) {
      EXPECT_TRUE(im.Observe("mps", fmt::format("j{}", j), fmt::format("s{}", s), F(j, s)));
    }
  }
  for (int s = 0; s < 3; ++s) {
    m.Observe(m.AddRow(fmt::format("s{}", s)), m.AddCol(predict::ConfigKey("T4", "whole", 100)),
              500);
  }
  auto p = predict::Predictor::Create(std::move(m), std::move(im),
                                      {.method = "baseline", .interference_method = "baseline"});
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return std::move(*p);
}

// One GPU, one CPU core: "svc<id>" running application s<k>, or "job<id>" running j<k>.
Workload OneGpu(model::WorkloadId id, model::WorkloadClass klass, int k) {
  const bool online = klass == model::WorkloadClass::kOnline;
  Workload w;
  w.id = id;
  w.name = fmt::format("{}{}", online ? "svc" : "job", id);
  w.app = fmt::format("{}{}", online ? "s" : "j", k);
  w.klass = klass;
  w.cpu_milli = 1000;
  w.gpu.count = 1;
  return w;
}
Workload Service(model::WorkloadId id, int s) {
  return OneGpu(id, model::WorkloadClass::kOnline, s);
}
Workload Job(model::WorkloadId id, int j) { return OneGpu(id, model::WorkloadClass::kOffline, j); }

class MuxflowTest : public ::testing::Test {
 protected:
  MuxflowTest() : predictor_(MuxflowPredictor()) {}

  void AddNodes(int nodes, int gpus) {
    for (int n = 0; n < nodes; ++n) {
      ASSERT_TRUE(c_.AddNode(model::UniformNode(fmt::format("t4-{}", n), *model::FindGpuModel("T4"),
                                                gpus, 64000, 1 << 20)));
    }
  }
  // A service on GPU g, its activity published per workload and for the GPU.
  void PlaceService(GpuIndex g, model::WorkloadId id, int s, double activity) {
    const Workload w = Service(id, s);
    const model::PartitionIndex p = ClusterState::PartitionOf(g, 0);
    const int64_t mem =
        c_.partition(p).memory_mib - OfflineMemoryCap(c_.partition(p).memory_mib, 0.4);
    ASSERT_TRUE(c_.Place(w, {w.id, c_.gpu(g).node, {{p, 1000, mem}}}));
    telemetry_.SetSmActivity(w.name, activity);
    telemetry_.SetSmActivity(c_.gpu(g).uuid, activity);
    telemetry_.SetUtilization(c_.gpu(g).uuid, activity);
  }
  Muxflow Make(MuxflowOptions o = {}, bool can_move = true) {
    return Muxflow(predictor_, &telemetry_, clock_, o, can_move);
  }

  predict::Predictor predictor_;
  telemetry::StaticTelemetry telemetry_;
  ManualClock clock_;
  ClusterState c_;
};

TEST(MuxflowArithmeticTest, DynamicSmAndMemoryQuota) {
  EXPECT_EQ(DynamicSmPercent(0.35), 65);
  EXPECT_EQ(DynamicSmPercent(0.351), 64);  // the service's share is rounded up, never cut
  EXPECT_EQ(DynamicSmPercent(0), 100);
  EXPECT_EQ(DynamicSmPercent(1), 0);
  EXPECT_EQ(DynamicSmPercent(1.3), 0);
  EXPECT_EQ(DynamicSmPercent(-0.2), 100);
  // A T4's 15360 MiB × 40 % = 6144 MiB.
  EXPECT_EQ(OfflineMemoryCap(15360, 0.4), 6144);
  EXPECT_EQ(OfflineMemoryCap(16384, 0.4), 6553);  // floored
}

TEST(MuxflowArithmeticTest, OptionsAreCheckedAndNamed) {
  auto ok = ParseMuxflowOptions({{"sm_activity_thresholds", {0.5, 0.6, 0.7}}, {"base_hold_s", 30}});
  ASSERT_TRUE(ok.has_value());
  EXPECT_DOUBLE_EQ(ok->monitor.sm_activity.unhealthy, 0.6);
  EXPECT_DOUBLE_EQ(ok->monitor.base_hold_s, 30);
  auto order = ParseMuxflowOptions({{"sm_activity_thresholds", {0.7, 0.6, 0.9}}});
  ASSERT_FALSE(order.has_value());
  EXPECT_NE(order.error().message.find("option 'sm_activity_thresholds'"), std::string::npos);
  EXPECT_FALSE(ParseMuxflowOptions({{"memory_thresholds", {0.5, 0.6}}}).has_value());
  EXPECT_FALSE(ParseMuxflowOptions({{"period_s", 0}}).has_value());
  EXPECT_FALSE(ParseMuxflowOptions({{"memory_quota", 1.5}}).has_value());
  EXPECT_FALSE(ParseMuxflowOptions({{"base_hold_s", -1}}).has_value());
  EXPECT_FALSE(ParseMuxflowOptions({{"fixed_sm_percent", 0}}).has_value());
  EXPECT_FALSE(ParseMuxflowOptions({{"fixed_sm_percent", 101}}).has_value());
  EXPECT_EQ(ParseMuxflowOptions({{"fixed_sm_percent", 40}})->fixed_sm_percent, 40);
  auto hold = ParseMuxflowOptions({{"base_hold_s", 600}, {"max_hold_s", 60}});
  ASSERT_FALSE(hold.has_value());
  EXPECT_NE(hold.error().message.find("max_hold_s"), std::string::npos);
}

TEST_F(MuxflowTest, MatchesLikeTheSeedsExampleAndExplains) {
  // Two services (activity 0.5 → 50 %, 0.25 → 75 %) and two jobs. Weights by hand:
  //   j1 on GPU0 (s0, 50 %): 0.80 · (1 − 0.10) = 0.720   on GPU1 (s1, 75 %): 0.95 · (1 − 0.15) =
  //   0.8075 j2 on GPU0:            0.45 · (1 − 0.15) = 0.3825  on GPU1:            0.75 · (1 −
  //   0.05) = 0.7125
  // j1→GPU1 + j2→GPU0 = 1.19 < j1→GPU0 + j2→GPU1 = 1.4325: the matching takes the second, which
  // a greedy pick of the single heaviest pair (j1→GPU1) would miss.
  AddNodes(1, 2);
  PlaceService(0, 1, 0, 0.5);
  PlaceService(1, 2, 1, 0.25);
  Muxflow m = Make();
  const Workload a = Job(10, 1), b = Job(11, 2);
  const Workload* pending[] = {&a, &b};
  m.AfterCycle(c_);  // the first sample: Init → Healthy
  ASSERT_NE(m.Monitor(0), nullptr);
  EXPECT_EQ(m.Monitor(0)->state(), GpuHealth::kHealthy);
  auto batch = m.PlaceBatch(pending, c_);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->size(), 2u);
  for (const Candidate& cand : *batch) {
    const model::Slice& s = cand.placement.slices.at(0);
    EXPECT_TRUE(s.best_effort);
    EXPECT_EQ(s.memory_mib, OfflineMemoryCap(c_.partition(s.partition).memory_mib, 0.4));
    if (cand.placement.workload == a.id) {
      EXPECT_EQ(s.partition, ClusterState::PartitionOf(0, 0));
      EXPECT_EQ(s.milli, 500);
    } else {
      EXPECT_EQ(s.partition, ClusterState::PartitionOf(1, 0));
      EXPECT_EQ(s.milli, 750);
    }
  }
  EXPECT_NEAR(m.LastMatch(a.id)->weight, 0.72, 1e-9);
  EXPECT_NEAR(m.LastMatch(a.id)->next, 0.8075, 1e-9);
  EXPECT_NEAR(m.LastMatch(b.id)->weight, 0.7125, 1e-9);
  EXPECT_NEAR(m.LastMatch(b.id)->next, 0.3825, 1e-9);
  const std::string why = m.Explain(a, c_);
  EXPECT_NE(why.find("at 50 % SM: predicted normalised throughput 0.720"), std::string::npos)
      << why;
  EXPECT_NE(why.find("Healthy"), std::string::npos) << why;
  // The next round is 900 s later: nothing is matched before.
  EXPECT_FALSE(m.PlaceBatch(pending, c_).has_value());
  clock_.Set(900);
  EXPECT_TRUE(m.PlaceBatch(pending, c_).has_value());
}

// 001 §5's weight divides by the job's exclusive throughput; on a T4 + A10 cluster, which one
// is a reading (docs/results.md). j1 beside s0 at 50 % loses F(1, 0) = 0.10. Its own GPU's:
// 80 / 100 on the T4 and 160 / 200 on the A10 — both 0.8 · 0.9 = 0.72, a tie the first GPU
// wins. The T4's as reference: 160 / 100 · 0.9 = 1.44 on the A10, which the matching takes.
TEST_F(MuxflowTest, AReferenceGpuMakesAFasterGpuWeighMore) {
  predictor_ = MuxflowPredictor(/*a10=*/true);
  for (const char* gpu : {"T4", "A10"}) {
    ASSERT_TRUE(c_.AddNode(model::UniformNode(fmt::format("{}-0", gpu), *model::FindGpuModel(gpu),
                                              1, 64000, 1 << 20)));
  }
  PlaceService(0, 1, 0, 0.5);
  PlaceService(1, 2, 0, 0.5);
  const Workload j = Job(10, 1);
  const Workload* pending[] = {&j};
  for (const std::string reference : {"", "T4"}) {
    SCOPED_TRACE(reference);
    Muxflow m = Make({.reference_gpu = reference});
    m.AfterCycle(c_);
    auto batch = m.PlaceBatch(pending, c_);
    ASSERT_TRUE(batch.has_value());
    ASSERT_EQ(batch->size(), 1u);
    const GpuIndex on = reference.empty() ? 0 : 1;
    EXPECT_EQ(batch->front().placement.slices.at(0).partition, ClusterState::PartitionOf(on, 0));
    EXPECT_NEAR(m.LastMatch(j.id)->weight, reference.empty() ? 0.72 : 1.44, 1e-9);
    EXPECT_NEAR(m.LastMatch(j.id)->next, 0.72, 1e-9);
  }
  EXPECT_FALSE(ParseMuxflowOptions({{"reference_gpu", "T5"}}).has_value());
}

TEST_F(MuxflowTest, MatchingIsOptimalOnSmallRandomInstances) {
  AddNodes(1, 4);
  Rng rng(20261124);
  const double activities[] = {0.75, 0.5, 0.25};
  int nontrivial = 0;
  for (int round = 0; round < 200; ++round) {
    for (const auto& [id, pw] : std::map(c_.placed().begin(), c_.placed().end())) {
      ASSERT_TRUE(c_.Remove(id));
    }
    const int gpus = 1 + static_cast<int>(rng.Below(4)), jobs = 1 + static_cast<int>(rng.Below(5));
    std::vector<int> service(gpus), percent(gpus), app(jobs);
    for (int g = 0; g < gpus; ++g) {
      service[g] = static_cast<int>(rng.Below(3));
      const double a = activities[rng.Below(3)];
      percent[g] = DynamicSmPercent(a);
      PlaceService(g, 100 + g, service[g], a);
    }
    std::vector<Workload> w;
    for (int j = 0; j < jobs; ++j) {
      app[j] = static_cast<int>(rng.Below(4));
      w.push_back(Job(200 + j, app[j]));
    }
    std::vector<const Workload*> pending;
    for (const Workload& x : w) pending.push_back(&x);
    Muxflow m = Make();
    auto batch = m.PlaceBatch(pending, c_);
    ASSERT_TRUE(batch.has_value());
    double got = 0;
    for (const Candidate& cand : *batch) got += m.LastMatch(cand.placement.workload)->weight;
    // Brute force: every injective assignment of a subset of jobs to GPUs.
    std::vector<int> gpu_of(jobs, -1);
    double best = 0;
    auto search = [&](auto&& self, int j, std::vector<bool>& used, double total) -> void {
      if (j == jobs) {
        best = std::max(best, total);
        return;
      }
      self(self, j + 1, used, total);  // job j stays pending
      for (int g = 0; g < gpus; ++g) {
        if (used[g]) continue;
        used[g] = true;
        self(self, j + 1, used,
             total + Normalised(app[j], percent[g]) * (1 - F(app[j], service[g])));
        used[g] = false;
      }
    };
    std::vector<bool> used(gpus, false);
    search(search, 0, used, 0.0);
    EXPECT_NEAR(got, best, 1e-6) << "round " << round;
    EXPECT_EQ(batch->size(), static_cast<size_t>(std::min(gpus, jobs))) << "round " << round;
    nontrivial += gpus > 1 && jobs > 1;
  }
  EXPECT_GT(nontrivial, 100);
}

TEST_F(MuxflowTest, OverlimitEvictsAndDynamicSmResizes) {
  AddNodes(1, 1);
  PlaceService(0, 1, 0, 0.5);
  Muxflow m = Make();
  ASSERT_TRUE(m.AfterCycle(c_).evictions.empty());  // Healthy, nothing offline yet
  const Workload job = Job(2, 0);
  const model::PartitionIndex p = ClusterState::PartitionOf(0, 0);
  ASSERT_TRUE(c_.Place(job, {job.id, 0, {{p, 500, 6144, true}}}));
  // The service calms down to 0.3: the offline share follows to 70 %.
  telemetry_.SetSmActivity("svc1", 0.3);
  CycleActions actions = m.AfterCycle(c_);
  EXPECT_TRUE(actions.evictions.empty());
  const std::vector<ResizeTo> r = actions.resizes;
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].workload, job.id);
  EXPECT_EQ(r[0].slices.at(0).milli, 700);
  EXPECT_TRUE(r[0].slices.at(0).best_effort);
  ASSERT_TRUE(c_.Resize(job.id, r[0].slices));
  // 0.32 would give 68 %: within the 5-point step, left alone; nothing new read: nothing asked.
  telemetry_.SetSmActivity("svc1", 0.32);
  EXPECT_TRUE(m.AfterCycle(c_).resizes.empty());
  EXPECT_TRUE(m.AfterCycle(c_).resizes.empty());
  // The GPU's total SM activity near 100 % is what dynamic SM aims at: no eviction.
  telemetry_.SetSmActivity(c_.gpu(0).uuid, 0.99);
  EXPECT_TRUE(m.AfterCycle(c_).evictions.empty());
  // The service's own activity reaches 0.98 ≥ 0.97: Overlimit, the job is moved (requeued),
  // and not resized as well (its share would drop to 10 %).
  telemetry_.SetSmActivity("svc1", 0.98);
  actions = m.AfterCycle(c_);
  EXPECT_TRUE(actions.resizes.empty());
  std::vector<Eviction> e = actions.evictions;
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].workload, job.id);
  EXPECT_TRUE(e[0].requeue);
  EXPECT_NE(e[0].reason.find("sm_activity 0.980"), std::string::npos) << e[0].reason;
  EXPECT_EQ(m.Monitor(0)->state(), GpuHealth::kOverlimit);
  // Without a driver that restarts moved work, the eviction ends the job instead.
  Muxflow no_move = Make({}, false);
  no_move.AfterCycle(c_);
  telemetry_.SetSmActivity("svc1", 0.99);
  e = no_move.AfterCycle(c_).evictions;
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].requeue);
}

// One cycle's end both evicts (GPU 0's service is over its limit) and resizes (GPU 1's calms
// down). The core applies the evictions first, so the resizes are judged as if they were done:
// the job moved off GPU 0 is not resized as well.
TEST_F(MuxflowTest, ACycleThatEvictsAndResizesLeavesTheEvictedOutOfItsResizes) {
  AddNodes(1, 2);
  PlaceService(0, 1, 0, 0.5);
  PlaceService(1, 2, 1, 0.5);
  Muxflow m = Make();
  ASSERT_TRUE(m.AfterCycle(c_).evictions.empty());  // both Healthy
  const Workload a = Job(10, 0), b = Job(11, 1);
  for (const auto& [w, g] : {std::pair{&a, 0}, {&b, 1}}) {
    ASSERT_TRUE(c_.Place(*w, {w->id, 0, {{ClusterState::PartitionOf(g, 0), 500, 6144, true}}}));
  }
  telemetry_.SetSmActivity("svc1", 0.98);  // ≥ 0.97: Overlimit; a would drop to 10 %
  telemetry_.SetSmActivity("svc2", 0.3);   // b follows to 70 %
  const CycleActions actions = m.AfterCycle(c_);
  ASSERT_EQ(actions.evictions.size(), 1u);
  EXPECT_EQ(actions.evictions[0].workload, a.id);
  ASSERT_EQ(actions.resizes.size(), 1u);
  EXPECT_EQ(actions.resizes[0].workload, b.id);
  EXPECT_EQ(actions.resizes[0].slices.at(0).milli, 700);
}

// A memory burst read first by a placement (PlaceBatch feeds the monitors too) must still evict
// at the cycle's end: the eviction pass keeps its own record of the samples it acted on.
TEST_F(MuxflowTest, AnOverlimitSampleReadByAPlacementFirstStillEvicts) {
  AddNodes(1, 2);
  PlaceService(0, 1, 0, 0.3);
  PlaceService(1, 2, 1, 0.3);
  Muxflow m = Make();
  ASSERT_TRUE(m.AfterCycle(c_).evictions.empty());
  const Workload a = Job(10, 0);
  ASSERT_TRUE(c_.Place(a, {a.id, 0, {{ClusterState::PartitionOf(0, 0), 700, 6144, true}}}));
  // GPU 0's service cache grows: 0.96 of the T4's memory in use (≥ 0.95: Overlimit).
  const double t4 = static_cast<double>(c_.partition(ClusterState::PartitionOf(0, 0)).memory_mib);
  telemetry_.SetMemoryUsedMib(c_.gpu(0).uuid, 0.96 * t4);
  const Workload b = Job(11, 1);
  const Workload* pending[] = {&b};
  m.PlaceBatch(pending, c_);  // a placement reads the sample first
  const CycleActions actions = m.AfterCycle(c_);
  ASSERT_EQ(actions.evictions.size(), 1u);
  EXPECT_EQ(actions.evictions[0].workload, a.id);
  EXPECT_NE(actions.evictions[0].reason.find("memory 0.960"), std::string::npos)
      << actions.evictions[0].reason;
  EXPECT_TRUE(m.AfterCycle(c_).evictions.empty());  // nothing new read: acted on already
}

// An offline job needs its memory free by what the GPU holds now, not only by what is
// reserved: a service that reserved 60 % but whose cache holds 72 % leaves 28 % of the T4,
// too little for a 6,144 MiB job (37.5 %). Nor may the job take the GPU to SysMonitor's
// unhealthy memory (90 %): at 55 % in use it would hold 92.5 % (a service's burst still growing
// would pass Overlimit, or 100 %, before the next sample); at 50 % (87.5 %) it fits.
TEST_F(MuxflowTest, AnOfflineJobNeedsTheMemoryTheGpuLeavesFreeNow) {
  AddNodes(1, 1);
  PlaceService(0, 1, 0, 0.3);
  MuxflowOptions first_fit;
  first_fit.matching = false;  // Filter answers for an offline job as it comes
  Muxflow m = Make(first_fit);
  ASSERT_TRUE(m.AfterCycle(c_).evictions.empty());
  Workload job = Job(2, 0);
  job.gpu.memory_mib = 6144;
  const double t4 = static_cast<double>(c_.partition(ClusterState::PartitionOf(0, 0)).memory_mib);
  telemetry_.SetMemoryUsedMib(c_.gpu(0).uuid, 0.72 * t4);
  m.AfterCycle(c_);  // 0.72 < 0.8: still Healthy
  ASSERT_EQ(m.Monitor(0)->state(), GpuHealth::kHealthy);
  const Feasibility no = m.Filter(job, 0, c_);
  EXPECT_FALSE(no.ok());
  EXPECT_NE(no.reason.find("what the GPU's memory in use leaves"), std::string::npos) << no.reason;
  telemetry_.SetMemoryUsedMib(c_.gpu(0).uuid, 0.55 * t4);
  m.AfterCycle(c_);
  ASSERT_EQ(m.Monitor(0)->state(), GpuHealth::kHealthy);
  EXPECT_FALSE(m.Filter(job, 0, c_).ok());
  telemetry_.SetMemoryUsedMib(c_.gpu(0).uuid, 0.5 * t4);
  m.AfterCycle(c_);
  EXPECT_TRUE(m.Filter(job, 0, c_).ok());
}

TEST_F(MuxflowTest, FirstFitWithoutMatchingAndNothingOnAnUnknownGpu) {
  AddNodes(1, 2);
  PlaceService(0, 1, 0, 0.5);
  // GPU 1's service publishes nothing: its SysMonitor stays Init, so no offline work goes there.
  const Workload s = Service(2, 1);
  ASSERT_TRUE(c_.Place(s, {s.id, 0, {{ClusterState::PartitionOf(1, 0), 1000, 9216}}}));
  Muxflow m = Make({.matching = false});
  const Workload job = Job(3, 0);
  m.AfterCycle(c_);
  EXPECT_TRUE(m.Filter(job, 0, c_).ok());
  auto offer = m.Score(job, 0, c_);
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->placement.slices.at(0).partition, ClusterState::PartitionOf(0, 0));
  // j0 at 50 % beside s0: 0.70 · (1 − 0.05) = 0.665, scored × 100.
  EXPECT_NEAR(offer->score, 66.5, 1e-9);
  EXPECT_EQ(m.Monitor(1), nullptr);
  // Once GPU 0 shares, nothing is left: the reason names why.
  ASSERT_TRUE(c_.Place(job, offer->placement));
  EXPECT_EQ(m.Filter(Job(4, 1), 0, c_).reason, "no online GPU is Healthy (SysMonitor)");
}

// offline_period without matching: the same rounds, but each job, in arrival order, takes the
// first free Healthy GPU in cluster order. With j2 arriving first (weights as in the test
// above) that is j2 → GPU0 and j1 → GPU1, 1.19 in all, where the matching finds 1.4325.
TEST_F(MuxflowTest, GreedyRoundsWaitForThePeriodAndTakeTheFirstFreeGpu) {
  AddNodes(1, 2);
  PlaceService(0, 1, 0, 0.5);
  PlaceService(1, 2, 1, 0.25);
  Muxflow m = Make({.matching = false, .offline_period = true});
  const Workload a = Job(10, 1), b = Job(11, 2);
  m.AfterCycle(c_);
  // Between rounds nothing is offered one by one.
  EXPECT_EQ(m.Filter(a, 0, c_).reason, "offline work waits for the next round");
  EXPECT_FALSE(m.Score(a, 0, c_).has_value());
  // b (j2) arrived first: it takes GPU0 (0.3825), a (j1) the next, GPU1 (0.8075).
  const Workload* pending[] = {&b, &a};
  auto batch = m.PlaceBatch(pending, c_);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_NEAR(m.LastMatch(b.id)->weight, 0.3825, 1e-9);
  EXPECT_EQ(m.LastMatch(b.id)->gpu, 0);
  EXPECT_NEAR(m.LastMatch(a.id)->weight, 0.8075, 1e-9);
  EXPECT_EQ(m.LastMatch(a.id)->gpu, 1);
  EXPECT_NE(m.Explain(a, c_).find("matching off (greedy rounds)"), std::string::npos);
  // The next round is a period later.
  EXPECT_FALSE(m.PlaceBatch(pending, c_).has_value());
  clock_.Set(900);
  EXPECT_TRUE(m.PlaceBatch(pending, c_).has_value());
}

// Without dynamic SM the offline share is fixed: MPS's 100 % by default, or what the operator
// fixes (001 Fig. 8 contrasts dynamic SM with a fixed 40 %), whatever the service leaves.
TEST_F(MuxflowTest, WithoutDynamicSmTheShareIsFixed) {
  AddNodes(1, 1);
  PlaceService(0, 1, 0, 0.5);
  for (const auto& [fixed, milli] : {std::pair{100, 1000}, {40, 400}}) {
    Muxflow m = Make({.dynamic_sm = false, .fixed_sm_percent = fixed, .matching = false});
    m.AfterCycle(c_);
    auto offer = m.Score(Job(3, 0), 0, c_);
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->placement.slices.at(0).milli, milli);
  }
}

// Property: under muxflow driven through the scheduler core with random arrivals, departures and
// telemetry, every cycle's placements, evictions and resizes keep every ClusterState invariant.
TEST_F(MuxflowTest, PropertyEvictionsAndResizesKeepEveryInvariant) {
  AddNodes(4, 4);
  Rng rng(11);
  PolicyContext ctx{.rng = &rng,
                    .clock = &clock_,
                    .predictor = &predictor_,
                    .telemetry = &telemetry_,
                    .can_move = true};
  auto policy = MakePolicy("muxflow", ctx, {{"period_s", 300}});
  ASSERT_TRUE(policy.has_value()) << policy.error().message;
  sched::Scheduler* core = nullptr;
  int evicted = 0, resized = 0;
  sched::Hooks hooks;
  // An offline job is only ever bound beside an online service.
  hooks.bind = [&](const Workload& w, const model::Placement& p,
                   const model::Environment&) -> Expected<void> {
    if (!p.slices.at(0).best_effort) return {};
    EXPECT_EQ(w.klass, model::WorkloadClass::kOffline);
    int services = 0;
    for (const model::Client& cl : c_.partition(p.slices[0].partition).clients) {
      services +=
          !cl.best_effort && c_.Find(cl.workload)->workload.klass == model::WorkloadClass::kOnline;
    }
    EXPECT_EQ(services, 1);
    return {};
  };
  hooks.evict = [&](const Workload& w, const Eviction& e) -> Expected<void> {
    EXPECT_TRUE(e.requeue);
    ++evicted;
    EXPECT_TRUE(core->Submit(w).has_value());
    return {};
  };
  hooks.resized = [&](const Workload& w, const model::Placement& now) -> Expected<void> {
    ++resized;
    EXPECT_EQ(c_.Find(w.id)->placement, now);
    return {};
  };
  sched::Scheduler s(c_, **policy, clock_, rng, hooks);
  core = &s;
  model::WorkloadId next = 1;
  int offline_bound = 0;
  for (int step = 0; step < 3000; ++step) {
    clock_.Set(step * 60.0);
    const double u = rng.Uniform();
    if (u < 0.15) {
      Workload w = Service(next++, static_cast<int>(rng.Below(3)));
      ASSERT_TRUE(s.Submit(w).has_value());
    } else if (u < 0.55) {
      ASSERT_TRUE(s.Submit(Job(next++, static_cast<int>(rng.Below(4)))).has_value());
    } else if (u < 0.75 && c_.placed_count() > 0) {
      auto it = c_.placed().begin();
      std::advance(it, static_cast<std::ptrdiff_t>(rng.Below(c_.placed_count())));
      ASSERT_TRUE(s.Finish(it->first).has_value());
    }
    // Telemetry: each service's activity wanders; a GPU's activity now and then spikes.
    for (const auto& [id, pw] : c_.placed()) {
      if (pw.workload.klass != model::WorkloadClass::kOnline) continue;
      const std::string& uuid = c_.gpu(c_.partition(pw.placement.slices[0].partition).gpu).uuid;
      telemetry_.SetSmActivity(pw.workload.name,
                               rng.Uniform() < 0.05 ? 0.99 : rng.Uniform(0.05, 0.85));
      telemetry_.SetSmActivity(uuid, rng.Uniform(0.1, 1.0));
      telemetry_.SetUtilization(uuid, rng.Uniform(0.1, 0.9));
      telemetry_.SetMemoryUsedMib(uuid, rng.Uniform(0.2, 0.85) * 15360);
    }
    const sched::CycleStats st = s.RunCycle();
    offline_bound += st.bound;
    const Expected<void> ok = c_.CheckInvariants();
    ASSERT_TRUE(ok.has_value()) << "step " << step << ": " << ok.error().message;
    ASSERT_EQ(s.totals().policy_errors, 0) << "step " << step;
    for (const auto& [id, pw] : c_.placed()) {
      const model::Partition& part = c_.partition(pw.placement.slices.at(0).partition);
      int services = 0, offline = 0;
      for (const model::Client& cl : part.clients) {
        (cl.best_effort ? offline : services) += 1;
      }
      // At most one offline job and one service per GPU (a service that left may leave its
      // offline neighbour alone there).
      ASSERT_LE(offline, 1) << "step " << step;
      ASSERT_LE(services, 1) << "step " << step;
    }
  }
  EXPECT_GT(evicted, 20);
  EXPECT_GT(resized, 50);
  EXPECT_GT(offline_bound, 100);
}

}  // namespace
}  // namespace tessera::policy
