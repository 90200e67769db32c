// The metric table: one declaration gives the mean over seeds, the JSON, the CSV, the CLI table,
// the HTML table and the charts. Numbers worked out by hand.
#include "report/table.h"

#include <gtest/gtest.h>

namespace tessera::report {
namespace {

struct Row {
  std::string policy;
  int pct = 0;
  double util = 0;    // 0..1
  double energy = 0;  // J
  double met = 0, feasible = 0;
};

const MetricTable<Row>& Table() {
  static const MetricTable<Row> t{
      .labels = {{"policy", "policy", 8, [](const Row& r) { return r.policy; }},
                 {"pct", "over%", 0, [](const Row& r) { return int64_t{r.pct}; }}},
      .metrics = {
          {"util", &Row::util, "util %", 100, 1, 7, "", "Utilisation", "%"},
          {"energy", &Row::energy, "energy", 1, 2, 8, "k", "Energy", "kJ", 1000},
          {"met", &Row::met, ""},
          {"feasible", &Row::feasible, ""},
          {.header = "met%f", .scale = 100, .decimals = 0, .width = 6, .derived = [](const Row& r) {
             return r.met / r.feasible;
           }}}};
  return t;
}

TEST(MetricTableTest, MeanAveragesEveryFieldAndKeepsTheFirstRunsLabels) {
  const std::vector<Row> runs = {{"fgd", 50, 0.5, 3000, 1, 4}, {"other", 0, 0.7, 5000, 3, 4}};
  const Row m = Table().Mean(runs);
  EXPECT_EQ(m.policy, "fgd");
  EXPECT_EQ(m.pct, 50);
  EXPECT_DOUBLE_EQ(m.util, 0.6);
  EXPECT_DOUBLE_EQ(m.energy, 4000);
  EXPECT_DOUBLE_EQ(m.met, 2);
  // The derived ratio is the ratio of the means (2 / 4), not the mean of the ratios (0.5).
  EXPECT_DOUBLE_EQ(Table().metrics[4].Raw(m), 0.5);
  // One run is itself, bit for bit.
  const Row one = Table().Mean(std::span<const Row>(runs.data(), 1));
  EXPECT_EQ(one.util, 0.5);
}

TEST(MetricTableTest, JsonCarriesRawValuesUnderTheirKeysAndIntegerLabels) {
  const std::vector<Row> rows = {{"fgd", 50, 0.25, 1500, 1, 4}};
  const nlohmann::json j = Table().Json(rows);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["policy"], "fgd");
  EXPECT_TRUE(j[0]["pct"].is_number_integer());
  EXPECT_EQ(j[0]["pct"], 50);
  EXPECT_DOUBLE_EQ(j[0]["util"].get<double>(), 0.25);    // raw, not ×100
  EXPECT_DOUBLE_EQ(j[0]["energy"].get<double>(), 1500);  // raw, not ÷1000
  EXPECT_FALSE(j[0].contains(""));                       // the derived column has no key
  EXPECT_EQ(j[0].size(), 6u);
}

TEST(MetricTableTest, TextAlignsLabelsLeftAndShowsScaledMetricsRight) {
  const std::vector<Row> rows = {{"fgd", 50, 0.25, 1500, 1, 4}, {"a-longer-name", 0, 1, 0, 0, 1}};
  // policy grows to its longest value (13); over% is as wide as its header; util % is 7 wide
  // (25.0); energy 8 with its suffix (1.50 then "k"); met%f 6 (25).
  EXPECT_EQ(Table().Text(rows),
            "policy        over%  util %   energy  met%f\n"
            "fgd           50       25.0    1.50k     25\n"
            "a-longer-name 0       100.0    0.00k      0\n");
}

TEST(MetricTableTest, CsvHasEveryKeyedColumnQuotedWhereNeeded) {
  const std::vector<Row> rows = {{"a,b", 0, 0.5, 10, 1, 2}};
  EXPECT_EQ(Table().Csv(rows),
            "policy,pct,util,energy,met,feasible\n"
            "\"a,b\",0,0.5000,10.0000,1.0000,2.0000\n");
}

TEST(MetricTableTest, HtmlEscapesLabelsAndShowsOnlyHeadedMetrics) {
  const std::vector<Row> rows = {{"<&>", 0, 0.5, 2500, 1, 2}};
  const std::string html = Table().Html(rows);
  EXPECT_NE(html.find("<td>&lt;&amp;&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>50.0</td><td>2.50</td><td>50</td>"), std::string::npos);
  EXPECT_EQ(html.find("<th>met</th>"), std::string::npos);
}

TEST(MetricTableTest, ChartsOnePerChartedMetric) {
  const std::vector<Row> rows = {
      {"a", 0, 0.5, 1000, 1, 2}, {"a", 50, 0.6, 2000, 1, 2}, {"b", 0, 0.2, 500, 1, 2}};
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  const std::string bars = Table().Bars(rows, [](const Row& r) { return r.policy; });
  EXPECT_EQ(count(bars, "<svg"), 2u);  // util and energy
  const std::string lines = Table().Lines(
      rows, "over %", [](const Row& r) { return r.pct; }, [](const Row& r) { return r.policy; },
      {.markers = true});
  EXPECT_EQ(count(lines, "<svg"), 2u);
  EXPECT_EQ(count(lines, "<polyline"), 4u);  // series a and b on each chart
  EXPECT_EQ(count(lines, "<circle"), 6u);    // a dot per point
}

TEST(LinesSvgTest, AxisCoversTheLargestPointAndLegendNamesEverySeries) {
  const std::string svg = LinesSvg("t", "x", "y", {{"one", {{0, 1}, {7, 2}}}, {"<two>", {{3, 4}}}});
  EXPECT_NE(svg.find(">one<"), std::string::npos);
  EXPECT_NE(svg.find("&lt;two&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">8<"), std::string::npos);  // x ticks 0..8 (NiceTicks past 7)
}

}  // namespace
}  // namespace tessera::report
