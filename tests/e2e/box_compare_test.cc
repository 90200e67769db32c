// The box's comparison (box_compare.h) on hand-made runs: the figures, the ties, the checks,
// and its page as Chromium renders it.
#include "e2e/box_compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chromium_page.h"
#include "e2e/box_burst.h"

namespace tessera::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

SimPod Sim(int64_t id, double arrival, double start, double end, const std::string& node,
           const std::string& partition, double slo, double achieved) {
  return {.id = id,
          .app = "onnx/mobilenet",
          .slo_qps = slo,
          .achieved_qps = achieved,
          .arrival_s = arrival,
          .start_s = start,
          .end_s = end,
          .node = node,
          .partition = partition,
          .profile = "whole",
          .milli = 250};
}

BoxPod Box(int64_t id, double arrival, double start, double end, const std::string& node,
           const std::string& partition, double slo, int64_t queries) {
  BoxPod p;
  p.workload.id = id;
  p.workload.app = "onnx/mobilenet";
  p.workload.slo_qps = slo;
  p.workload.queries = queries;
  p.workload.arrival_s = arrival;
  p.name = "p0" + std::to_string(id) + "-onnx-mobilenet";
  p.api_name = p.name;
  p.placed = true;
  p.created = true;
  p.start_s = start;
  p.end_s = end;
  p.node = node;
  p.partition = partition;
  p.profile = "whole";
  p.milli = 250;
  return p;
}

// Three pods. p1 and p2 end at 6.5 s and 6.9 s; the simulator's next cycle at 7.15 s starts p3
// on GPU-a, the box started it on GPU-b: two events within the cycle (1 s) before its start, a
// tie. Attainment by hand: sim p1 10 ≥ 8, p2 5 < 6, p3 12 ≥ 10 → 2/3; box p1 100/10 = 10 ≥ 8,
// p2 60/10 = 6 ≥ 6, p3 110/10 = 11 ≥ 10 → 3/3. |ach − SLO|/SLO: sim (0.25 + 1/6 + 0.2)/3 =
// 0.2056, box (0.25 + 0 + 0.1)/3 = 0.1167. Makespan: sim 17.15 − 0, box 17.2 − 0.
struct Fixture {
  RunSpec spec{.policy = "min", .seed = 1};
  std::vector<SimPod> sim = {Sim(1, 0, 0, 6.5, "v100", "GPU-a", 8, 10),
                             Sim(2, 0.5, 0.5, 6.9, "a30", "GPU-b", 6, 5),
                             Sim(3, 1, 7.15, 17.15, "v100", "GPU-a", 10, 12)};
  RunResult box;
  Fixture() {
    box.pods = {Box(1, 0, 0, 10, "v100", "GPU-a", 8, 100),
                Box(2, 0.5, 0.5, 10.5, "a30", "GPU-b", 6, 60),
                Box(3, 1, 7.2, 17.2, "a30", "GPU-b", 10, 110)};
    for (const BoxPod& p : box.pods) box.bindings["thesis/" + p.name] = 1;
  }
};

TEST(BoxCompareTest, FiguresTiesAndChecksByHand) {
  Fixture f;
  const json r = Compare(f.spec, f.box, f.sim);
  EXPECT_NEAR(r["sim"]["slo_attainment"].get<double>(), 2.0 / 3, 1e-9);
  EXPECT_NEAR(r["box"]["slo_attainment"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(r["sim"]["qps_slo_abs_diff_mean"].get<double>(), (0.25 + 1.0 / 6 + 0.2) / 3, 1e-9);
  EXPECT_NEAR(r["box"]["qps_slo_abs_diff_mean"].get<double>(), (0.25 + 0 + 0.1) / 3, 1e-9);
  EXPECT_NEAR(r["sim"]["makespan_s"].get<double>(), 17.15, 1e-9);
  EXPECT_NEAR(r["box"]["makespan_s"].get<double>(), 17.2, 1e-9);
  EXPECT_EQ(r["placements"]["same"], 2);
  EXPECT_EQ(r["placements"]["different"], 1);
  EXPECT_EQ(r["placements"]["ties"], 1);
  EXPECT_TRUE(r["checks"]["same_slices_but_ties"].get<bool>());
  EXPECT_TRUE(r["checks"]["bound_once"].get<bool>());
  EXPECT_TRUE(r["checks"]["every_pod_completed"].get<bool>());
  EXPECT_TRUE(r["ok"].get<bool>());
}

TEST(BoxCompareTest, ADifferenceWithOneEventIsNotATieAndADoubleBindFails) {
  Fixture f;
  f.sim[1].end_s = 5.9;  // now only p1's end (6.5) falls within the cycle before 7.15
  f.box.bindings["thesis/" + f.box.pods[1].name] = 2;
  const json r = Compare(f.spec, f.box, f.sim);
  EXPECT_EQ(r["placements"]["ties"], 0);
  EXPECT_FALSE(r["checks"]["same_slices_but_ties"].get<bool>());
  EXPECT_FALSE(r["checks"]["bound_once"].get<bool>());
  EXPECT_FALSE(r["ok"].get<bool>());
}

// Ends seen in swapped order: in the simulator p1 (GPU-a) ends at 6.0 and p2 (GPU-b) at 7.3, so
// its cycle at 7.15 starts p3 on GPU-a, with no other event within the cycle before; in the box
// p2 ended first (6.2) and p1 at 6.4, and p3 started on GPU-b at 6.3. Each side gave p3 the
// slice it saw freed first: a tie. With p2 ending at 6.5 in the box too, both sides saw p1 end
// first, and p3 on GPU-b is an unexplained difference.
TEST(BoxCompareTest, EndsSeenInSwappedOrderAreATieAndInTheSameOrderAreNot) {
  Fixture f;
  f.sim[0].end_s = 6.0;
  f.sim[1].end_s = 7.3;
  f.box.pods[0].end_s = 6.4;
  f.box.pods[1].end_s = 6.2;
  f.box.pods[2].start_s = 6.3;
  json r = Compare(f.spec, f.box, f.sim);
  EXPECT_EQ(r["placements"]["different"], 1);
  EXPECT_EQ(r["placements"]["ties"], 1);
  EXPECT_TRUE(r["checks"]["same_slices_but_ties"].get<bool>());

  f.box.pods[1].end_s = 6.5;
  f.box.pods[2].start_s = 6.6;
  r = Compare(f.spec, f.box, f.sim);
  EXPECT_EQ(r["placements"]["ties"], 0);
  EXPECT_FALSE(r["checks"]["same_slices_but_ties"].get<bool>());
}

// Once a tie has changed a placement the histories differ: a later pod on another slice is
// counted "after a tie", not as an unexplained difference.
TEST(BoxCompareTest, ADifferenceAfterATieIsCountedApart) {
  Fixture f;
  f.sim.push_back(Sim(4, 2, 20, 30, "a30", "GPU-b", 5, 6));  // no event within 1 s of 20
  f.box.pods.push_back(Box(4, 2, 17.3, 27.3, "v100", "GPU-a", 5, 60));
  f.box.bindings["thesis/" + f.box.pods[3].name] = 1;
  const json r = Compare(f.spec, f.box, f.sim);
  EXPECT_EQ(r["placements"]["ties"], 1);
  EXPECT_EQ(r["placements"]["after_tie"], 1);
  EXPECT_NEAR(r["placements"]["first_tie_s"].get<double>(), 7.15, 1e-9);
  EXPECT_TRUE(r["checks"]["same_slices_but_ties"].get<bool>());
}

// A pod neither side ever started (admission control kept it waiting in the simulator too)
// misses its SLO on both sides and needs no binding; the run still counts as complete.
TEST(BoxCompareTest, APodNeitherSideStartedCountsAsMissedNotUnfinished) {
  Fixture f;
  f.sim.push_back({.id = 4, .app = "tf/ssd-mobilenet", .slo_qps = 13, .arrival_s = 2});
  BoxPod waiting = Box(4, 2, 0, 0, "", "", 13, 50);
  waiting.start_s.reset();
  waiting.end_s.reset();
  waiting.placed = false;
  f.box.pods.push_back(waiting);
  const json r = Compare(f.spec, f.box, f.sim);
  EXPECT_EQ(r["never_started"], 1);
  EXPECT_TRUE(r["checks"]["every_pod_completed"].get<bool>());
  EXPECT_TRUE(r["checks"]["bound_once"].get<bool>());
  // Missed on both sides: sim 2 of 4, box 3 of 4; it adds |−1| to both means.
  EXPECT_NEAR(r["sim"]["slo_attainment"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(r["box"]["slo_attainment"].get<double>(), 0.75, 1e-9);
  EXPECT_NEAR(r["box"]["qps_slo_abs_diff_mean"].get<double>(), (0.25 + 0 + 0.1 + 1) / 4, 1e-9);
}

TEST(BoxCompareTest, OtherPoliciesAreHeldToAttainmentAndDiffAndFaultsOnlyToCompletion) {
  Fixture f;
  f.spec.policy = "predictive";
  json r = Compare(f.spec, f.box, f.sim);
  // 2/3 against 3/3: 33 points apart; |diff| 0.2056 against 0.1167: 0.089 apart.
  EXPECT_FALSE(r["checks"]["attainment_within_10_points"].get<bool>());
  EXPECT_FALSE(r["checks"]["abs_diff_within_0.05"].get<bool>());
  EXPECT_FALSE(r["checks"].contains("same_slices_but_ties"));
  f.spec.faults = {"kill-leader"};
  f.box.pods[2].failed = true;
  f.box.pods[2].failure = "the node cannot run it";
  r = Compare(f.spec, f.box, f.sim);
  EXPECT_EQ(r["checks"].size(), 2u);
  EXPECT_FALSE(r["checks"]["every_pod_completed"].get<bool>());
}

// The page as Chromium (Debian's, headless) parses and draws it.
TEST(BoxComparePage, ChromiumRendersEveryRunAndPod) {
  Fixture f;
  json report = {{"date", "2026-11-27 12:00 UTC"},
                 {"reading", "time=10,mig=fixed"},
                 {"runs", json::array({Compare(f.spec, f.box, f.sim)})}};
  std::string tmpl = (fs::temp_directory_path() / "tessera-box-page-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::ofstream(dir / "comparison.html") << ComparisonPage(report);
  const testing::RenderedPage rendered =
      testing::RenderPage(dir / "comparison.html", dir / "comparison.png");
  const std::string& dom = rendered.dom;
  // One summary row, three pod rows, the tie marked; the checks named.
  EXPECT_NE(dom.find("<tr class=\"tie\"><td class=\"l\">p03-onnx-mobilenet</td>"),
            std::string::npos)
      << dom.substr(0, 3000);
  EXPECT_NE(dom.find("<td class=\"l\">p01-onnx-mobilenet</td>"), std::string::npos);
  EXPECT_NE(dom.find("same_slices_but_ties"), std::string::npos);
  EXPECT_NE(dom.find("<h2>min seed 1 <small>(pods=20,slo=low)</small></h2>"), std::string::npos);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_TRUE(rendered.screenshot) << "chromium wrote no screenshot";
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// muxflow's burst scenario compared (box_burst.h): the simulator's side runs here (it evicts
// both jobs once, sim/online_offline_test.cc); a box that did the same on the GPUs swapped
// between the two identical jobs agrees, with 2 swaps; one that evicted nothing does not.
TEST(BoxBurstTest, ASwapOfIdenticalJobsAgreesAndAMissedEvictionFails) {
  const RunSpec spec = BurstSpec(1, ::testing::TempDir(), "tessera", "exporter");
  const json sim_only = CompareBurst(spec, RunResult{});
  ASSERT_EQ(sim_only["jobs"].size(), 2u);
  EXPECT_EQ(sim_only["sim"]["evictions"], 2);
  EXPECT_EQ(sim_only["sim"]["jobs_done"], 2);
  EXPECT_FALSE(sim_only["ok"].get<bool>());  // no box pods: nothing done there
  RunResult box;
  for (size_t i = 0; i < 2; ++i) {
    const json& j = sim_only["jobs"][i];
    BoxPod p;
    p.workload.id = j["id"].get<int64_t>();
    p.workload.app = "train/inception-v3";
    p.workload.klass = model::WorkloadClass::kOffline;
    p.name = fmt::format("p{:02}-train-inception-v3", p.workload.id);
    p.start_s = 1;
    p.end_s = 95;
    p.moves = 1;
    p.partition = sim_only["jobs"][1 - i]["sim"]["gpu"].get<std::string>();  // swapped
    box.bindings["thesis/" + p.name] = 1;
    box.bindings["thesis/" + p.name + "-m1"] = 1;
    box.evictions.push_back("thesis/" + p.name);
    box.pods.push_back(p);
  }
  BoxPod service;
  service.workload.id = 1;
  service.workload.klass = model::WorkloadClass::kOnline;
  box.pods.push_back(service);
  // The leader's log lines the comparison reads.
  std::filesystem::create_directories(spec.dir + "/logs");
  std::ofstream(spec.dir + "/logs/box-a.log")
      << "[info] policy muxflow: pod thesis/p03 on n0-t4-00: evicted: SysMonitor Overlimit on "
         "GPU-a: memory 0.952 ≥ 0.950\n"
      << "[info] policy muxflow: pod thesis/p04 on n0-t4-00: evicted: SysMonitor Overlimit on "
         "GPU-b: memory 0.951 ≥ 0.950\n";
  // The two jobs are the same application: the apps in sim_only were read from no box pod.
  const json r = CompareBurst(spec, box);
  EXPECT_TRUE(r["ok"].get<bool>()) << r["checks"].dump();
  EXPECT_EQ(r["swapped"], 2);
  EXPECT_EQ(r["box"]["evictions"], 2);
  // An eviction the API never saw (the pod was deleted some other way) fails two checks.
  box.evictions.pop_back();
  const json missed = CompareBurst(spec, box);
  EXPECT_FALSE(missed["checks"]["evicted_through_the_api"].get<bool>());
  EXPECT_FALSE(missed["ok"].get<bool>());
  // A service that ran out of memory on the box fails the run.
  box.evictions.push_back("thesis/p04");
  box.pods.back().oom = 1;
  EXPECT_FALSE(CompareBurst(spec, box)["checks"]["no_service_oom"].get<bool>());
  std::error_code ec;
  fs::remove_all(spec.dir, ec);
}

// The burst page as Chromium draws it: the checks, both sides and the eviction lines.
TEST(BoxBurstPage, ChromiumRendersTheChecksJobsAndEvictions) {
  const json report = {
      {"date", "2026-12-01 23:00 UTC"},
      {"runs",
       json::array(
           {{{"seed", 1},
             {"checks", {{"same_gpus", true}, {"no_service_oom", false}}},
             {"sim", {{"evictions", 2}, {"jobs_done", 2}, {"jobs", 2}, {"service_oom", 0}}},
             {"box",
              {{"evictions", 2},
               {"jobs_done", 2},
               {"jobs", 2},
               {"service_oom", 1},
               {"reasons", {"evicted: SysMonitor Overlimit on GPU-a: memory 0.952"}}}},
             {"jobs", json::array({{{"id", 3},
                                    {"sim", {{"gpu", "GPU-a"}, {"moves", 1}, {"end_s", 93.8}}},
                                    {"box",
                                     {{"pod", "p03-train-inception-v3"},
                                      {"gpu", "GPU-b"},
                                      {"moves", 1},
                                      {"end_s", 95.9}}}}})}}})}};
  std::string tmpl = (fs::temp_directory_path() / "tessera-burst-page-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::ofstream(dir / "burst.html") << BurstPage(report);
  const testing::RenderedPage rendered = testing::RenderPage(dir / "burst.html", dir / "burst.png");
  const std::string& dom = rendered.dom;
  EXPECT_NE(dom.find("<h2>seed 1</h2>"), std::string::npos) << dom.substr(0, 3000);
  EXPECT_NE(dom.find("<span class=\"bad\">no_service_oom</span>"), std::string::npos);
  EXPECT_NE(dom.find("<td class=\"l\">p03-train-inception-v3</td><td class=\"l\">GPU-a</td>"),
            std::string::npos);
  EXPECT_NE(dom.find("SysMonitor Overlimit on GPU-a"), std::string::npos);
  EXPECT_NE(dom.find("<td>93.8</td>"), std::string::npos);
  EXPECT_TRUE(rendered.screenshot) << "chromium wrote no screenshot";
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace tessera::e2e
