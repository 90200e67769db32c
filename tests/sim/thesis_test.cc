#include "sim/thesis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "predict/predictor_cache.h"
#include "shipped_catalog.h"
#include "sim/physics.h"
#include "sim/world.h"

namespace tessera::sim {
namespace {

TEST(ThesisTest, PodsArriveInBatchesOfEightWithSlosAroundTheQuarterGpuRate) {
  const Physics physics(Shipped(), 3, {.noise_sd = 0});
  const auto pods = ThesisWorkloads({20, false}, 3, physics);
  ASSERT_EQ(pods.size(), 20u);
  for (size_t i = 0; i < pods.size(); ++i) {
    // 20 pods = 3 batches, 900 s / 3 = 300 s apart, up to 5 s of jitter each.
    const double batch_start = static_cast<double>(i / 8) * 300;
    EXPECT_GE(pods[i].arrival_s, batch_start);
    EXPECT_LT(pods[i].arrival_s, batch_start + 5);
    EXPECT_EQ(pods[i].gpu.count, 1);
  }
  // onnx/mobilenet's SLO_4 by hand: on 25% of a V100, 0.3 ms x 4 x 312/125 + 0.4 ms x
  // 1555/900 + 37.02 ms = 40.706 ms (24.566/s); on an A30 1g.6gb (1/4 of 165/312 compute, 1/4
  // of 933/1555 bandwidth): 2.269 + 2.667 + 37.02 = 41.956 ms (23.835/s). SLOs in [0.8, 1.0] x
  // the lower, 23.835/s; with base=mean and slo=literal, [0.8, 1.2] x the mean, 24.20/s.
  const auto literal =
      ThesisWorkloads({20, false}, 3, physics, {.slo_upper = 1.2, .slo_base_mean = true});
  bool seen = false;
  double highest = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i].app != "onnx/mobilenet") continue;
    seen = true;
    EXPECT_GE(pods[i].slo_qps, 0.8 * 23.835 - 0.01);
    EXPECT_LE(pods[i].slo_qps, 23.835 + 0.01);
    EXPECT_GE(literal[i].slo_qps, 0.8 * 24.20 - 0.01);
    EXPECT_LE(literal[i].slo_qps, 1.2 * 24.20 + 0.01);
    highest = std::max(highest, literal[i].slo_qps);
  }
  EXPECT_TRUE(seen);
  EXPECT_GT(highest, 23.835);  // the literal interval reaches above the capped one
  // Queries: the catalogue's draw x 0.7 by default, as drawn with queries=1.
  const auto whole_length = ThesisWorkloads({20, false}, 3, physics, {.queries_scale = 1});
  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_EQ(pods[i].queries, std::llround(0.7 * static_cast<double>(whole_length[i].queries)));
  }
  // The same seed gives the same pods; high SLOs are higher.
  const auto again = ThesisWorkloads({20, false}, 3, physics);
  const auto high = ThesisWorkloads({20, true}, 3, physics);
  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_EQ(pods[i].app, again[i].app);
    EXPECT_EQ(pods[i].slo_qps, again[i].slo_qps);
    EXPECT_GE(high[i].slo_qps, pods[i].slo_qps);
  }
}

TEST(ThesisTest, ReadingParsesEveryKeyAndNamesABadOne) {
  auto r = ThesisReading::Parse(
      "slo=literal,base=mean,interference=offline,quarters=roofline,queries=1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_DOUBLE_EQ(r->slo_upper, 1.2);
  EXPECT_TRUE(r->slo_base_mean);
  EXPECT_DOUBLE_EQ(r->interference, 1);
  EXPECT_FALSE(r->quarters_ch6);
  EXPECT_DOUBLE_EQ(r->queries_scale, 1);
  EXPECT_EQ(r->name(), "slo=literal,base=mean,interference=1,quarters=roofline,queries=1");
  auto d = ThesisReading::Parse("");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->name(), "slo=capped,base=lower,interference=0.05,quarters=ch6,queries=0.7");
  EXPECT_DOUBLE_EQ(ThesisReading::Parse("interference=0.3")->interference, 0.3);
  using SubQuarter = ThesisReading::SubQuarter;
  EXPECT_EQ(d->subquarter, SubQuarter::kFail);
  EXPECT_DOUBLE_EQ(ThesisPhysics(*d).fail_below_share, 0.25);
  EXPECT_DOUBLE_EQ(ThesisPhysics(*d).fixed_floor_share, 0);
  for (const auto& [text, kind, fail, floor] :
       {std::tuple{"subquarter=floor", SubQuarter::kFloor, 0.0, 0.25},
        std::tuple{"subquarter=linear", SubQuarter::kLinear, 0.0, 0.0},
        std::tuple{"subquarter=fail", SubQuarter::kFail, 0.25, 0.0}}) {
    auto r = ThesisReading::Parse(text);
    ASSERT_TRUE(r) << text;
    EXPECT_EQ(r->subquarter, kind) << text;
    EXPECT_DOUBLE_EQ(ThesisPhysics(*r).fail_below_share, fail) << text;
    EXPECT_DOUBLE_EQ(ThesisPhysics(*r).fixed_floor_share, floor) << text;
    const std::vector<std::string> thesis_gpus = {"V100-32GB", "A30-24GB"};
    EXPECT_EQ(ThesisPhysics(*r).small_share_models, thesis_gpus) << text;
  }
  EXPECT_EQ(ThesisReading::Parse("subquarter=floor")->name(),
            "slo=capped,base=lower,interference=0.05,quarters=ch6,queries=0.7,subquarter=floor");
  EXPECT_EQ(ThesisReading::Parse("subquarter=fail")->name(), d->name());
  EXPECT_DOUBLE_EQ(d->resnet_quarter, 0.63);
  auto q = ThesisReading::Parse("resnet_quarter=0.9");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_DOUBLE_EQ(q->resnet_quarter, 0.9);
  EXPECT_EQ(q->name(),
            "slo=capped,base=lower,interference=0.05,quarters=ch6,queries=0.7,resnet_quarter=0.9");
  EXPECT_EQ(ThesisReading::Parse("resnet_quarter=0.63")->name(), d->name());
  for (const char* bad : {"slo=wide", "interference=2", "interference=x", "interference=",
                          "colour=red", "slo", "time=0.5", "time=", "time=2000", "subquarter=waves",
                          "resnet_quarter=1", "resnet_quarter=0.2", "resnet_quarter="}) {
    auto e = ThesisReading::Parse(bad);
    ASSERT_FALSE(e) << bad;
    EXPECT_NE(e.error().message.find(bad), std::string::npos) << e.error().message;
  }
}

// x copies of `app` on x equal MPS shares of one V100 (x = 4: the 25 % chunks): their total QPS
// over x times one alone on its share, noise off.
double KeptOnEqualShares(const AppCatalog& catalog, const ThesisReading& reading,
                         const std::string& app, int x) {
  PhysicsOptions o = ThesisPhysics(reading);
  o.noise_sd = 0;
  Physics physics(catalog, 1, o);
  model::ClusterState c;
  EXPECT_TRUE(c.AddNode(
      model::UniformNode("v100", *model::FindGpuModel("V100-32GB"), 1, 64000, 1 << 20)));
  const model::PartitionIndex p = model::ClusterState::PartitionOf(0, 0);
  auto place = [&](model::WorkloadId id) {
    const model::Workload w{.id = id, .app = app, .queries = 1000, .gpu = {.count = 1}};
    EXPECT_TRUE(c.Place(w, {id, 0, {{p, 1000 / x, 8000}}}));
  };
  place(1);
  const double alone = physics.Rate(*c.Find(1), c).qps;
  for (model::WorkloadId id = 2; id <= x; ++id) place(id);
  double total = 0;
  for (model::WorkloadId id = 1; id <= x; ++id) total += physics.Rate(*c.Find(id), c).qps;
  return total / (x * alone);
}

const char* const kThesisCnns[] = {"onnx/resnet50", "tf/resnet50",        "onnx/mobilenet",
                                   "tf/mobilenet",  "onnx/ssd-mobilenet", "tf/ssd-mobilenet"};

// Ch. 6.3 (Fig. 6.6): x pods on x equal partitions of one GPU serve "an almost linear" total.
// The default reading's co-runner pressure keeps four engines on a V100's 25 % MPS chunks at
// 0.92-0.94 of four times one alone (front channel 0.05 × 0.49 × three co-runners' fixed duty,
// SM channel 0.05 × 1.5 × theirs); Ch. 6.4's Offline constants keep 0.10-0.30 of it, and the
// earlier fit to round robin's low row (0.15) 0.79-0.82, which is not "almost linear".
TEST(ThesisTest, FourPodsOnFourQuartersOfAV100ServeAlmostLinearly) {
  const AppCatalog catalog = ThesisCatalog(Shipped());
  const ThesisReading defaults;
  ThesisReading fitted_before;
  fitted_before.interference = 0.15;
  ThesisReading offline;
  offline.interference = 1;
  for (const std::string app : kThesisCnns) {
    SCOPED_TRACE(app);
    EXPECT_GE(KeptOnEqualShares(catalog, defaults, app, 4), 0.91);
    EXPECT_LE(KeptOnEqualShares(catalog, defaults, app, 4), 0.95);
    EXPECT_LT(KeptOnEqualShares(catalog, fitted_before, app, 4), 0.83);
    EXPECT_LT(KeptOnEqualShares(catalog, offline, app, 4), 0.31);
  }
}

// The same experiment measured on a real GPU (data/h200-scaling, tools/characterise/scaling.py):
// four CNN processes at batch 1 back to back (SingleStream-like), each at MPS 25 % of an H200,
// kept 0.895-1.018 of their rate alone on that share (two runs; ResNet50, MobileNetV2, SSDlite).
// The default pressure's 0.92-0.94 lies inside that range; the earlier fit (0.15, 0.79-0.82) and
// Ch. 6.4's Offline constants lie below it. At batch 32 (Offline-like) the H200 kept 0.765-0.811:
// the scenario, not the GPU's size alone, sets how much a neighbour takes.
TEST(ThesisTest, DefaultPressureKeepsWhatFourSingleStreamPodsKeptOnAnH200) {
  double lo = 2, hi = 0, offline_hi = 0;
  int rows = 0;
  for (const char* run : {"run1", "run2"}) {
    const std::string path =
        std::string(TESSERA_SOURCE_DIR) + "/data/h200-scaling/" + run + "/scaling.csv";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string line;
    std::getline(in, line);
    ASSERT_EQ(line, "app,pods,mps,alone_qps,together_qps,kept,total_vs_whole,count");
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
      ASSERT_EQ(f.size(), 8u) << path << ": " << line;
      if (f[1] != "4" || f[0].starts_with("bert")) continue;
      const double kept = std::stod(f[5]);
      if (f[0].ends_with("/bs1")) {
        lo = std::min(lo, kept);
        hi = std::max(hi, kept);
        ++rows;
      } else if (f[0].ends_with("/bs32")) {
        offline_hi = std::max(offline_hi, kept);
      }
    }
  }
  ASSERT_EQ(rows, 5);  // ResNet50 and MobileNetV2 twice, SSDlite once
  EXPECT_NEAR(lo, 0.895, 0.001);
  EXPECT_NEAR(hi, 1.018, 0.001);
  EXPECT_LT(offline_hi, lo);
  const AppCatalog catalog = ThesisCatalog(Shipped());
  const ThesisReading defaults;
  ThesisReading fitted_before;
  fitted_before.interference = 0.15;
  for (const std::string app : kThesisCnns) {
    SCOPED_TRACE(app);
    const double kept = KeptOnEqualShares(catalog, defaults, app, 4);
    EXPECT_GE(kept, lo);
    EXPECT_LE(kept, hi);
    EXPECT_LT(KeptOnEqualShares(catalog, fitted_before, app, 4), lo);
  }
}

// time=K (the emulated cluster's rule, docs/cluster-box.md): the same pods K times faster —
// arrivals ÷ K, queries ÷ K rounded (at least 1), SLOs and apps unchanged; named only when not 1.
TEST(ThesisTest, TimeScaleDividesArrivalsAndQueries) {
  const AppCatalog catalog = Shipped();
  const Physics physics(catalog, 1);
  auto r = ThesisReading::Parse("time=10");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_DOUBLE_EQ(r->time_scale, 10);
  EXPECT_EQ(r->name(), "slo=capped,base=lower,interference=0.05,quarters=ch6,queries=0.7,time=10");
  const auto plain = ThesisWorkloads({20, false}, 4, physics);
  const auto fast = ThesisWorkloads({20, false}, 4, physics, *r);
  ASSERT_EQ(plain.size(), fast.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(fast[i].app, plain[i].app);
    EXPECT_DOUBLE_EQ(fast[i].slo_qps, plain[i].slo_qps);
    EXPECT_DOUBLE_EQ(fast[i].arrival_s, plain[i].arrival_s / 10);
    // plain = round(q × 0.7), fast = round(q × 0.7 / 10): within one rounding of plain / 10.
    EXPECT_NEAR(static_cast<double>(fast[i].queries), static_cast<double>(plain[i].queries) / 10,
                0.56);
    EXPECT_GE(fast[i].queries, 1);
  }
}

// mig=fixed: the A30 keeps the MIG mode it was set up with, as agents keep it. predictive sets
// up nothing, so its A30 stays whole all run; with mig=free (the default) it cuts the idle A30
// into instances during the run (seed 1 does: the small engines go to 1g.6gb).
TEST(ThesisTest, MigFixedKeepsTheA30WholeForPredictive) {
  const AppCatalog catalog = ThesisCatalog(Shipped());
  auto fixed = ThesisReading::Parse("mig=fixed");
  ASSERT_TRUE(fixed) << fixed.error().message;
  EXPECT_TRUE(fixed->mig_fixed);
  EXPECT_EQ(fixed->name(),
            "slo=capped,base=lower,interference=0.05,quarters=ch6,queries=0.7,mig=fixed");
  auto count_mig = [](const ThesisRun& run) {
    int n = 0;
    for (const ThesisWorkloadRecord& w : run.workloads)
      n += w.profile != "whole" && !w.profile.empty();
    return n;
  };
  auto free_run = RunThesis("predictive", {20, false}, 1, catalog);
  auto fixed_run = RunThesis("predictive", {20, false}, 1, catalog, *fixed);
  ASSERT_TRUE(free_run && fixed_run);
  EXPECT_GT(count_mig(*free_run), 0);
  EXPECT_EQ(count_mig(*fixed_run), 0);
  EXPECT_EQ(fixed_run->never_placed, 0);
}

TEST(ThesisTest, Ch6QuartersKeepTheWholeV100AndGiveAQuarterTheTargetShare) {
  const AppCatalog shipped = Shipped();
  const AppCatalog ch6 = ThesisCatalog(shipped);
  const Physics before(shipped, 1, {.noise_sd = 0}), after(ch6, 1, {.noise_sd = 0});
  const auto v100 = *model::FindGpuModel("V100-32GB");
  const std::pair<const char*, double> targets[] = {
      {"onnx/resnet50", 0.63}, {"tf/mobilenet", 0.99}, {"tf/ssd-mobilenet", 0.98}};
  for (const auto& [key, ratio] : targets) {
    const double whole = after.IsolatedQps(*ch6.Find(key), v100, -1, 1000);
    EXPECT_NEAR(whole, before.IsolatedQps(*shipped.Find(key), v100, -1, 1000), 1e-9) << key;
    EXPECT_NEAR(after.IsolatedQps(*ch6.Find(key), v100, -1, 250) / whole, ratio, 1e-9) << key;
  }
  // onnx/resnet50 by hand: whole 1/22 s (22/s), quarter 1/11.1 s on the roofline; the SM-bound
  // part shrinks by k = t(1/0.63 - 1) / (t_quarter - t), the fixed part takes up what it loses.
  const AppSpec& r0 = *shipped.Find("onnx/resnet50");
  const AppSpec& r1 = *ch6.Find("onnx/resnet50");
  EXPECT_LT(r1.compute_s, r0.compute_s);
  EXPECT_GT(r1.fixed_s, r0.fixed_s);
  EXPECT_DOUBLE_EQ(r1.compute_s / r0.compute_s, r1.memory_s / r0.memory_s);
  // Apps outside the thesis's six are untouched.
  EXPECT_EQ(ch6.apps.back().compute_s, shipped.apps.back().compute_s);
  // resnet_quarter moves the two ResNets' quarter and nothing else.
  const AppCatalog r90 = ThesisCatalog(shipped, 0.9);
  const Physics at90(r90, 1, {.noise_sd = 0});
  for (const char* key : {"onnx/resnet50", "tf/resnet50"}) {
    const double whole = at90.IsolatedQps(*r90.Find(key), v100, -1, 1000);
    EXPECT_NEAR(whole, before.IsolatedQps(*shipped.Find(key), v100, -1, 1000), 1e-9) << key;
    EXPECT_NEAR(at90.IsolatedQps(*r90.Find(key), v100, -1, 250) / whole, 0.9, 1e-9) << key;
  }
  EXPECT_EQ(r90.Find("tf/mobilenet")->compute_s, ch6.Find("tf/mobilenet")->compute_s);
}

TEST(ThesisTest, BaselinesFindTheirGpusCutBeforeTheFirstPod) {
  // Ch. 9.2: min and round robin run on GPUs already cut to their smallest chunks, so the first
  // pod on the A30 starts when it arrives; predictive finds it whole and cuts it (5 s) first.
  for (const char* policy : {"min", "round-robin", "predictive"}) {
    auto run = RunThesis(policy, {20, false}, 2, Shipped());
    ASSERT_TRUE(run) << policy;
    // The first pod bound on the A30.
    const ThesisWorkloadRecord* first = nullptr;
    for (const ThesisWorkloadRecord& w : run->workloads) {
      if (w.node == "a30" && w.start_s && (!first || *w.start_s < *first->start_s)) first = &w;
    }
    ASSERT_NE(first, nullptr) << policy;
    EXPECT_EQ(*first->start_s > first->arrival_s, std::string(policy) == "predictive") << policy;
  }
}

TEST(ThesisTest, APodIsFeasibleWhenItsBestGpuAloneMeetsItsSlo) {
  // onnx/mobilenet's ceiling by hand: whole A30, 0.3 ms x 312/165 + 0.4 ms x 1555/933 +
  // 37.02 ms = 38.254 ms (26.14/s), faster than a whole V100 (0.749 + 0.691 + 37.02 = 38.46 ms).
  // High SLOs go up to 1.2 x SLO_1, so some pods of every app are out of reach. A pod's own
  // speed (its noise factor, within ±4 %) moves its ceiling: feasible when its SLO is at most
  // 0.96 x the noise-free ceiling, infeasible above 1.04 x, either way between.
  const AppCatalog catalog = Shipped();
  const Physics physics(catalog, 4, {.noise_sd = 0});
  const auto v100 = *model::FindGpuModel("V100-32GB");
  const auto a30 = *model::FindGpuModel("A30-24GB");
  EXPECT_NEAR(physics.BestIsolatedQps(*catalog.Find("onnx/mobilenet"), std::vector{v100, a30}),
              1 / 0.038254, 0.01);
  // Under Ch. 9.1's literal interval, [0.8, 1.2] x SLO_1, some high SLOs are above every GPU.
  int on_best = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto run = RunThesis("max", {20, true}, seed, catalog, {.slo_upper = 1.2});
    ASSERT_TRUE(run);
    int feasible = 0, met = 0;
    for (const ThesisWorkloadRecord& w : run->workloads) {
      const AppSpec& app = *catalog.Find(w.app);
      const double ceiling = std::max(physics.IsolatedQps(app, v100, -1, 1000),
                                      physics.IsolatedQps(app, a30, -1, 1000));
      if (w.slo_qps <= 0.96 * ceiling) {
        EXPECT_TRUE(w.slo_feasible) << w.app << " " << w.slo_qps;
      }
      if (w.slo_qps > 1.04 * ceiling) {
        EXPECT_FALSE(w.slo_feasible) << w.app << " " << w.slo_qps;
      }
      feasible += w.slo_feasible;
      met += w.slo_feasible && w.achieved_qps >= w.slo_qps;
    }
    EXPECT_GT(feasible, 0);
    EXPECT_LT(feasible, 20);
    EXPECT_EQ(run->slo_feasible, feasible);
    EXPECT_EQ(run->slo_met_feasible, met);
    EXPECT_DOUBLE_EQ(run->slo_attainment_feasible(), static_cast<double>(met) / feasible);
    // An infeasible pod never meets its SLO: alone on a whole GPU (max) it runs at most at its
    // own ceiling, which is below the SLO. A feasible one alone on its best GPU meets it.
    for (const ThesisWorkloadRecord& w : run->workloads) {
      if (!w.slo_feasible) {
        EXPECT_LT(w.achieved_qps, w.slo_qps) << w.app;
        continue;
      }
      const AppSpec& app = *catalog.Find(w.app);
      const bool a30_best =
          physics.IsolatedQps(app, a30, -1, 1000) >= physics.IsolatedQps(app, v100, -1, 1000);
      if (w.node != (a30_best ? "a30" : "v100")) continue;
      ++on_best;
      EXPECT_GE(w.achieved_qps, w.slo_qps) << "seed " << seed << " " << w.app << " " << w.id;
    }
  }
  EXPECT_GT(on_best, 0);
}

TEST(ThesisTest, MeanOfPoolsTheFeasiblePods) {
  ThesisRun a, b;
  a.slo_feasible = 10;
  a.slo_met_feasible = 9;
  b.slo_feasible = 30;
  b.slo_met_feasible = 15;
  const ThesisRun m = MeanOf({a, b});
  EXPECT_DOUBLE_EQ(m.slo_feasible, 20);
  EXPECT_DOUBLE_EQ(m.slo_attainment_feasible(), 24.0 / 40);  // not (0.9 + 0.5) / 2
  EXPECT_TRUE(std::isnan(ThesisRun{}.slo_attainment_feasible()));
}

TEST(ThesisTest, AnUnprofiledScenarioLeavesSomeEnginesToTheCollaborativeFilter) {
  const ThesisScenario s{20, false, 0, 3};
  EXPECT_EQ(s.name(), "pods=20,slo=low,unprofiled=3");
  const std::vector<std::string> apps = ThesisUnprofiledApps(s, 7);
  ASSERT_EQ(apps.size(), 3u);
  EXPECT_EQ(apps, ThesisUnprofiledApps(s, 7));  // drawn by seed
  for (size_t i = 0; i < apps.size(); ++i) {
    EXPECT_NE(Shipped().Find(apps[i]), nullptr);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(apps[i], apps[j]);
  }
  EXPECT_TRUE(ThesisUnprofiledApps({20, false}, 7).empty());
  auto run = RunThesis("predictive", s, 7, Shipped());
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->scenario.name(), "pods=20,slo=low,unprofiled=3");
  EXPECT_EQ(run->pods, 20);
}

// On thesis-scale's cluster too (the cluster box runs it to see slo-aware learn): the unprofiled
// engines keep 1-2 measured cells of the profile, the characterised ones every configuration.
TEST(ThesisTest, UnprofiledEnginesOnTheScaleClusterKeepOneOrTwoCells) {
  const ThesisScenario s{.pods = 12, .nodes = 1, .unprofiled = 3};
  EXPECT_EQ(s.name(), "pods=12,slo=low,nodes=1,unprofiled=3");
  auto world = BuildThesisWorld("max", s, 4, Shipped(), {});
  ASSERT_TRUE(world) << world.error().message;
  auto samples = ThesisSamples((*world)->physics, (*world)->cluster, s, 4);
  ASSERT_TRUE(samples) << samples.error().message;
  const predict::ProfileMatrix& m = samples->profile();
  const std::vector<std::string> unprofiled = ThesisUnprofiledApps(s, 4);
  ASSERT_EQ(unprofiled.size(), 3u);
  for (const char* engine : {"onnx/resnet50", "onnx/mobilenet", "onnx/ssd-mobilenet", "tf/resnet50",
                             "tf/mobilenet", "tf/ssd-mobilenet"}) {
    const std::optional<int> row = m.FindRow(engine);
    ASSERT_TRUE(row) << engine;
    int cells = 0;
    for (int c = 0; c < m.cols(); ++c) cells += m.Has(*row, c);
    if (std::find(unprofiled.begin(), unprofiled.end(), engine) != unprofiled.end()) {
      EXPECT_GE(cells, 1) << engine;
      EXPECT_LE(cells, 2) << engine;
    } else {
      // Every configuration measured: one node, so A30s only — whole, 1g.6gb, 2g.12gb and
      // 4g.24gb at MPS 100/50/25 %, less the three below a quarter of the GPU (1g at 50 and
      // 25 %, 2g at 25 %: subquarter=fail), 12 − 3.
      EXPECT_EQ(cells, 9) << engine;
      EXPECT_EQ(m.cols(), 9) << engine;
    }
  }
}

// The sweep's predictor cache (predict/predictor_cache.h) changes nothing a run reports: each
// predicting policy, in each scenario, runs exactly as it does with a predictor of its own —
// also the learning slo-aware after predictive has run on a copy of the same completion.
TEST(ThesisTest, RunsSharingAPredictorCacheReportWhatTheyReportAlone) {
  const AppCatalog catalog = Shipped();
  predict::PredictorCache cache;
  int runs = 0;
  for (const ThesisScenario& s : {ThesisScenario{20, false}, ThesisScenario{20, true}}) {
    for (const char* policy : {"predictive", "slo-aware"}) {
      auto alone = RunThesis(policy, s, 3, catalog);
      auto shared = RunThesis(policy, s, 3, catalog, {}, &cache);
      ASSERT_TRUE(alone && shared);
      ++runs;
      EXPECT_EQ(alone->slo_violations, shared->slo_violations) << policy << " " << s.name();
      EXPECT_EQ(alone->energy_j, shared->energy_j) << policy << " " << s.name();
      EXPECT_EQ(alone->makespan_s, shared->makespan_s) << policy << " " << s.name();
      ASSERT_EQ(alone->workloads.size(), shared->workloads.size());
      for (size_t i = 0; i < alone->workloads.size(); ++i) {
        EXPECT_EQ(alone->workloads[i].node, shared->workloads[i].node);
        EXPECT_EQ(alone->workloads[i].partition, shared->workloads[i].partition);
        EXPECT_EQ(alone->workloads[i].achieved_qps, shared->workloads[i].achieved_qps);
      }
    }
  }
  // Four runs, one set of samples (seed 3, every engine profiled): completed once.
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.hits(), runs - 1);
}

TEST(ThesisTest, ARunThatPlacesNothingSaysSoAndHasNoNegativeTimes) {
  // No profiled configuration at MPS 33 %: predictive scores nothing and places nothing. It used
  // to report a makespan of -0 s and a pending time of -242 s (time measured to the last
  // completion, 0 when nothing completed); the pods waited until the run stopped at its 48 h
  // horizon, and every one of them is counted as never placed.
  auto run = RunThesis(R"(predictive{"mps_percents":[33]})", {20, false}, 1, Shipped());
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->never_placed, 20);
  EXPECT_EQ(run->makespan_s, 0);
  EXPECT_GT(run->pending_s_mean, 40 * 3600);
  EXPECT_LE(run->pending_s_mean, 48 * 3600);
  // A run that places its pods counts none.
  auto fine = RunThesis("max", {20, false}, 1, Shipped());
  ASSERT_TRUE(fine) << fine.error().message;
  EXPECT_EQ(fine->never_placed, 0);
}

TEST(ThesisTest, SloAwareKeepsTheSlosItCanAndWaitsInsteadOfBindingBelowThem) {
  // docs/simulator.md, "slo-aware": where predictive binds pods below their SLOs (co-location
  // and the slices it packs them into cost more than it predicts), slo-aware waits for a
  // configuration predicted to keep them. Seeds 1-3, 20 pods, low SLO: every feasible pod but at
  // most one meets its SLO (the bar is 98 % over ten seeds), more than predictive's, and the pods
  // wait for it: a longer mean pending time than predictive.
  const AppCatalog catalog = Shipped();
  double feasible = 0, met = 0, pending_slo = 0, pending_pred = 0, attain_slo = 0, attain_pred = 0;
  for (uint64_t seed : {1, 2, 3}) {
    auto slo = RunThesis("slo-aware", {20, false}, seed, catalog);
    auto pred = RunThesis("predictive", {20, false}, seed, catalog);
    ASSERT_TRUE(slo && pred);
    feasible += slo->slo_feasible;
    met += slo->slo_met_feasible;
    pending_slo += slo->pending_s_mean;
    pending_pred += pred->pending_s_mean;
    attain_slo += slo->slo_attainment;
    attain_pred += pred->slo_attainment;
    EXPECT_GE(slo->slo_attainment, pred->slo_attainment) << seed;
    EXPECT_EQ(slo->failures, 0) << seed;
  }
  EXPECT_GT(attain_slo, attain_pred);
  EXPECT_GE(met, feasible - 1);
  EXPECT_GT(pending_slo, pending_pred);
}

TEST(ThesisTest, MaxKeepsTheGpusMostActive) {
  // Ch. 9.3: "max" has the highest GPU utilisation (a whole GPU per engine, kept busy by its
  // queue; GR_ENGINE_ACTIVE counts the engines' latency-bound fixed part), min and
  // round-robin less.
  const AppCatalog catalog = Shipped();
  double util[3] = {};
  const char* policies[] = {"max", "min", "round-robin"};
  for (uint64_t seed : {1, 2}) {
    for (int i = 0; i < 3; ++i) {
      auto run = RunThesis(policies[i], {20, false}, seed, catalog);
      ASSERT_TRUE(run) << run.error().message;
      util[i] += run->gpu_util_mean;
    }
  }
  EXPECT_GT(util[0], util[1]);
  EXPECT_GT(util[0], util[2]);
}

TEST(ThesisTest, RunsAreDeterministicAndAccountForEveryPod) {
  const AppCatalog catalog = Shipped();
  for (const char* policy : {"min", "max"}) {
    auto a = RunThesis(policy, {40, true}, 5, catalog);
    auto b = RunThesis(policy, {40, true}, 5, catalog);
    ASSERT_TRUE(a && b) << policy;
    EXPECT_EQ(a->pods, 40);
    EXPECT_EQ(a->relative_qps_diff.size(), 40u);
    EXPECT_EQ(a->energy_j, b->energy_j) << policy;
    EXPECT_EQ(a->relative_qps_diff, b->relative_qps_diff) << policy;
    // One record per pod, in id order, agreeing with the per-pod differences.
    ASSERT_EQ(a->workloads.size(), 40u);
    for (size_t i = 0; i < a->workloads.size(); ++i) {
      const ThesisWorkloadRecord& w = a->workloads[i];
      EXPECT_EQ(w.id, static_cast<model::WorkloadId>(i + 1));
      EXPECT_DOUBLE_EQ(w.relative_diff(), a->relative_qps_diff[i]);
      if (w.start_s) {
        EXPECT_TRUE(w.node == "v100" || w.node == "a30" || w.node == "cpu") << w.node;
        EXPECT_DOUBLE_EQ(w.pending_s, *w.start_s - w.arrival_s);
      }
    }
    EXPECT_GT(a->makespan_s, 900);  // the last batch arrives at 720 s and runs for minutes
    EXPECT_GE(a->slo_attainment, 0);
    EXPECT_LE(a->slo_attainment, 1);
  }
  // max gives every pod a whole GPU: its pods queue (two GPUs for 40 pods) and never fail.
  auto max = RunThesis("max", {40, false}, 5, catalog);
  ASSERT_TRUE(max);
  EXPECT_EQ(max->failures, 0);
  EXPECT_GT(max->pending_s_mean, 60);
  EXPECT_FALSE(RunThesis("no-such-policy", {20, false}, 1, catalog));
}

}  // namespace
}  // namespace tessera::sim
