#include "sim/thesis_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "report/html.h"

namespace tessera::sim {
using namespace ::tessera::report;  // the page's drawing helpers (report/html.h)
namespace {

// The runs of one (scenario, policy).
struct Group {
  std::string scenario;
  std::string policy;
  std::vector<ThesisRun> runs;
};

std::vector<Group> GroupRuns(std::span<const ThesisRun> runs) {
  std::vector<Group> groups;
  for (const ThesisRun& r : runs) {
    const std::string scenario = r.scenario.name();
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.scenario == scenario && g.policy == r.policy;
    });
    if (it == groups.end()) {
      groups.push_back({scenario, r.policy, {}});
      it = groups.end() - 1;
    }
    it->runs.push_back(r);
  }
  return groups;
}

// Distinct values in order of first appearance.
std::vector<std::string> Distinct(const std::vector<Group>& groups, std::string Group::*field) {
  std::vector<std::string> out;
  for (const Group& g : groups) {
    if (std::find(out.begin(), out.end(), g.*field) == out.end()) out.push_back(g.*field);
  }
  return out;
}

// A fraction, or null where it does not exist.
nlohmann::json Fraction(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

nlohmann::json RunJson(const ThesisRun& m) {
  return {{"policy", m.policy},
          {"scenario", m.scenario.name()},
          {"pods", m.pods},
          {"slo_attainment", m.slo_attainment},
          {"slo_violations", m.slo_violations},
          {"failures", m.failures},
          {"qps_slo_abs_diff_mean", m.qps_slo_abs_diff_mean},
          {"makespan_s", m.makespan_s},
          {"pending_s_mean", m.pending_s_mean},
          {"execution_s_mean", m.execution_s_mean},
          {"moves", m.moves},
          {"never_placed", m.never_placed},
          {"gpu_util_mean", m.gpu_util_mean},
          {"power_w_mean", m.power_w_mean},
          {"energy_j", m.energy_j},
          {"slo_feasible", m.slo_feasible},
          {"slo_attainment_feasible", Fraction(m.slo_attainment_feasible())}};
}

std::string Opt(const std::optional<double>& v) { return v ? Num(*v) : ""; }
std::string Percent(double fraction) {
  return std::isnan(fraction) ? "–" : fmt::format("{:.1f}", 100 * fraction);
}

// Per policy of one scenario: its name, colour and data.
struct Series {
  std::string policy;
  std::string color;
  std::string dash;  // so that policies whose curves coincide stay visible
  const Group* group;
  ThesisRun mean;
};

std::string CdfSvg(const std::string& scenario, const std::vector<Series>& series) {
  std::vector<std::vector<CdfPoint>> cdfs;
  double lo = -1, hi = 0.5;
  for (const Series& s : series) {
    std::vector<double> sample;
    for (const ThesisRun& r : s.group->runs) {
      for (const ThesisWorkloadRecord& w : r.workloads) sample.push_back(w.relative_diff());
    }
    cdfs.push_back(Cdf(std::move(sample)));
    if (!cdfs.back().empty()) {
      lo = std::min(lo, cdfs.back().front().x);
      hi = std::max(hi, cdfs.back().back().x);
    }
  }
  const std::vector<double> x_ticks = NiceTicks(lo, hi, 8);
  const std::vector<double> y_ticks = NiceTicks(0, 1, 5);
  PlotFrame f{.x_min = x_ticks.front(),
              .x_max = x_ticks.back(),
              .y_min = 0,
              .y_max = 1,
              .left = 64,
              .top = 34,
              .width = 330,
              .height = 230};
  const double step = x_ticks.size() > 1 ? x_ticks[1] - x_ticks[0] : 1;
  std::string svg = SvgOpen(540, 320, "CDF of (achieved − SLO) / SLO — " + scenario);
  svg += SvgAxes(f, x_ticks, y_ticks, "(achieved QPS − SLO) / SLO", "fraction of pods",
                 step < 0.1 ? 2
                 : step < 1 ? 1
                            : 0,
                 1);
  svg += fmt::format(
      "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\" "
      "stroke-dasharray=\"4 3\"/>\n",
      f.X(0), f.top, f.top + f.height);
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < series.size(); ++i) {
    legend.push_back({series[i].policy, series[i].color, series[i].dash});
    if (cdfs[i].empty()) continue;
    // A step function: flat until each value, then up to its fraction.
    std::string points = fmt::format("{:.1f},{:.1f} ", f.X(f.x_min), f.Y(0));
    double y = 0;
    for (const CdfPoint& p : cdfs[i]) {
      points += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", f.X(p.x), f.Y(y), f.X(p.x), f.Y(p.y));
      y = p.y;
    }
    points += fmt::format("{:.1f},{:.1f}", f.X(f.x_max), f.Y(y));
    svg += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\" "
        "points=\"{}\"/>\n",
        Escape(series[i].color), Escape(series[i].dash), points);
  }
  svg += SvgLegend(f.left + f.width + 20, f.top + 10, legend);
  return svg + "</svg>\n";
}

// `floor`, when given, is drawn as a dashed mark across each bar (the SLO violations no
// policy can avoid: pods whose SLO no configuration meets).
std::string BarSvg(const std::string& title, const std::string& y_label,
                   const std::vector<Series>& series,
                   const std::function<double(const ThesisRun&)>& value, int decimals,
                   const std::function<double(const ThesisRun&)>& floor = {}) {
  double hi = 0;
  for (const Series& s : series) {
    hi = std::max(hi, value(s.mean));
    if (floor) hi = std::max(hi, floor(s.mean));
  }
  // Headroom above the tallest bar for its value label.
  const std::vector<double> y_ticks = NiceTicks(0, hi > 0 ? 1.08 * hi : 1, 5);
  PlotFrame f{.x_min = 0,
              .x_max = static_cast<double>(std::max<size_t>(1, series.size())),
              .y_min = 0,
              .y_max = y_ticks.back(),
              .left = 64,
              .top = 34,
              .width = 145,
              .height = 200};
  const double tick_step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1;
  std::string svg = SvgOpen(225, 320, title);
  svg += SvgAxes(f, {}, y_ticks, "", y_label, 0, tick_step < 1 ? (tick_step < 0.1 ? 2 : 1) : 0);
  const double slot = f.width / f.x_max, bar = slot * 0.7;
  for (size_t i = 0; i < series.size(); ++i) {
    const double v = value(series[i].mean);
    const double x = f.left + slot * static_cast<double>(i) + (slot - bar) / 2;
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
        "<title>{}: {:.{}f}</title></rect>\n",
        x, f.Y(v), bar, f.Y(0) - f.Y(v), Escape(series[i].color), Escape(series[i].policy), v,
        decimals);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\">{:.{}f}</text>\n",
        x + bar / 2, f.Y(v) - 3, v, decimals);
    if (floor) {
      const double fl = floor(series[i].mean);
      svg += fmt::format(
          "<line class=\"floor\" x1=\"{0:.1f}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" "
          "stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"3 2\"><title>no configuration "
          "can meet the SLO of {3:.{4}f} pods per run</title></line>\n",
          x - 2, x + bar + 2, f.Y(fl), fl, decimals);
    }
    const double lx = x + bar / 2, ly = f.top + f.height + 12;
    svg += fmt::format(
        "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"end\" "
        "transform=\"rotate(-40 {0:.1f} {1:.1f})\">{2}</text>\n",
        lx, ly, Escape(series[i].policy));
  }
  return svg + "</svg>\n";
}

std::string ReproductionRange(const ReproductionFigure& f) {
  return std::isinf(f.hi) ? fmt::format("≥ {:g}", f.lo) : fmt::format("{:g}–{:g}", f.lo, f.hi);
}

// The thesis's table beside ours (ThesisReproduction); empty without one.
std::string ReproductionHtml(std::span<const ReproductionFigure> figures) {
  if (figures.empty()) return "";
  int held = 0;
  for (const ReproductionFigure& f : figures) held += f.held();
  std::string html = fmt::format(
      "<h2>The thesis's Ch. 9 table beside ours</h2>\n<p>The four thesis scenarios pooled: "
      "attainment per SLO level; makespan, energy and mean |achieved − SLO| / SLO as ratios to "
      "predictive's. {} of {} figures in the reproduction's range "
      "(docs/simulator.md, \"The thesis table, reproduced\").</p>\n<table><tr><th>figure</th>"
      "<th>policy</th><th>thesis</th><th>ours</th><th>range</th><th>in range</th></tr>\n",
      held, figures.size());
  for (const ReproductionFigure& f : figures) {
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td><td>{}</td></tr>\n",
        Escape(f.figure), Escape(f.policy), f.thesis, f.ours, Escape(ReproductionRange(f)),
        f.held() ? "yes" : "<b>no</b>");
  }
  return html + "</table>\n";
}

std::string Table(const std::vector<Group>& groups, const std::vector<std::string>& policies) {
  std::string html =
      "<table>\n<tr><th>policy</th><th>scenario</th><th>pods</th><th>SLO attainment %</th>"
      "<th>SLO violations</th><th>failures</th><th>mean |q − SLO| / SLO</th><th>makespan s</th>"
      "<th>pending s</th><th>execution s</th><th>GPU util %</th><th>power W</th>"
      "<th>energy kJ</th><th>SLO-feasible pods</th><th>attainment of feasible %</th></tr>\n";
  for (const Group& g : groups) {
    const ThesisRun m = MeanOf(g.runs);
    const size_t color = std::find(policies.begin(), policies.end(), g.policy) - policies.begin();
    html += fmt::format(
        "<tr><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td>"
        "<td>{}</td><td>{:.1f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.3f}</td><td>{:.0f}</td>"
        "<td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td>"
        "<td>{:.1f}</td><td>{}</td></tr>\n",
        SeriesColor(color), Escape(g.policy), Escape(g.scenario), m.pods, 100 * m.slo_attainment,
        m.slo_violations, m.failures, m.qps_slo_abs_diff_mean, m.makespan_s, m.pending_s_mean,
        m.execution_s_mean, 100 * m.gpu_util_mean, m.power_w_mean, m.energy_j / 1000,
        m.slo_feasible, Percent(m.slo_attainment_feasible()));
  }
  return html + "</table>\n";
}

std::string AggregateTable(std::span<const ThesisRun> runs,
                           const std::vector<std::string>& policies) {
  std::string html =
      "<table>\n<tr><th>policy</th><th>runs</th><th>mean |q − SLO| / SLO</th>"
      "<th>energy kJ (sum)</th><th>SLO-feasible pods</th><th>attainment of feasible %</th>"
      "</tr>\n";
  for (const ThesisAggregate& a : AggregateByPolicy(runs)) {
    const size_t color = std::find(policies.begin(), policies.end(), a.policy) - policies.begin();
    html += fmt::format(
        "<tr><td><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td>"
        "<td>{:.3f}</td><td>{:.1f}</td><td>{:.0f}</td><td>{}</td></tr>\n",
        SeriesColor(color), Escape(a.policy), a.runs, a.qps_slo_abs_diff_mean, a.energy_j / 1000,
        a.slo_feasible, Percent(a.slo_attainment_feasible()));
  }
  return html + "</table>\n";
}

}  // namespace

std::vector<ThesisRun> ThesisMeans(std::span<const ThesisRun> runs) {
  std::vector<ThesisRun> means;
  for (const Group& g : GroupRuns(runs)) means.push_back(MeanOf(g.runs));
  return means;
}

double ThesisAggregate::slo_attainment_feasible() const {
  return slo_feasible > 0 ? slo_met_feasible / slo_feasible : std::nan("");
}

std::vector<ThesisAggregate> AggregateByPolicy(std::span<const ThesisRun> runs) {
  std::vector<ThesisAggregate> out;
  for (const ThesisRun& r : runs) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ThesisAggregate& a) { return a.policy == r.policy; });
    if (it == out.end()) {
      out.push_back({.policy = r.policy});
      it = out.end() - 1;
    }
    ++it->runs;
    it->qps_slo_abs_diff_mean += r.qps_slo_abs_diff_mean;  // divided below
    it->energy_j += r.energy_j;
    it->slo_feasible += r.slo_feasible;
    it->slo_met_feasible += r.slo_met_feasible;
  }
  for (ThesisAggregate& a : out) a.qps_slo_abs_diff_mean /= static_cast<double>(a.runs);
  return out;
}

std::vector<ReproductionFigure> ThesisReproduction(std::span<const ThesisRun> runs) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  struct Pooled {
    double met[2] = {}, pods[2] = {};  // [low, high]
    double makespan = 0, energy = 0, diff = 0;
    int runs = 0, scenarios_seen = 0;
  };
  std::map<std::string, Pooled> by_policy;
  std::map<std::string, std::set<std::string>> scenarios;
  for (const ThesisRun& r : runs) {
    const ThesisScenario& s = r.scenario;
    if (s.nodes != 0 || s.unprofiled != 0 || (s.pods != 20 && s.pods != 40)) continue;
    Pooled& p = by_policy[r.policy];
    p.met[s.high_slo] += r.pods - r.slo_violations;
    p.pods[s.high_slo] += r.pods;
    p.makespan += r.makespan_s;
    p.energy += r.energy_j;
    p.diff += r.qps_slo_abs_diff_mean;
    ++p.runs;
    scenarios[r.policy].insert(s.name());
  }
  auto complete = [&](const std::string& policy) {
    return by_policy.contains(policy) && scenarios[policy].size() == 4;
  };
  std::vector<ReproductionFigure> out;
  if (!complete("predictive")) return out;
  const Pooled& pred = by_policy["predictive"];
  // Ch. 9.4 (l. 1459, 1464, 1466), 9.3 (l. 1416, 1422, 1445); the ranges of the reproduction.
  struct Attain {
    const char* policy;
    double thesis_low, lo_low, hi_low, thesis_high, lo_high, hi_high;
  };
  for (const Attain& a : {Attain{"predictive", 0.9615, 0.90, 1, 53.0 / 60, 0.75, 1},
                          Attain{"min", 1.0, 0.90, 1, 36.0 / 60, 0.40, 0.80},
                          Attain{"round-robin", 0.6205, 0.45, 0.80, 0.10, 0, 0.25},
                          Attain{"max", 1.0, 0.95, 1, 1.0, 0.95, 1}}) {
    if (!complete(a.policy)) continue;
    const Pooled& p = by_policy[a.policy];
    out.push_back(
        {"attainment low", a.policy, a.thesis_low, p.met[0] / p.pods[0], a.lo_low, a.hi_low});
    out.push_back(
        {"attainment high", a.policy, a.thesis_high, p.met[1] / p.pods[1], a.lo_high, a.hi_high});
  }
  struct Ratio {
    const char* figure;
    const char* policy;
    double thesis, lo, hi;
  };
  for (const Ratio& r :
       {Ratio{"makespan", "max", 1.5, 1.3, 1.7}, Ratio{"makespan", "min", 1.1, 0.95, 1.25},
        Ratio{"makespan", "round-robin", 1.04, 0.9, 1.2}, Ratio{"energy", "max", 1.4, 1.2, 1.6},
        Ratio{"energy", "min", 0.99, 0.9, 1.1}, Ratio{"energy", "round-robin", 0.91, 0.8, 1.05},
        Ratio{"|diff|", "min", 2.92, 2, kInf}, Ratio{"|diff|", "round-robin", 3.03, 2, kInf},
        Ratio{"|diff|", "max", 3.62, 2, kInf}}) {
    if (!complete(r.policy)) continue;
    const Pooled& p = by_policy[r.policy];
    const std::string f = r.figure;
    const double ours = f == "makespan" ? p.makespan / pred.makespan
                        : f == "energy" ? p.energy / pred.energy
                                        : (p.diff / p.runs) / (pred.diff / pred.runs);
    out.push_back({f, r.policy, r.thesis, ours, r.lo, r.hi});
  }
  return out;
}

nlohmann::json ThesisJson(const std::string& experiment, size_t seeds,
                          std::span<const ThesisRun> runs) {
  nlohmann::json results = nlohmann::json::array();
  for (const Group& g : GroupRuns(runs)) {
    nlohmann::json mean = RunJson(MeanOf(g.runs));
    nlohmann::json per_seed = nlohmann::json::array();
    for (const ThesisRun& r : g.runs) {
      nlohmann::json one = RunJson(r);
      one["seed"] = r.seed;
      per_seed.push_back(std::move(one));
    }
    mean["per_seed"] = std::move(per_seed);
    results.push_back(std::move(mean));
  }
  nlohmann::json aggregate = nlohmann::json::array();
  for (const ThesisAggregate& a : AggregateByPolicy(runs)) {
    aggregate.push_back({{"policy", a.policy},
                         {"runs", a.runs},
                         {"qps_slo_abs_diff_mean", a.qps_slo_abs_diff_mean},
                         {"energy_j", a.energy_j},
                         {"slo_feasible", a.slo_feasible},
                         {"slo_attainment_feasible", Fraction(a.slo_attainment_feasible())}});
  }
  nlohmann::json reproduction = nlohmann::json::array();
  for (const ReproductionFigure& f : ThesisReproduction(runs)) {
    reproduction.push_back(
        {{"figure", f.figure},
         {"policy", f.policy},
         {"thesis", f.thesis},
         {"ours", f.ours},
         {"lo", f.lo},
         {"hi", std::isinf(f.hi) ? nlohmann::json(nullptr) : nlohmann::json(f.hi)},
         {"held", f.held()}});
  }
  return {{"experiment", experiment},
          {"seeds", seeds},
          {"results", std::move(results)},
          {"aggregate", std::move(aggregate)},
          {"reproduction", std::move(reproduction)}};
}

std::string ThesisWorkloadsCsv(std::span<const ThesisRun> runs) {
  std::string csv = std::string(kThesisCsvHeader) + "\n";
  for (const ThesisRun& r : runs) {
    const std::string prefix =
        fmt::format("{},{},{}", CsvField(r.policy), CsvField(r.scenario.name()), r.seed);
    for (const ThesisWorkloadRecord& w : r.workloads) {
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", prefix, w.id,
                         CsvField(w.app), Num(w.slo_qps), Num(w.achieved_qps),
                         Num(w.relative_diff()), w.failed ? 1 : 0, CsvField(w.failure),
                         Num(w.arrival_s), Opt(w.start_s), Opt(w.end_s), Num(w.pending_s),
                         CsvField(w.node), CsvField(w.partition), CsvField(w.profile),
                         w.partition.empty() ? "" : std::to_string(w.mps_milli), w.moves);
    }
  }
  return csv;
}

std::vector<CdfPoint> Cdf(std::vector<double> sample) {
  std::sort(sample.begin(), sample.end());
  std::vector<CdfPoint> out;
  const double n = static_cast<double>(sample.size());
  for (size_t i = 0; i < sample.size(); ++i) {
    if (i + 1 < sample.size() && sample[i + 1] == sample[i]) continue;  // last of equal values
    out.push_back({sample[i], static_cast<double>(i + 1) / n});
  }
  return out;
}

std::string ReproductionText(std::span<const ReproductionFigure> figures) {
  if (figures.empty()) return "";
  int held = 0;
  for (const ReproductionFigure& f : figures) held += f.held();
  std::string out = fmt::format(
      "\nthe thesis's Ch. 9 table beside ours (four thesis scenarios pooled; makespan, energy "
      "and |diff| / predictive's): {} of {} in range\n{:<16} {:<12} {:>7} {:>7}  {}\n",
      held, figures.size(), "figure", "policy", "thesis", "ours", "range");
  for (const ReproductionFigure& f : figures) {
    out += fmt::format("{:<16} {:<12} {:>7.3f} {:>7.3f}  {}{}\n", f.figure, f.policy, f.thesis,
                       f.ours, ReproductionRange(f), f.held() ? "" : "  (out of range)");
  }
  return out;
}

std::string ThesisHtml(const std::string& experiment, std::span<const ThesisRun> runs) {
  const std::vector<Group> groups = GroupRuns(runs);
  const std::vector<std::string> policies = Distinct(groups, &Group::policy);
  const std::vector<std::string> scenarios = Distinct(groups, &Group::scenario);
  size_t seeds = 0;
  for (const Group& g : groups) seeds = std::max(seeds, g.runs.size());

  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tessera {0}</title>\n"
      "<style>body{{font-family:sans-serif;margin:12px;color:#222}} "
      "h1{{font-size:20px}} h2{{font-size:16px;margin:18px 0 4px}} "
      ".row{{display:flex;flex-wrap:wrap;gap:4px}} "
      "table{{border-collapse:collapse;font-size:12px}} "
      "td,th{{border:1px solid #bbb;padding:2px 6px;text-align:right}} "
      "td:nth-child(-n+2),th:nth-child(-n+2){{text-align:left}} "
      ".sw{{display:inline-block;width:10px;height:10px;margin-right:5px}}</style>\n"
      "</head><body>\n<h1>tessera simulate --experiment {0}</h1>\n"
      "<p>{1} policies × {2} scenarios × {3} seed(s). Metrics are means over seeds; a "
      "failed pod or one that never ran counts as an SLO violation at (achieved − SLO) / SLO = "
      "−1. Per-workload rows are in <code>workloads.csv</code>, the numbers in "
      "<code>report.json</code>.</p>\n",
      Escape(experiment), policies.size(), scenarios.size(), seeds);
  html += ReproductionHtml(ThesisReproduction(runs));
  html += Table(groups, policies);
  html +=
      "<p>SLO-feasible pods: those whose SLO some configuration of the cluster meets, the pod "
      "alone on it, at its own speed — the ceiling of any policy. Over every run of the experiment "
      "(all scenarios and seeds, as thesis Ch. 9.3 compares schedulers):</p>\n";
  html += AggregateTable(runs, policies);
  for (const std::string& scenario : scenarios) {
    std::vector<Series> series;
    for (const Group& g : groups) {
      if (g.scenario != scenario) continue;
      const size_t color = std::find(policies.begin(), policies.end(), g.policy) - policies.begin();
      series.push_back({g.policy, SeriesColor(color), SeriesDash(color), &g, MeanOf(g.runs)});
    }
    html += fmt::format("<h2>{}</h2>\n<div class=\"row\">\n", Escape(scenario));
    html += CdfSvg(scenario, series);
    html += BarSvg(
        "SLO violations", "pods per run", series,
        [](const ThesisRun& m) { return m.slo_violations; }, 1,
        [](const ThesisRun& m) { return m.pods - m.slo_feasible; });
    html += BarSvg(
        "GPU utilisation", "mean GPU util %", series,
        [](const ThesisRun& m) { return 100 * m.gpu_util_mean; }, 1);
    html += BarSvg(
        "Energy", "energy per run kJ", series, [](const ThesisRun& m) { return m.energy_j / 1000; },
        0);
    html += "</div>\n";
  }
  return html + "</body></html>\n";
}

Expected<std::vector<std::string>> WriteThesisReport(const std::string& dir,
                                                     const std::string& experiment, size_t seeds,
                                                     std::span<const ThesisRun> runs) {
  return WriteFiles(dir, {{"report.json", ThesisJson(experiment, seeds, runs).dump(2) + "\n"},
                          {"workloads.csv", ThesisWorkloadsCsv(runs)},
                          {"report.html", ThesisHtml(experiment, runs)}});
}

}  // namespace tessera::sim
