#include "sim/thesis_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::sim {
namespace {

namespace fs = std::filesystem;

ThesisWorkloadRecord Record(model::WorkloadId id, double slo, double achieved) {
  ThesisWorkloadRecord w;
  w.id = id;
  w.app = "onnx/resnet50";
  w.slo_qps = slo;
  w.achieved_qps = achieved;
  w.arrival_s = 10 * static_cast<double>(id);
  w.start_s = w.arrival_s + 2;
  w.end_s = w.arrival_s + 62;
  w.pending_s = 2;
  w.node = "v100";
  w.partition = "GPU-0";
  w.profile = "whole";
  w.mps_milli = 250;
  return w;
}

ThesisRun MakeRun(const std::string& policy, uint64_t seed, double violations, double energy_j,
                  std::vector<ThesisWorkloadRecord> workloads) {
  ThesisRun r;
  r.policy = policy;
  r.scenario = {20, false};
  r.seed = seed;
  r.pods = static_cast<int>(workloads.size());
  r.slo_violations = violations;
  r.energy_j = energy_j;
  r.gpu_util_mean = 0.5;
  r.workloads = std::move(workloads);
  return r;
}

// `run` with `feasible` pods whose SLO the cluster can meet, `met` of which met it.
ThesisRun WithFeasible(ThesisRun run, double feasible, double met) {
  run.slo_feasible = feasible;
  run.slo_met_feasible = met;
  return run;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ThesisReportTest, CdfStepsAtEachDistinctValue) {
  const std::vector<CdfPoint> cdf = Cdf({0.25, -0.5, 0.25, 0});
  ASSERT_EQ(cdf.size(), 3u);
  EXPECT_DOUBLE_EQ(cdf[0].x, -0.5);
  EXPECT_DOUBLE_EQ(cdf[0].y, 0.25);
  EXPECT_DOUBLE_EQ(cdf[1].x, 0);
  EXPECT_DOUBLE_EQ(cdf[1].y, 0.5);
  EXPECT_DOUBLE_EQ(cdf[2].x, 0.25);
  EXPECT_DOUBLE_EQ(cdf[2].y, 1.0);
  EXPECT_TRUE(Cdf({}).empty());
}

TEST(ThesisReportTest, CsvHasOneRowPerWorkloadWithItsValues) {
  ThesisWorkloadRecord failed = Record(2, 20, 0);
  failed.failed = true;
  failed.failure = "out of memory, pinned 0=2048M";
  failed.end_s = failed.start_s;
  failed.profile = "1g.6gb";
  failed.partition = "MIG-a30-0";
  const std::vector<ThesisRun> runs = {
      MakeRun("min", 1, 1, 1000, {Record(1, 20, 25), failed}),
      MakeRun("max", 3, 0, 2000, {Record(1, 20, 15)}),
  };
  const std::vector<std::string> lines = Lines(ThesisWorkloadsCsv(runs));
  ASSERT_EQ(lines.size(), 4u);  // header + 3 workloads
  EXPECT_EQ(lines[0],
            "policy,scenario,seed,workload,app,slo_qps,achieved_qps,relative_diff,failed,failure,"
            "arrival_s,start_s,end_s,pending_s,node,partition,profile,mps_milli,moves");
  // (25 − 20) / 20 = 0.25; the scenario name holds commas, so it is quoted.
  EXPECT_EQ(lines[1],
            "min,\"pods=20,slo=low\",1,1,onnx/resnet50,20.0000,25.0000,0.2500,0,,10.0000,"
            "12.0000,72.0000,2.0000,v100,GPU-0,whole,250,0");
  EXPECT_EQ(lines[2],
            "min,\"pods=20,slo=low\",1,2,onnx/resnet50,20.0000,0.0000,-1.0000,1,"
            "\"out of memory, pinned 0=2048M\",20.0000,22.0000,22.0000,2.0000,v100,MIG-a30-0,"
            "1g.6gb,250,0");
  // (15 − 20) / 20 = −0.25.
  EXPECT_EQ(lines[3],
            "max,\"pods=20,slo=low\",3,1,onnx/resnet50,20.0000,15.0000,-0.2500,0,,10.0000,"
            "12.0000,72.0000,2.0000,v100,GPU-0,whole,250,0");
}

TEST(ThesisReportTest, CsvLeavesUnknownCellsEmptyForAPodThatNeverRan) {
  ThesisWorkloadRecord w;
  w.id = 7;
  w.app = "tf/mobilenet";
  w.slo_qps = 10;
  w.arrival_s = 5;
  w.pending_s = 95;
  const std::vector<ThesisRun> runs = {MakeRun("min", 1, 1, 0, {w})};
  const std::vector<std::string> lines = Lines(ThesisWorkloadsCsv(runs));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1],
            "min,\"pods=20,slo=low\",1,7,tf/mobilenet,10.0000,0.0000,-1.0000,0,,5.0000,,,95.0000,"
            ",,,,0");
}

TEST(ThesisReportTest, HtmlHasFourPlotsPerScenarioNoScriptsAndEscapedNames) {
  std::vector<ThesisRun> runs = {
      MakeRun("<b>evil&co</b>", 1, 1, 1000, {Record(1, 20, 25)}),
      MakeRun("min", 1, 0, 2000, {Record(1, 20, 15)}),
  };
  ThesisRun high = MakeRun("min", 1, 0, 1500, {Record(1, 20, 20)});
  high.scenario.high_slo = true;
  runs.push_back(high);
  const std::string html = ThesisHtml("thesis", runs);
  // Two scenarios × (CDF + violations + utilisation + energy).
  EXPECT_EQ(Count(html, "<svg"), 8u);
  EXPECT_EQ(Count(html, "</svg>"), 8u);
  EXPECT_EQ(Count(html, "<script"), 0u);
  EXPECT_EQ(Count(html, "http://"), Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(html.find("<b>evil"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;evil&amp;co&lt;/b&gt;"), std::string::npos);
  // One CDF line per policy of each scenario: 2 + 1.
  EXPECT_EQ(Count(html, "<polyline"), 3u);
}

// One run of `policy` in the thesis scenario (pods, high): `met` pods met their SLO.
ThesisRun Scenario(const std::string& policy, int pods, bool high, double met, double makespan,
                   double energy, double diff) {
  ThesisRun r;
  r.policy = policy;
  r.scenario = {pods, high};
  r.pods = pods;
  r.slo_violations = pods - met;
  r.makespan_s = makespan;
  r.energy_j = energy;
  r.qps_slo_abs_diff_mean = diff;
  return r;
}

TEST(ThesisReportTest, ReproductionPoolsTheFourThesisScenariosAgainstPredictive) {
  // predictive: low 19/20 + 38/40 = 57/60, high 15/20 + 30/40 = 45/60; makespan 1000 s, energy
  // 100 J and |diff| 0.1 per scenario. min: low 20 + 40 = 60/60, high 12 + 24 = 36/60; makespan
  // 1100 s, energy 99 J, |diff| 0.3 (3x). An unprofiled run of min must not count.
  std::vector<ThesisRun> runs;
  for (bool high : {false, true}) {
    for (int pods : {20, 40}) {
      runs.push_back(
          Scenario("predictive", pods, high, high ? 0.75 * pods : 0.95 * pods, 1000, 100, 0.1));
      runs.push_back(Scenario("min", pods, high, high ? 0.6 * pods : pods, 1100, 99, 0.3));
    }
  }
  ThesisRun unprofiled = Scenario("min", 20, false, 0, 9000, 900, 0.9);
  unprofiled.scenario.unprofiled = 3;
  runs.push_back(unprofiled);
  const std::vector<ReproductionFigure> figures = ThesisReproduction(runs);
  auto find = [&](const std::string& figure, const std::string& policy) {
    auto it = std::find_if(figures.begin(), figures.end(), [&](const ReproductionFigure& f) {
      return f.figure == figure && f.policy == policy;
    });
    EXPECT_NE(it, figures.end()) << figure << " " << policy;
    return *it;
  };
  // 2 x 2 attainment + 3 ratios of min; none of round robin or max, which did not run.
  ASSERT_EQ(figures.size(), 7u);
  EXPECT_DOUBLE_EQ(find("attainment low", "predictive").ours, 57.0 / 60);
  EXPECT_TRUE(find("attainment low", "predictive").held());  // >= 0.9
  EXPECT_DOUBLE_EQ(find("attainment high", "predictive").ours, 0.75);
  EXPECT_TRUE(find("attainment high", "predictive").held());  // >= 0.75
  EXPECT_DOUBLE_EQ(find("attainment low", "min").ours, 1.0);
  EXPECT_DOUBLE_EQ(find("attainment high", "min").ours, 0.6);
  EXPECT_DOUBLE_EQ(find("attainment high", "min").thesis, 0.6);  // 36 of 60, Ch. 9.4
  EXPECT_DOUBLE_EQ(find("makespan", "min").ours, 1.1);
  EXPECT_TRUE(find("makespan", "min").held());  // 0.95-1.25
  EXPECT_DOUBLE_EQ(find("energy", "min").ours, 0.99);
  EXPECT_DOUBLE_EQ(find("|diff|", "min").ours, 3.0);
  EXPECT_TRUE(find("|diff|", "min").held());  // >= 2
  // The JSON carries them, an unbounded range as null; the text and the page say how many held.
  const nlohmann::json j = ThesisJson("thesis", 1, runs);
  ASSERT_EQ(j["reproduction"].size(), 7u);
  EXPECT_TRUE(j["reproduction"][6]["hi"].is_null());
  EXPECT_NE(ReproductionText(figures).find("7 of 7 in range"), std::string::npos);
  EXPECT_NE(ThesisHtml("thesis", runs).find("7 of 7 figures"), std::string::npos);
  // Without predictive there is nothing to compare against.
  runs.erase(std::remove_if(runs.begin(), runs.end(),
                            [](const ThesisRun& r) { return r.policy == "predictive"; }),
             runs.end());
  EXPECT_TRUE(ThesisReproduction(runs).empty());
  EXPECT_TRUE(ThesisJson("thesis", 1, runs)["reproduction"].empty());
}

TEST(ThesisReportTest, JsonGroupsSeedsUnderTheirMean) {
  const std::vector<ThesisRun> runs = {
      MakeRun("min", 1, 1, 1000, {Record(1, 20, 25)}),
      MakeRun("min", 2, 3, 3000, {Record(1, 20, 25)}),
      MakeRun("max", 1, 0, 500, {Record(1, 20, 25)}),
  };
  const nlohmann::json j = ThesisJson("thesis", 2, runs);
  EXPECT_EQ(j["experiment"], "thesis");
  EXPECT_EQ(j["seeds"], 2);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["policy"], "min");
  EXPECT_EQ(j["results"][0]["scenario"], "pods=20,slo=low");
  EXPECT_DOUBLE_EQ(j["results"][0]["slo_violations"].get<double>(), 2);  // (1 + 3) / 2
  EXPECT_DOUBLE_EQ(j["results"][0]["energy_j"].get<double>(), 2000);     // (1000 + 3000) / 2
  ASSERT_EQ(j["results"][0]["per_seed"].size(), 2u);
  EXPECT_EQ(j["results"][0]["per_seed"][1]["seed"], 2);
  EXPECT_EQ(j["results"][1]["policy"], "max");
}

TEST(ThesisReportTest, JsonAddsFeasiblePodsAndAnAggregateOverEveryRun) {
  // min: a 20-pod run with mean |diff| 0.1 (16 of 18 feasible pods met) and a 40-pod run with
  // 0.3 (30 of 30); max: one run with no feasible pod.
  ThesisRun low = WithFeasible(MakeRun("min", 1, 4, 1000, {Record(1, 20, 25)}), 18, 16);
  low.qps_slo_abs_diff_mean = 0.1;
  ThesisRun busy = WithFeasible(MakeRun("min", 1, 10, 3000, {Record(1, 20, 25)}), 30, 30);
  busy.scenario = {40, false};
  busy.qps_slo_abs_diff_mean = 0.3;
  ThesisRun none = MakeRun("max", 1, 20, 500, {Record(1, 20, 25)});
  none.qps_slo_abs_diff_mean = 0.5;
  const nlohmann::json j = ThesisJson("thesis", 1, std::vector{low, busy, none});
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["results"][0]["slo_feasible"].get<double>(), 18);
  EXPECT_DOUBLE_EQ(j["results"][0]["slo_attainment_feasible"].get<double>(), 16.0 / 18);
  EXPECT_DOUBLE_EQ(j["results"][0]["per_seed"][0]["slo_attainment_feasible"].get<double>(),
                   16.0 / 18);
  EXPECT_TRUE(j["results"][2]["slo_attainment_feasible"].is_null());
  // Today's fields are still there.
  EXPECT_DOUBLE_EQ(j["results"][1]["qps_slo_abs_diff_mean"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(j["results"][1]["slo_violations"].get<double>(), 10);
  const nlohmann::json& agg = j["aggregate"];
  ASSERT_EQ(agg.size(), 2u);
  EXPECT_EQ(agg[0]["policy"], "min");
  EXPECT_EQ(agg[0]["runs"], 2);
  EXPECT_DOUBLE_EQ(agg[0]["qps_slo_abs_diff_mean"].get<double>(), 0.2);  // (0.1 + 0.3) / 2
  EXPECT_DOUBLE_EQ(agg[0]["energy_j"].get<double>(), 4000);              // summed, not averaged
  EXPECT_DOUBLE_EQ(agg[0]["slo_attainment_feasible"].get<double>(), 46.0 / 48);
  EXPECT_EQ(agg[1]["policy"], "max");
  EXPECT_DOUBLE_EQ(agg[1]["qps_slo_abs_diff_mean"].get<double>(), 0.5);
  EXPECT_TRUE(agg[1]["slo_attainment_feasible"].is_null());
}

TEST(ThesisReportTest, HtmlShowsTheFeasibleCeiling) {
  ThesisRun a = WithFeasible(MakeRun("min", 1, 3, 1000, {Record(1, 20, 25)}), 17, 17);
  a.pods = 20;
  ThesisRun b = WithFeasible(MakeRun("max", 1, 5, 1000, {Record(1, 20, 25)}), 17, 15);
  b.pods = 20;
  const std::string html = ThesisHtml("thesis", std::vector{a, b});
  EXPECT_NE(html.find("SLO-feasible pods"), std::string::npos);
  EXPECT_NE(html.find("<td>17.0</td><td>88.2</td>"), std::string::npos);  // 15 / 17
  // One floor mark per bar of the violations chart, at 20 − 17 = 3 pods.
  EXPECT_EQ(Count(html, "class=\"floor\""), 2u);
  EXPECT_NE(html.find("can meet the SLO of 3.0 pods per run"), std::string::npos);
}

class ThesisReportFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("thesis_report_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  const std::vector<ThesisRun> runs_ = {MakeRun("min", 1, 1, 1000, {Record(1, 20, 25)})};
};

TEST_F(ThesisReportFilesTest, WritesTheThreeFiles) {
  const fs::path dir = root_ / "out" / "nested";
  auto written = WriteThesisReport(dir.string(), "thesis", 1, runs_);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(*written, (std::vector<std::string>{(dir / "report.json").string(),
                                                (dir / "workloads.csv").string(),
                                                (dir / "report.html").string()}));
  std::ifstream json(dir / "report.json");
  EXPECT_EQ(nlohmann::json::parse(json), ThesisJson("thesis", 1, runs_));
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.is_regular_file();
  EXPECT_EQ(entries, 3u);  // no temporary files left
}

TEST_F(ThesisReportFilesTest, AnUncreatableDirectoryIsOneErrorNamingIt) {
  // A path under a regular file cannot be created, even by root.
  std::ofstream(root_ / "plain-file") << "x";
  const fs::path dir = root_ / "plain-file" / "report";
  auto written = WriteThesisReport(dir.string(), "thesis", 1, runs_);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find(dir.string()), std::string::npos)
      << written.error().message;
}

TEST_F(ThesisReportFilesTest, ATargetThatCannotBeReplacedWritesNothing) {
  const fs::path dir = root_ / "out";
  fs::create_directories(dir / "workloads.csv");  // a directory where a file must go
  auto written = WriteThesisReport(dir.string(), "thesis", 1, runs_);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message.find((dir / "workloads.csv").string()), std::string::npos)
      << written.error().message;
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "workloads.csv");
  }
  EXPECT_EQ(entries, 1u);  // neither report.json nor report.html nor a temporary file
}

}  // namespace
}  // namespace tessera::sim
